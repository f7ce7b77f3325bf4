"""One lock: an exclusive flock(2) on a file that holds the pid of its holder, so that a
second process is refused at once and can be told who holds it. Used for a session, a hunt's
state file and a compat-builder session."""

from __future__ import annotations

import contextlib
import fcntl
import os
from pathlib import Path


class PidLock:
    """An exclusive, non-blocking flock on `path`; the holder's pid is written into the file."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._fd: int | None = None

    @property
    def held(self) -> bool:
        return self._fd is not None

    def acquire(self) -> str | None:
        """Take the lock: None when taken (or already held by us), else a note naming the
        holder (" (pid N)", or "" when unknown) for the caller's one-line error."""
        if self._fd is not None:
            return None
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = ""
            with contextlib.suppress(OSError, ValueError):
                pid = int(os.pread(fd, 32, 0).decode().strip() or "0")
                holder = f" (pid {pid})" if pid else ""
            os.close(fd)
            return holder
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        self._fd = fd
        return None

    def release(self) -> None:
        if self._fd is None:
            return
        with contextlib.suppress(OSError):
            os.ftruncate(self._fd, 0)
            fcntl.flock(self._fd, fcntl.LOCK_UN)
        os.close(self._fd)
        self._fd = None

    def is_locked_elsewhere(self) -> bool:
        """True while another process holds the lock."""
        if self._fd is not None:
            return False
        try:
            fd = os.open(self.path, os.O_RDONLY)
        except OSError:
            return False
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        finally:
            os.close(fd)
        return False
