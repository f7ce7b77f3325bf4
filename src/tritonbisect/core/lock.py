"""Locks on files, from one place: an flock(2) on a file beside what it guards.

`FileLock` is the lock itself: blocking (`with FileLock(path):`, shared or exclusive) for a
short critical section (a cache's index, the downloads store, a Ray node's clone), or tried
without waiting (`acquire(wait=False)`) and held for as long as something is in use (a
worker's worktree slot, a target environment). `PidLock` adds the holder's pid in the file,
so that a second process is refused at once and told who holds it (a session, a hunt's state
file, a compat-builder session).

flock is per open file: two FileLocks on one path exclude each other even in one process.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
from collections.abc import Iterator
from pathlib import Path


class FileLock:
    """An flock on `path`; the file is made when missing (unless `create` is false: then a
    missing file is a lock nobody holds, `acquire` takes nothing and says so, and the file is
    opened for reading only)."""

    def __init__(self, path: Path, *, create: bool = True) -> None:
        self.path = Path(path)
        self.create = create
        self.fd: int | None = None

    @property
    def held(self) -> bool:
        return self.fd is not None

    def acquire(self, *, shared: bool = False, wait: bool = True) -> bool:
        """Take the lock (waiting for it, unless `wait` is false); whether it is held now.
        Already held by this object: True at once."""
        if self.fd is not None:
            return True
        flags = os.O_RDWR | os.O_CREAT if self.create else os.O_RDONLY
        try:
            fd = os.open(self.path, flags, 0o644)
        except FileNotFoundError:
            if self.create:
                raise
            return False
        mode = (fcntl.LOCK_SH if shared else fcntl.LOCK_EX) | (0 if wait else fcntl.LOCK_NB)
        try:
            fcntl.flock(fd, mode)
        except BlockingIOError:
            os.close(fd)
            return False
        except BaseException:
            os.close(fd)
            raise
        self.fd = fd
        return True

    def release(self) -> None:
        if self.fd is None:
            return
        fd, self.fd = self.fd, None
        with contextlib.suppress(OSError):
            fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)

    def __enter__(self) -> FileLock:
        self.acquire()
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()


@contextlib.contextmanager
def locked(path: Path, *, shared: bool = False, mkdir: bool = False) -> Iterator[None]:
    """Hold the flock on `path` (waiting for it) while the block runs; `mkdir`: its folder is
    made first."""
    if mkdir:
        Path(path).parent.mkdir(parents=True, exist_ok=True)
    lock = FileLock(path)
    lock.acquire(shared=shared)
    try:
        yield
    finally:
        lock.release()


class PidLock:
    """An exclusive, non-blocking flock on `path`; the holder's pid is written into the file."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = FileLock(path)

    @property
    def held(self) -> bool:
        return self._lock.held

    def acquire(self) -> str | None:
        """Take the lock: None when taken (or already held by us), else a note naming the
        holder (" (pid N)", or "" when unknown) for the caller's one-line error."""
        if self._lock.held:
            return None
        self.path.parent.mkdir(parents=True, exist_ok=True)
        if not self._lock.acquire(wait=False):
            return self._holder()
        assert self._lock.fd is not None
        os.ftruncate(self._lock.fd, 0)
        os.pwrite(self._lock.fd, f"{os.getpid()}\n".encode(), 0)
        return None

    def _holder(self) -> str:
        with contextlib.suppress(OSError, ValueError):
            fd = os.open(self.path, os.O_RDONLY)
            try:
                pid = int(os.pread(fd, 32, 0).decode().strip() or "0")
            finally:
                os.close(fd)
            return f" (pid {pid})" if pid else ""
        return ""

    def release(self) -> None:
        if self._lock.fd is not None:
            with contextlib.suppress(OSError):
                os.ftruncate(self._lock.fd, 0)
        self._lock.release()

    def is_locked_elsewhere(self) -> bool:
        """True while another process holds the lock."""
        if self._lock.held:
            return False
        if not self.path.exists():
            return False
        probe = FileLock(self.path, create=False)
        try:
            taken = probe.acquire(shared=True, wait=False)
        except OSError:
            return False
        probe.release()
        return not taken
