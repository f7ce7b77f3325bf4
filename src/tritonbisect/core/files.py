"""Files that are whole or absent: atomic writes (temp file, fsync, rename, fsync of the
folder) and JSON files read with one clear line when they are missing or corrupt."""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
from pathlib import Path
from typing import Any

from tritonbisect.core.errors import InputError
from tritonbisect.core.oserrors import at_path


def fsync_dir(directory: Path) -> None:
    """Make a rename or a new file in `directory` durable."""
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def atomic_write_text(path: Path, text: str) -> None:
    """Write `text` to `path` so that a reader sees either the old or the new file, whole."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with at_path(path), os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    fsync_dir(path.parent)


def atomic_write_json(path: Path, data: Any) -> None:
    atomic_write_text(path, json.dumps(data, indent=2, sort_keys=False) + "\n")


def read_json_file(path: Path, what: str = "session file") -> dict[str, Any]:
    """Read a JSON object; InputError (one line) when unreadable or corrupt."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise InputError(f"{what} {path} does not exist") from None
    except OSError as exc:
        raise InputError(f"cannot read {what} {path}: {exc.strerror or exc}") from None
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise InputError(f"{what} {path} is corrupt: {exc}") from None
    if not isinstance(data, dict):
        raise InputError(f"{what} {path} is corrupt: expected a JSON object")
    return data
