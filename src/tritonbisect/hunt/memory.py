"""The memory of a regression hunt: one JSON file, rewritten atomically after every change.

    {
      "version": 1,
      "target": {...},              what is hunted (bisector kind, repository identity, mode)
      "last_good": sha,             the newest head that passed, and when
      "regressions": [...],         every regression found: culprit (or candidates), fate
      "active": {...} | null,       a bisect session started and not finished (kill -9):
                                    the next night resumes it instead of starting another
      "reference": {...} | null,    the good commit whose reference output (an oracle's
                                    golden) the test compares against
      "nights": [...]               the latest nights, one line each
    }

A regression's `status` is "open" (the head still fails) or "fixed" (a later head passed).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

from tritonbisect.core.errors import InputError, SessionLockedError
from tritonbisect.core.files import atomic_write_json, read_json_file
from tritonbisect.core.lock import PidLock

STATE_VERSION = 1
MAX_NIGHTS = 100  # nights kept in the state file (one line each)

OPEN = "open"
FIXED = "fixed"


@dataclass
class Regression:
    """A regression the hunt found and reported once."""

    key: str  # the culprit's sha, or "range:<first>..<last>" when only candidates are known
    culprit: str | None
    candidates: list[str]
    subject: str
    kind: str  # the head's failure kind when it was found (fail, crash, mismatch, perf, ...)
    reason: str
    good: str  # the last green head before it
    bad: str  # the head of the night that found it
    found_at: str
    session: str
    confidence: str | None = None
    status: str = OPEN
    last_seen: str = ""  # the newest head that still failed
    last_seen_at: str = ""
    nights_seen: int = 1
    fixed_between: list[str] | None = None  # [last failing head, first passing head]
    fixed_at: str | None = None
    cases: list[str] = field(default_factory=list)  # a test that reports cases: those this culprit broke

    @property
    def short(self) -> str:
        return self.culprit[:12] if self.culprit else self.key

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Regression:
        known = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in known})


@dataclass
class HuntState:
    path: Path
    target: dict[str, Any] = field(default_factory=dict)
    last_good: str | None = None
    last_good_at: str | None = None
    regressions: list[Regression] = field(default_factory=list)
    active: dict[str, Any] | None = None
    reference: dict[str, Any] | None = None
    nights: list[dict[str, Any]] = field(default_factory=list)
    flaky_nights: int = 0  # red heads that passed on re-test: never bisected

    @classmethod
    def load(cls, path: Path) -> HuntState:
        """The state at `path`; a new, empty one when the file does not exist yet."""
        path = Path(path).expanduser().resolve()
        if not path.exists():
            return cls(path)
        if path.is_dir():
            raise InputError(f"--state {path} is a directory; give a file path, e.g. {path}/hunt-state.json")
        data = read_json_file(path, "hunt state file")
        what = f"hunt state file {path} is corrupt"
        fix = "; move it away to start afresh (its regressions would then be reported again)"
        version = data.get("version")
        if version != STATE_VERSION:
            raise InputError(f"{what}: version {version!r}, expected {STATE_VERSION}{fix}")
        try:
            return cls(
                path,
                target=dict(data.get("target") or {}),
                last_good=data.get("last_good"),
                last_good_at=data.get("last_good_at"),
                regressions=[Regression.from_dict(r) for r in data.get("regressions") or []],
                active=data.get("active"),
                reference=data.get("reference"),
                nights=list(data.get("nights") or []),
                flaky_nights=int(data.get("flaky_nights") or 0),
            )
        except (TypeError, ValueError, AttributeError) as exc:
            raise InputError(f"{what}: {exc}{fix}") from None

    def to_dict(self) -> dict[str, Any]:
        return {
            "version": STATE_VERSION,
            "target": self.target,
            "last_good": self.last_good,
            "last_good_at": self.last_good_at,
            "regressions": [asdict(r) for r in self.regressions],
            "active": self.active,
            "reference": self.reference,
            "nights": self.nights[-MAX_NIGHTS:],
            "flaky_nights": self.flaky_nights,
        }

    def save(self) -> None:
        atomic_write_json(self.path, self.to_dict())

    # queries --------------------------------------------------------------------------

    def open_regressions(self) -> list[Regression]:
        return [r for r in self.regressions if r.status == OPEN]

    def find(self, key: str) -> Regression | None:
        return next((r for r in self.regressions if r.key == key), None)

    def check_target(self, target: dict[str, Any]) -> list[str]:
        """Refuse a state file of another hunt; return notes on harmless changes.

        The bisector kind, the repository's identity and the regression mode must match (a
        culprit of a crash hunt means nothing to a perf hunt); a changed test is noted."""
        if not self.target:
            self.target = dict(target)
            return []
        for key in ("bisector", "repo_id", "regress"):
            old, new = self.target.get(key), target.get(key)
            if old != new:
                raise InputError(
                    f"hunt state file {self.path} belongs to another hunt ({key} {old!r}, "
                    f"this one is {new!r}); give each hunt its own --state file"
                )
        notes = []
        if self.target.get("test") != target.get("test"):
            notes.append(
                f"the test changed since the last night ({self.target.get('test')!r} -> "
                f"{target.get('test')!r}); the last good was judged by the old one"
            )
        self.target = dict(target)
        return notes

    def record_night(self, entry: dict[str, Any]) -> None:
        self.nights.append(entry)
        del self.nights[:-MAX_NIGHTS]


class StateLock:
    """An exclusive flock next to the state file: one night at a time per hunt."""

    def __init__(self, state_path: Path) -> None:
        self.path = state_path.with_name(state_path.name + ".lock")
        self._lock = PidLock(self.path)

    def __enter__(self) -> StateLock:
        holder = self._lock.acquire()
        if holder is not None:
            raise SessionLockedError(
                f"another tritonbisect hunt is using {self.path.with_suffix('')}{holder}; "
                "wait for it to finish"
            )
        return self

    def __exit__(self, *exc: object) -> None:
        self._lock.release()
