"""What a hunt target is: the `HuntTarget` protocol, the revision logic of git targets, and
the `TargetFactory` through which `hunt` chooses and makes one.

The night (`hunt.night`) knows nothing of Triton, PyTorch or shell commands. It asks its
target for the head to test, the order of two revisions, the phase (repository + recipe)
that tests one commit or bisects a range, and the workflow that may follow a phase (the
Triton -> LLVM descent). Each domain that can be hunted has its target in its own
`domains/<name>/hunt_target.py`, listed in `hunt/target_table.py`; a new one is a module
there and a line in the table, and the night does not change.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from tritonbisect.core.history import History
from tritonbisect.session.session import PhaseSpec, Session

if TYPE_CHECKING:  # pragma: no cover
    from tritonbisect.session.settings import BisectSettings


class HuntTarget(Protocol):
    kind: str  # "command", "triton", "torch", ...
    command: str  # the tritonbisect command that bisects like this target ("run", "triton")
    test: dict  # the TestSpec (as a dict) every step runs; set by the command once resolved

    def identity(self) -> dict[str, Any]:
        """What the state file is about: the bisector kind and the repository identity."""

    def head(self, rev: str | None) -> str:
        """The revision to test tonight (--bad; default the newest)."""

    def resolve(self, rev: str) -> str: ...

    def is_before(self, older: str, newer: str) -> bool:
        """Whether `older` is an ancestor of (or the same as) `newer`."""

    def subject(self, rev: str) -> str: ...

    def count_between(self, good: str, bad: str) -> int:
        """Revisions in (good, bad]."""

    def phase(self, good: str, bad: str) -> PhaseSpec:
        """The phase that tests revisions (its recipe) and bisects good..bad."""

    def step_commit(self, phase: PhaseSpec, rev: str) -> str:
        """The commit of `phase.repo` that stands for `rev` in a step (a git target: `rev`
        itself; a published-version target: the version's commit in its ladder)."""

    def workflow(self) -> str | None:
        """The session workflow to continue the phase with, if any."""

    def prepare_session(self, session: Session) -> None:
        """Called once after the session is created, before it runs."""

    def check_range(self, good: str, bad: str) -> None:
        """Raise InputError, before any build, when good..bad cannot be bisected."""


class GitTarget:
    """The revision logic shared by every target whose revisions are commits of one repo."""

    kind = "git"
    command = "run"

    def __init__(self, repo: Path, *, first_parent: bool = False) -> None:
        self.history = History(repo)
        self.repo = Path(self.history.root)
        self.first_parent = first_parent

    def identity(self) -> dict[str, Any]:
        return {"bisector": self.kind, "repo": str(self.repo), "repo_id": self.history.repo_id()}

    def head(self, rev: str | None) -> str:
        return self.history.resolve(rev or "HEAD")

    def resolve(self, rev: str) -> str:
        return self.history.resolve(rev)

    def is_before(self, older: str, newer: str) -> bool:
        return self.history.is_ancestor(older, newer)

    def subject(self, rev: str) -> str:
        try:
            return self.history.commit_info(rev).subject
        except Exception:  # noqa: BLE001 - a subject is decoration only
            return ""

    def count_between(self, good: str, bad: str) -> int:
        if good == bad:
            return 0
        from tritonbisect.session.session import candidates_of

        return len(candidates_of(self.history, good, bad, first_parent=self.first_parent).order)

    def step_commit(self, phase: PhaseSpec, rev: str) -> str:
        return rev

    def workflow(self) -> str | None:
        return None

    def prepare_session(self, session: Session) -> None:
        return None

    def check_range(self, good: str, bad: str) -> None:
        from tritonbisect.session.session import candidates_of

        candidates_of(self.history, good, bad, first_parent=self.first_parent)


@dataclass(frozen=True)
class TargetFactory:
    """A bisector of `hunt`: when it is chosen, which hunt options it takes, how it is made."""

    kind: str
    # whether the hunt's options (its keyword arguments) choose this bisector; the table's
    # first match wins
    chooses: Callable[[dict[str, Any]], bool]
    options: frozenset[str]  # bisector-specific options it accepts (others are refused)
    create: Callable[[dict[str, Any], BisectSettings], HuntTarget]  # test set later
    # the click options it brings to `tritonbisect hunt` (each declared by one target; another
    # that accepts it names it in `options`)
    click_options: tuple[Callable[[Any], Any], ...] = ()
