"""The record of a bisect session: atomic session state, an append-only step journal, a lock.

Layout of `<workdir>/sessions/<id>/`:

    session.json    configuration, phases and their results; rewritten atomically
                    (temp file in the same folder, fsync, rename, fsync of the folder)
    journal.jsonl   one JSON object per finished step, appended, flushed and fsynced;
                    a truncated last line (the process died mid-write) is ignored
    lock            held with flock(2) by the one process running the session
    steps/          one folder per step: build.log, test-<n>.log, result-<n>.json
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import tempfile
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from tritonbisect.core.errors import InputError, SessionLockedError
from tritonbisect.core.oserrors import at_path

SESSION_FILE = "session.json"
JOURNAL_FILE = "journal.jsonl"
LOCK_FILE = "lock"

# Roles of a step in the journal.
ROLE_ENDPOINT = "endpoint"
ROLE_SEARCH = "search"
ROLE_CONFIRM = "confirm"


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


class Journal:
    """Append-only JSON-lines journal of finished steps."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def records(self) -> list[dict[str, Any]]:
        """Every complete record, in order.

        A last line that is truncated or not valid JSON is ignored (the process died while
        writing it). A corrupt line elsewhere is an InputError naming the line.
        """
        try:
            data = self.path.read_bytes()
        except FileNotFoundError:
            return []
        except OSError as exc:
            raise InputError(f"cannot read journal {self.path}: {exc.strerror or exc}") from None
        lines = data.split(b"\n")
        # A complete file ends with "\n", so its last element is b"".
        out: list[dict[str, Any]] = []
        last_index = len(lines) - 1
        for index, raw in enumerate(lines):
            if not raw.strip():
                continue
            try:
                record = json.loads(raw.decode("utf-8"))
                if not isinstance(record, dict):
                    raise ValueError("not a JSON object")
            except (ValueError, UnicodeDecodeError) as exc:
                is_last = all(not rest.strip() for rest in lines[index + 1 : last_index + 1])
                if is_last:
                    break  # truncated last line: the step it described is simply not done
                raise InputError(
                    f"journal {self.path} is corrupt at line {index + 1}: {exc}"
                ) from None
            out.append(record)
        return out

    def _repair_tail(self) -> None:
        """Drop a truncated last line so the next record starts on a line of its own."""
        try:
            with open(self.path, "rb+") as f:
                f.seek(0, os.SEEK_END)
                size = f.tell()
                if size == 0:
                    return
                f.seek(size - 1)
                if f.read(1) == b"\n":
                    return
                # find the last newline and cut after it
                chunk = 65536
                pos = size
                cut = 0
                while pos > 0:
                    start = max(0, pos - chunk)
                    f.seek(start)
                    block = f.read(pos - start)
                    nl = block.rfind(b"\n")
                    if nl != -1:
                        cut = start + nl + 1
                        break
                    pos = start
                f.truncate(cut)
                f.flush()
                os.fsync(f.fileno())
        except FileNotFoundError:
            return

    def append(self, record: Mapping[str, Any]) -> None:
        """Append one record durably (write, flush, fsync)."""
        self._repair_tail()
        line = json.dumps(record, sort_keys=False, separators=(",", ":")) + "\n"
        new = not self.path.exists()
        with at_path(self.path), open(self.path, "ab") as f:
            f.write(line.encode("utf-8"))
            f.flush()
            os.fsync(f.fileno())
        if new:
            fsync_dir(self.path.parent)


def replay_verdicts(
    records: Iterable[Mapping[str, Any]], *, roles: tuple[str, ...] = (ROLE_ENDPOINT, ROLE_SEARCH)
) -> dict[str, dict[str, str]]:
    """Verdicts per phase: {phase: {commit: verdict}} from the journal.

    The latest record of a commit wins (a re-test after a conflict replaces the earlier
    verdict). "abort" verdicts are not verdicts about the commit (the infrastructure failed),
    so they are left out: a resumed session tests that commit again.
    """
    out: dict[str, dict[str, str]] = {}
    for rec in records:
        if rec.get("role") not in roles:
            continue
        verdict = rec.get("verdict")
        if verdict not in ("good", "bad", "skip"):
            continue
        out.setdefault(str(rec.get("phase")), {})[str(rec.get("commit"))] = verdict
    return out


class SessionLock:
    """An exclusive flock on the session's lock file, held while the session runs."""

    def __init__(self, path: Path, session_id: str) -> None:
        self.path = path
        self.session_id = session_id
        self._fd: int | None = None

    @property
    def held(self) -> bool:
        return self._fd is not None

    def acquire(self) -> None:
        if self._fd is not None:
            return
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = ""
            with contextlib.suppress(OSError, ValueError):
                pid = int(os.pread(fd, 32, 0).decode().strip() or "0")
                holder = f" (pid {pid})" if pid else ""
            os.close(fd)
            raise SessionLockedError(
                f"session {self.session_id} is being run by another tritonbisect process{holder}; "
                "wait for it to finish or stop it first"
            ) from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        self._fd = fd

    def release(self) -> None:
        if self._fd is None:
            return
        with contextlib.suppress(OSError):
            os.ftruncate(self._fd, 0)
            fcntl.flock(self._fd, fcntl.LOCK_UN)
        os.close(self._fd)
        self._fd = None

    def is_locked_elsewhere(self) -> bool:
        """True while another process holds the lock (for `status`)."""
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

    def __enter__(self) -> SessionLock:
        self.acquire()
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()
