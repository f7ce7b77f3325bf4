"""One line of a session's journal, typed: the shape every record is checked against when it is
read (session/journal.py) and the fields the session's decisions read from it.

A journal is written by tritonbisect and may be edited by anything that writes the workdir, so a
record is read defensively: a field of the wrong type is a corrupt line (one clear message), and
a record written by a newer tritonbisect (its `v` above JOURNAL_VERSION) is refused rather than
misread. A record without `v` is of version 1 (every journal before the field existed).

The fields a decision reads (seq, phase, role, commit, kind, verdict, undoes, perf, tests) are
attributes; the rest of a record (its build, logs, cases, timings) stays in `raw`, which is what
was written, for the reports that print it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from tritonbisect.core.outcome import Kind, Verdict

JOURNAL_VERSION = 1

# The types of the fields a step record may have (each may be missing or null).
_NUMBER = (int, float)
RECORD_FIELDS: dict[str, Any] = {
    "v": int, "seq": int, "round": int, "worker": int, "seconds": _NUMBER,
    "commit": str, "phase": str, "role": str, "kind": str, "verdict": str, "reason": str,
    "started": str, "finished": str, "dir": str, "node": str, "undoes": int,
    "build": dict, "record": dict, "cases": dict, "revert_tree": dict, "tests": list, "attempts": list,
    "perf": dict,
}
# ... and of its build, the reference build, and each test run or attempt
PART_FIELDS: dict[str, Any] = {
    "seconds": _NUMBER, "exit": int, "signal": int, "log": str, "kind": str, "reason": str, "node": str,
    "cached": bool, "performed": bool, "timed_out": bool, "kept": bool,
}

# Roles of a record: steps whose verdicts are observations of the commit, and a person's
# corrections (session/evidence.py says what each does).
ROLE_ENDPOINT = "endpoint"
ROLE_SEARCH = "search"
ROLE_CONFIRM = "confirm"
ROLE_MARK = "mark"
ROLE_UNDO = "undo"
OBSERVED_ROLES = (ROLE_ENDPOINT, ROLE_SEARCH, ROLE_CONFIRM)


def _type_problem(data: Mapping[str, Any], fields: Mapping[str, Any], where: str) -> str | None:
    for key, kind in fields.items():
        value = data.get(key)
        # a bool is an int to isinstance; a journal's counts and seqs are not booleans
        if value is not None and (not isinstance(value, kind) or (kind is int and isinstance(value, bool))):
            return f"its {key!r}{where} is {type(value).__name__} {str(value)[:40]!r}"
    return None


def record_problem(record: Mapping[str, Any]) -> str | None:
    """What is wrong with the shape of a journal record, or None."""
    problem = _type_problem(record, RECORD_FIELDS, "")
    if problem is not None:
        return problem
    if newer_version(record) is not None:
        return f"it is of journal version {record['v']} (this tritonbisect reads up to {JOURNAL_VERSION})"
    parts = [p for p in (record.get("build"), record.get("record")) if p is not None]
    parts += [*(record.get("tests") or []), *(record.get("attempts") or [])]
    for part in parts:
        if not isinstance(part, dict):
            return f"a build or test in it is {type(part).__name__} {str(part)[:40]!r}, not an object"
        problem = _type_problem(part, PART_FIELDS, " of a build or test")
        if problem is not None:
            return problem
    return None


def newer_version(record: Mapping[str, Any]) -> int | None:
    """The version of a record written by a newer tritonbisect, or None."""
    version = record.get("v")
    return version if isinstance(version, int) and version > JOURNAL_VERSION else None


def _verdict(value: object) -> Verdict | None:
    try:
        return Verdict(value)
    except ValueError:
        return None


def _kind(value: object) -> Kind | str | None:
    if value is None:
        return None
    try:
        return Kind(value)
    except ValueError:
        return str(value)  # a kind a newer runner wrote, or a domain's own: kept as written


@dataclass(frozen=True)
class StepRecord:
    """A journal record as the session's decisions read it."""

    raw: Mapping[str, Any] = field(repr=False)
    seq: int | None = None
    phase: str | None = None
    role: str | None = None
    round: int | None = None
    commit: str | None = None
    kind: Kind | str | None = None
    verdict: Verdict | None = None  # None: none, or a word that is no verdict
    reason: str | None = None
    undoes: int | None = None
    perf: Mapping[str, Any] = field(default_factory=dict)
    tests: tuple[Mapping[str, Any], ...] = ()

    @classmethod
    def of(cls, record: Mapping[str, Any]) -> StepRecord:
        """The typed view of a record already checked by record_problem (Journal.records())."""
        return cls(
            raw=record,
            seq=record.get("seq"),
            phase=record.get("phase"),
            role=record.get("role"),
            round=record.get("round"),
            commit=record.get("commit"),
            kind=_kind(record.get("kind")),
            verdict=_verdict(record.get("verdict")),
            reason=record.get("reason"),
            undoes=record.get("undoes"),
            perf=record.get("perf") or {},
            tests=tuple(record.get("tests") or ()),
        )

    @property
    def observed(self) -> bool:
        """A test's verdict of a commit (an endpoint, search or confirmation step)."""
        return self.role in OBSERVED_ROLES

    @property
    def says_something(self) -> bool:
        """Its verdict is about the commit: good, bad or skip (an abort is the harness failing)."""
        return self.verdict in (Verdict.GOOD, Verdict.BAD, Verdict.SKIP)

    @property
    def perf_undecided(self) -> bool:
        """A performance A/B that could not tell at its bound."""
        return self.perf.get("decision") == "undecided"


def stamped(record: Mapping[str, Any]) -> dict[str, Any]:
    """The record as it is written: its journal version first."""
    return {"v": JOURNAL_VERSION, **{k: v for k, v in record.items() if k != "v"}}
