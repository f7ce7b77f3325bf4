"""Files that are whole or absent: atomic writes (temp file, fsync, rename, fsync of the
folder) and JSON files read with one clear line when they are missing or corrupt; and files
opened without following a link that a build or a test could have planted (`open_nofollow`,
`read_nofollow`)."""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import os
import stat
import tempfile
from pathlib import Path
from typing import Any, BinaryIO

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


class PlantedFile(OSError):
    """A log or result path holds something the tool did not make: a link, a folder, a
    file with other names (a hard link), a pipe."""


def open_nofollow(path: Path, *, append: bool = False) -> BinaryIO:
    """`path` opened for writing (truncated unless `append`), refusing a link at its name or
    at its folder's name, and anything but a plain file of one name: a link planted there
    would make the tool write into another file (a venv's `.pth`, the user's own), a pipe
    would block it. Raises PlantedFile with the path and what is there."""
    path = Path(path)
    try:
        folder = os.open(path.parent, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError as exc:
        if os.path.islink(path.parent):
            raise PlantedFile(exc.errno, f"{path.parent} is a link: refusing to write {path.name} through it") from None
        raise
    try:
        flags = os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
        flags |= os.O_APPEND if append else 0
        try:
            fd = os.open(path.name, flags, 0o644, dir_fd=folder)
        except OSError as exc:
            if os.path.islink(path):
                raise PlantedFile(exc.errno, f"{path} is a link: refusing to write through it") from None
            if exc.errno == errno.ENXIO:  # a pipe nobody reads
                raise PlantedFile(exc.errno, f"{path} is not a plain file: refusing to write it") from None
            raise
    finally:
        os.close(folder)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_nlink != 1:
            what = "not a plain file" if not stat.S_ISREG(st.st_mode) else "a file with another name (a hard link)"
            raise PlantedFile(0, f"{path} is {what}: refusing to write it")
        fcntl.fcntl(fd, fcntl.F_SETFL, fcntl.fcntl(fd, fcntl.F_GETFL) & ~os.O_NONBLOCK)
        if not append:
            os.ftruncate(fd, 0)
    except BaseException:
        os.close(fd)
        raise
    return os.fdopen(fd, "ab" if append else "wb")


def read_nofollow(path: Path, limit: int) -> bytes | None:
    """At most `limit` bytes of the plain file at `path`; None when it is absent, a link or
    anything but a plain file (what a build or test left there is not followed)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        chunks = []
        left = limit
        while left > 0:
            chunk = os.read(fd, min(left, 1 << 20))
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)


def leads_through_link(root: Path, rel: Path) -> Path | None:
    """The first folder between `root` and `root/rel` (`rel` itself excluded) that is a link,
    or None: a path a build left there would make the tool read or write elsewhere."""
    here = Path(root)
    for part in Path(rel).parts[:-1]:
        here = here / part
        if here.is_symlink():
            return here
    return None
