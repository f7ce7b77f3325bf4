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

import json
import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from tritonbisect.core.errors import InputError, SessionLockedError
from tritonbisect.core.files import atomic_write_json, atomic_write_text, fsync_dir, read_json_file
from tritonbisect.core.lock import PidLock
from tritonbisect.core.oserrors import at_path
from tritonbisect.core.secrets import scrub_data
from tritonbisect.session.step_record import (
    JOURNAL_VERSION,
    ROLE_CONFIRM,
    ROLE_ENDPOINT,
    ROLE_SEARCH,
    StepRecord,
    newer_version,
    record_problem,
    stamped,
)

SESSION_FILE = "session.json"
JOURNAL_FILE = "journal.jsonl"
LOCK_FILE = "lock"

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
            except (ValueError, UnicodeDecodeError, RecursionError) as exc:
                is_last = all(not rest.strip() for rest in lines[index + 1 : last_index + 1])
                if is_last:
                    break  # truncated last line: the step it described is simply not done
                raise InputError(
                    f"journal {self.path} is corrupt at line {index + 1}: {exc}"
                ) from None
            newer = newer_version(record)
            if newer is not None:
                raise InputError(f"journal {self.path} line {index + 1} was written by a newer tritonbisect "
                                 f"(journal version {newer}; this one reads up to {JOURNAL_VERSION}): "
                                 "upgrade tritonbisect to read it")
            problem = record_problem(record)
            if problem is not None:
                raise InputError(f"journal {self.path} is corrupt at line {index + 1}: {problem}")
            out.append(record)
        return out

    def steps(self) -> list[StepRecord]:
        """Every complete record, typed (see records())."""
        return [StepRecord.of(r) for r in self.records()]

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
        # a reason may quote a test's output: no secret value this run knows goes to disk
        line = json.dumps(scrub_data(stamped(record)), sort_keys=False, separators=(",", ":")) + "\n"
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
    for step in map(StepRecord.of, records):
        if step.role not in roles or not step.says_something or step.verdict is None:
            continue
        out.setdefault(str(step.phase), {})[str(step.commit)] = step.verdict.value
    return out


class SessionLock:
    """An exclusive flock on the session's lock file, held while the session runs."""

    def __init__(self, path: Path, session_id: str) -> None:
        self.path = path
        self.session_id = session_id
        self._lock = PidLock(path)

    @property
    def held(self) -> bool:
        return self._lock.held

    def acquire(self) -> None:
        holder = self._lock.acquire()
        if holder is not None:
            raise SessionLockedError(
                f"session {self.session_id} is being run by another tritonbisect process{holder}; "
                "wait for it to finish or stop it first"
            )

    def release(self) -> None:
        self._lock.release()

    def is_locked_elsewhere(self) -> bool:
        """True while another process holds the lock (for `status`)."""
        return self._lock.is_locked_elsewhere()

    def __enter__(self) -> SessionLock:
        self.acquire()
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()


__all__ = ["ROLE_CONFIRM", "ROLE_ENDPOINT", "ROLE_SEARCH", "Journal", "SessionLock", "StepRecord", "record_problem", "atomic_write_json", "atomic_write_text", "fsync_dir", "read_json_file"]
