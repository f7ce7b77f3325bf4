"""Copying a step's logs from the node that runs it to the session folder, as they grow.

A remote step writes its logs into a scratch folder on its node. The driver asks for what is
new (`read_new(scratch, offsets)` runs on the node) and writes it into the step's folder in
the session (`LogMirror.apply`), so `status`, `report` and a user tailing a log see the same
files as with local workers. A file that was rewritten from the start (a shorter size than
already copied) is copied again from its beginning.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path, PurePosixPath
from typing import Any

CHUNK_BYTES = 1 << 20  # at most this much of one file per call: a poll stays small


def read_new(root: Path, offsets: Mapping[str, int], limit: int = CHUNK_BYTES) -> dict[str, tuple[int, bytes]]:
    """{relative path: (start, bytes)} for every file under `root` that has grown past its
    offset (or shrunk below it: then from 0)."""
    out: dict[str, tuple[int, bytes]] = {}
    if not root.is_dir():
        return out
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames.sort()
        for name in sorted(filenames):
            path = Path(dirpath) / name
            rel = path.relative_to(root).as_posix()
            try:
                size = path.stat().st_size
                start = offsets.get(rel, -1)
                if size == start:
                    continue
                if size < start or start < 0:
                    start = 0  # new, or rewritten: copy it from the beginning
                with open(path, "rb") as f:
                    f.seek(start)
                    data = f.read(limit)
            except OSError:  # removed meanwhile (e.g. a stale result file)
                continue
            out[rel] = (start, data)
    return out


class LogMirror:
    """The driver's copy of one remote step folder."""

    def __init__(self, dest: Path) -> None:
        self.dest = dest
        self.offsets: dict[str, int] = {}

    def apply(self, chunks: Mapping[str, tuple[int, bytes]]) -> int:
        """Write the chunks; returns how many bytes were written."""
        written = 0
        for rel, (start, data) in chunks.items():
            parts = PurePosixPath(rel).parts
            if not parts or ".." in parts or PurePosixPath(rel).is_absolute():
                continue  # never outside the step folder
            path = self.dest.joinpath(*parts)
            path.parent.mkdir(parents=True, exist_ok=True)
            mode = "r+b" if path.exists() else "wb"
            with open(path, mode) as f:
                f.seek(start)
                f.write(data)
                f.truncate()
            self.offsets[rel] = start + len(data)
            written += len(data)
        return written


def relocate(value: Any, old: str, new: str) -> Any:
    """`value` (JSON-like) with every string path under `old` moved under `new`."""
    if isinstance(value, str):
        if value == old or value.startswith(old.rstrip("/") + "/"):
            return new.rstrip("/") + value[len(old.rstrip("/")):]
        return value
    if isinstance(value, dict):
        return {k: relocate(v, old, new) for k, v in value.items()}
    if isinstance(value, list):
        return [relocate(v, old, new) for v in value]
    return value
