"""Reading a file whose path came from a file someone else could have written.

A session's journal names each step's logs, and a test can replace its own log by a link (to
`~/.netrc`) or edit the journal: `report` would print that file, and `hunt` put it into a
GitHub issue. So such a path is read only when it lies under the folder that owns it, walked
one component at a time from that folder with O_NOFOLLOW (no link anywhere on the way, not
even one swapped in between a check and the open), and only when it is a regular file.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

_DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC
_FILE = os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK  # a FIFO must not block the open


def relative_inside(root: Path, path: Path) -> tuple[str, ...] | None:
    """The components of `path` below `root` (`path` absolute, or relative to `root`); None
    when it is not below it or climbs with `..`."""
    path = Path(path)
    if path.is_absolute():
        try:
            path = path.relative_to(root)
        except ValueError:
            return None
    parts = path.parts
    if not parts or any(p in ("", ".", "..") for p in parts):
        return None
    return parts


def open_inside(root: Path, path: Path) -> int | None:
    """A read-only descriptor of the regular file `path` under `root`, reached without
    following a link; None when there is none such (the caller owns the descriptor)."""
    parts = relative_inside(root, path)
    if parts is None:
        return None
    try:
        folder = os.open(root, _DIR)
    except (OSError, ValueError):
        return None
    try:
        for name in parts[:-1]:
            inner = os.open(name, _DIR | os.O_NOFOLLOW, dir_fd=folder)
            os.close(folder)
            folder = inner
        fd = os.open(parts[-1], _FILE, dir_fd=folder)
    except (OSError, ValueError):
        return None
    finally:
        os.close(folder)
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        return None
    return fd


def read_tail_inside(root: Path, path: Path, limit: int) -> str | None:
    """The last `limit` bytes of `path` under `root` (open_inside's rules), decoded leniently;
    None when it may not be read."""
    fd = open_inside(root, path)
    if fd is None:
        return None
    try:
        with os.fdopen(fd, "rb") as fh:
            fh.seek(max(0, os.fstat(fd).st_size - limit))
            return fh.read(limit).decode("utf-8", "replace")
    except OSError:
        return None
