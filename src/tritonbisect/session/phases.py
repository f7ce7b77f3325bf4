"""The persistent state of a session's phases: what each bisects and how it ended.

These are what session.json holds per phase (docs/architecture.md, "Settings and session.json").
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tritonbisect.core.errors import (
    EXIT_ABORTED,
    EXIT_ENDPOINTS_INVALID,
    EXIT_FOUND,
    EXIT_INCONCLUSIVE,
    EXIT_LOW_CONFIDENCE,
)

STATUS_PENDING = "pending"
STATUS_RUNNING = "running"
STATUS_FOUND = "found"
STATUS_INCONCLUSIVE = "inconclusive"
STATUS_INVALID = "invalid-endpoints"
STATUS_ABORTED = "aborted"
# a phase that followed from a result a person has since corrected (session/corrections.py)
STATUS_SUPERSEDED = "superseded"
TERMINAL = (STATUS_FOUND, STATUS_INCONCLUSIVE, STATUS_INVALID, STATUS_SUPERSEDED)
RESUMABLE = (STATUS_PENDING, STATUS_RUNNING, STATUS_ABORTED)

EXIT_OF_STATUS = {
    STATUS_FOUND: EXIT_FOUND,
    STATUS_INCONCLUSIVE: EXIT_INCONCLUSIVE,
    STATUS_INVALID: EXIT_ENDPOINTS_INVALID,
    STATUS_ABORTED: EXIT_ABORTED,
}


# what session.json may say where the tool wrote a commit id or a name: anything else is a
# corrupt (or crafted) file, never a revision that reaches git or a folder name
_COMMIT = re.compile(r"[0-9a-f]{4,64}")
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.+-]{0,99}")


def typed(value: Any, kind: type | tuple[type, ...], what: str) -> Any:
    """`value` when it is None or of `kind` (not a bool for an int); ValueError otherwise."""
    if value is None or (isinstance(value, kind) and not (isinstance(value, bool) and kind is int)):
        return value
    raise ValueError(f"its {what} is {type(value).__name__} {str(value)[:40]!r}")


def commit_id(value: Any, what: str) -> str:
    """`value` when it is a commit id (hex); ValueError naming `what` otherwise."""
    text = str(value)
    if not _COMMIT.fullmatch(text):
        raise ValueError(f"its {what} {text[:60]!r} is not a commit id")
    return text


def safe_name(value: Any, what: str) -> str:
    """`value` when it is a name that is safe as a folder name; ValueError otherwise."""
    text = str(value)
    if not _NAME.fullmatch(text) or ".." in text:
        raise ValueError(f"its {what} {text[:60]!r} is not a name of letters, digits and -_.+")
    return text


@dataclass
class PhaseSpec:
    name: str  # "main", "triton", "llvm", "torch", "pairs"
    repo: Path  # the repository whose commits are bisected (worktrees are made from it)
    good: str  # full shas
    bad: str
    recipe_name: str
    recipe_config: dict
    first_parent: bool = False
    candidates: list[str] | None = None  # explicit linear candidates, oldest first, bad last
    # Trade an extra test for a build already in the cache. Off where a phase promises a bound
    # on tests rather than on builds (the pairs search: at most ceil(log2 P)+1 pairs tested).
    prefer_cached: bool = True
    # A test that reports cases: only these are searched (the follow-up search for the second
    # culprit of the cases a revert did not fix); None: every case the endpoints bracket.
    only_cases: list[str] | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "repo": str(self.repo),
            "good": self.good,
            "bad": self.bad,
            "recipe_name": self.recipe_name,
            "recipe_config": self.recipe_config,
            "first_parent": self.first_parent,
            # not "candidates": PhaseState.to_dict merges this dict and uses that key
            "search_candidates": self.candidates,
            "prefer_cached": self.prefer_cached,
            **({"only_cases": list(self.only_cases)} if self.only_cases is not None else {}),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> PhaseSpec:
        if not isinstance(data, Mapping):
            raise ValueError(f"a phase is {type(data).__name__}, not an object")
        return cls(
            name=safe_name(data["name"], "phase name"),
            repo=Path(typed(data["repo"], str, "repository") or "."),
            good=commit_id(data["good"], "good commit"),
            bad=commit_id(data["bad"], "bad commit"),
            recipe_name=typed(data["recipe_name"], str, "recipe") or "",
            recipe_config=dict(typed(data.get("recipe_config"), dict, "recipe_config") or {}),
            first_parent=bool(data.get("first_parent", False)),
            candidates=[commit_id(c, "candidate") for c in typed(data["search_candidates"], list, "candidates")]
            if data.get("search_candidates") else None,
            prefer_cached=bool(data.get("prefer_cached", True)),
            only_cases=[str(c) for c in data["only_cases"]] if isinstance(data.get("only_cases"), list) else None,
        )


@dataclass
class PhaseState:
    spec: PhaseSpec
    status: str = STATUS_PENDING
    culprit: str | None = None
    candidates: list[str] = field(default_factory=list)
    confidence: str | None = None  # "high" | "low" once a culprit is confirmed
    reason: str | None = None  # why it ended this way, one line
    range_size: int | None = None  # commits in (good, bad]

    def to_dict(self) -> dict[str, Any]:
        return {
            **self.spec.to_dict(),
            "status": self.status,
            "culprit": self.culprit,
            "candidates": self.candidates,
            "confidence": self.confidence,
            "reason": self.reason,
            "range_size": self.range_size,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> PhaseState:
        return cls(
            spec=PhaseSpec.from_dict(data),
            status=typed(data.get("status"), str, "status") or STATUS_PENDING,
            culprit=commit_id(data["culprit"], "culprit") if data.get("culprit") else None,
            candidates=[commit_id(c, "candidate") for c in typed(data.get("candidates"), list, "candidates") or []],
            confidence=typed(data.get("confidence"), str, "confidence"),
            reason=typed(data.get("reason"), str, "reason"),
            range_size=typed(data.get("range_size"), int, "range_size"),
        )


@dataclass
class SessionResult:
    session_id: str
    phase: str
    status: str
    culprit: str | None = None
    candidates: list[str] = field(default_factory=list)
    confidence: str | None = None
    reason: str | None = None

    @property
    def exit_code(self) -> int:
        if self.status == STATUS_FOUND and self.confidence == "low":
            return EXIT_LOW_CONFIDENCE
        return EXIT_OF_STATUS.get(self.status, EXIT_ABORTED)

    @property
    def outcome(self) -> str:
        """The status, with a low-confidence culprit told apart from a confirmed one."""
        if self.status == STATUS_FOUND and self.confidence == "low":
            return "found-low-confidence"
        return self.status

    @classmethod
    def of_phase(cls, session_id: str, phase: PhaseState) -> SessionResult:
        return cls(
            session_id=session_id,
            phase=phase.spec.name,
            status=phase.status,
            culprit=phase.culprit,
            candidates=list(phase.candidates),
            confidence=phase.confidence,
            reason=phase.reason,
        )
