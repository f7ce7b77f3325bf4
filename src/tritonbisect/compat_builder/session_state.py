"""The state of one compat-builder session: <workdir>/compat/<id>/state.json.

Written atomically after every transition (found-incompatible, attempt-started,
attempt-failed, fix-accepted, pair-recorded, ...), so that a crash at any point resumes from
the last one. One process at a time holds the session's lock (flock on <dir>/lock; the OS
releases it when the holder dies, even by kill -9).
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import time
import typing
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from tritonbisect.core.clock import now_iso
from tritonbisect.core.errors import InputError, SessionLockedError
from tritonbisect.core.files import atomic_write_text
from tritonbisect.core.lock import PidLock
from tritonbisect.core.untrusted import json_fits

STATE_FILE = "state.json"
STATE_VERSION = 1

# phases of a session
SEARCHING = "searching"  # looking for the next LLVM commit the current Triton does not build against
FIXING = "fixing"  # an incompatible LLVM commit is confirmed; fix attempts are running
MANUAL = "manual"  # attempts exhausted or --ai none: waiting for `resume --fix-commit`
DONE = "done"


@dataclass
class MapState:
    id: str
    kind: str  # "map" | "fix"
    triton_repo: str  # the user's Triton repository (never checked out by us)
    llvm_repo: str
    worktree: str  # our Triton worktree (on `branch`)
    branch: str
    ai: str
    ai_model: str
    max_attempts: int
    smoke: str
    out_csv: str | None = None
    bump: str | None = None
    old_llvm: str | None = None
    new_llvm: str | None = None
    strategy: str = "continue"  # "continue" (from the last fix) | "restart" (benchmark baseline)
    # a bump into a fork: old_llvm/new_llvm are the pins' upstream bases, every probe replays
    # the fork's patches (domains/llvm/fork.py ForkRange.config())
    fork: dict[str, Any] | None = None
    phase: str = SEARCHING
    current_triton: str = ""  # Triton commit that builds against current_good
    current_good: str = ""  # last LLVM commit known to be compatible with current_triton
    verdicts: dict[str, str] = field(default_factory=dict)  # LLVM sha -> good|bad|skip, for current_triton
    incompatible: str | None = None  # confirmed incompatible LLVM commit being fixed
    incompatible_log: str | None = None  # full build log of the clean probe that confirmed it
    attempts: list[dict[str, Any]] = field(default_factory=list)  # of the current fix
    pairs: list[list[str]] = field(default_factory=list)  # [triton, llvm_last_compatible]
    fixes: list[dict[str, Any]] = field(default_factory=list)  # accepted fixes, in order
    probes: list[dict[str, Any]] = field(default_factory=list)  # every probe, in order
    events: list[dict[str, Any]] = field(default_factory=list)
    argv: list[str] = field(default_factory=list)
    result: str | None = None  # final fix commit (fix sessions) or csv path (map sessions)
    created: str = field(default_factory=now_iso)
    version: int = STATE_VERSION

    # --- persistence ------------------------------------------------------------------
    @property
    def dir(self) -> Path:
        return Path(self._dir)  # type: ignore[attr-defined]

    def save(self, event: str | None = None, **details: Any) -> None:
        """Record `event` (a transition) and write state.json atomically."""
        if event:
            self.events.append({"event": event, "at": now_iso(), **details})
        data = asdict(self)
        atomic_write_text(self.dir / STATE_FILE, json.dumps(data, indent=1, sort_keys=True) + "\n")

    @classmethod
    def create(cls, session_dir: Path, **values: Any) -> MapState:
        session_dir.mkdir(parents=True, exist_ok=False)
        state = cls(**values)
        state._dir = session_dir  # type: ignore[attr-defined]
        state.save("created")
        return state

    @classmethod
    def load(cls, session_dir: Path) -> MapState:
        path = session_dir / STATE_FILE
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise InputError(f"{session_dir}: not a compat-builder session (no {STATE_FILE})") from None
        except (OSError, ValueError) as exc:
            raise InputError(f"{path}: unreadable session state: {exc}") from None
        if not isinstance(data, dict):
            raise InputError(f"{path}: unreadable session state: a JSON {type(data).__name__}, not an object")
        if data.get("version") != STATE_VERSION:
            raise InputError(f"{path}: state version {str(data.get('version'))[:20]!r} is not supported")
        problem = _problem(data)
        if problem:
            raise InputError(f"{path}: corrupt session state: {problem}")
        known = set(cls.__dataclass_fields__)
        state = cls(**{k: v for k, v in data.items() if k in known})
        state._dir = session_dir  # type: ignore[attr-defined]
        return state

    # --- helpers ----------------------------------------------------------------------
    def current_attempt(self) -> dict[str, Any] | None:
        return self.attempts[-1] if self.attempts else None

    def usage_total(self) -> dict[str, int]:
        total = {"input_tokens": 0, "output_tokens": 0, "requests": 0}
        for attempt in [*self.attempts, *(a for f in self.fixes for a in f.get("attempts", []))]:
            for key in total:
                total[key] += int(attempt.get("usage", {}).get(key, 0))
        return total


_COMMIT = re.compile(r"[0-9a-f]{4,64}")
# fields whose commit ids reach git command lines (never an option, never a path)
_COMMITS = ("bump", "old_llvm", "new_llvm", "current_triton", "current_good", "incompatible")


# the fields of its attempts, fixes and probes that are read back (provenance, usage); a fix
# made by hand has no model (null)
_RECORD_FIELDS: dict[str, Any] = {
    "commit": str, "model": str | None, "files": list[str], "build_scripts": list[str], "attempts": list[dict[str, Any]],
    "usage": dict[str, int],
}


def _problem(data: dict[str, Any]) -> str | None:
    """What in a state.json is not as the builder writes it (a file someone edited), or None."""
    hints = typing.get_type_hints(MapState)
    missing = [f.name for f in dataclasses.fields(MapState)
               if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING and f.name not in data]
    if missing:
        return f"it has no {missing[0]!r}"
    for name, hint in hints.items():
        if name in data and not json_fits(data[name], hint):
            return f"its {name} is {type(data[name]).__name__} {str(data[name])[:40]!r}"
    records = [*data.get("attempts", []), *data.get("fixes", []), *data.get("probes", []), *data.get("events", [])]
    for rec in records:  # (each a dict: the hints above checked it)
        for key, kind in _RECORD_FIELDS.items():
            if key in rec and not json_fits(rec[key], kind):
                return f"its {key} is {type(rec[key]).__name__} {str(rec[key])[:40]!r}"
    for attempt in (a for fix in data.get("fixes", []) for a in fix.get("attempts") or []):
        if "usage" in attempt and not json_fits(attempt["usage"], _RECORD_FIELDS["usage"]):
            return f"the usage of an attempt is {str(attempt['usage'])[:40]!r}"
    if any("commit" not in fix for fix in data.get("fixes", [])):
        return "a fix has no commit"
    commits = [data.get(k) for k in _COMMITS] + [c for pair in data.get("pairs") or [] for c in pair]
    commits += list(data.get("verdicts") or {}) + [f.get("commit") for f in data.get("fixes", [])]
    bad = next((c for c in commits if c and not _COMMIT.fullmatch(c)), None)
    return f"{bad[:60]!r} is not a commit id" if bad else None


def sessions_root(workdir: Path) -> Path:
    return Path(workdir) / "compat"


def new_session_id(prefix: str) -> str:
    return f"{time.strftime('%Y%m%d-%H%M%S')}-{prefix}-{os.getpid() % 10000:04d}"


def session_dir(workdir: Path, session_id: str | None) -> Path:
    """The folder of `session_id`, or of the newest session when None."""
    root = sessions_root(workdir)
    if session_id:
        path = root / session_id
        if not (path / STATE_FILE).is_file():
            raise InputError(f"no compat-builder session {session_id!r} in {root}")
        return path
    # ids start with a creation timestamp: the newest sorts last
    found = sorted(p.name for p in root.glob("*") if (p / STATE_FILE).is_file())
    if not found:
        raise InputError(f"no compat-builder session in {root}")
    return root / found[-1]


class SessionLock:
    """Exclusive lock on a session folder, held for the lifetime of the process's work."""

    def __init__(self, session_dir: Path) -> None:
        self.path = session_dir / "lock"
        self._lock = PidLock(self.path)

    def __enter__(self) -> SessionLock:
        holder = self._lock.acquire()
        if holder is not None:
            raise SessionLockedError(f"session {self.path.parent.name} is in use by another process{holder}")
        return self

    def __exit__(self, *exc: object) -> None:
        self._lock.release()
