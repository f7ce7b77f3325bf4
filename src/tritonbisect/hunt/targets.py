"""What a hunt tests and how it bisects: one `HuntTarget` per bisector.

The night (`hunt.night`) knows nothing of Triton, PyTorch or shell commands. It asks its
target for the head to test, the order of two revisions, the phase (repository + recipe)
that tests one commit or bisects a range, and the workflow that may follow a phase (the
Triton -> LLVM descent). A new bisector (published wheels, a compile-only oracle, ...) is
a new class here and a factory in `commands.hunt`; the night does not change.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Protocol

from tritonbisect.core.history import History
from tritonbisect.session.session import PhaseSpec, Session


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


class CommandTarget(GitTarget):
    """`--repo DIR --build CMD`: the user's own build and test commands, like `run`."""

    kind = "command"
    command = "run"

    def __init__(self, repo: Path, build: str | None, test: dict, *, first_parent: bool = False) -> None:
        super().__init__(repo, first_parent=first_parent)
        self.build = build
        self.test = test

    def phase(self, good: str, bad: str) -> PhaseSpec:
        from tritonbisect.builds.recipes import TestSpec
        from tritonbisect.domains.command.recipe import CommandRecipe

        recipe = CommandRecipe(self.build, TestSpec.from_dict(self.test))
        return PhaseSpec(
            name="main", repo=self.repo, good=good, bad=bad, recipe_name=recipe.name,
            recipe_config=recipe.config(), first_parent=self.first_parent,
        )


@dataclass
class TritonTargetConfig:
    build: Any  # TritonBuildOptions
    llvm_dir: Path | None = None
    llvm: dict = field(default_factory=dict)
    compat_map: Path | None = None
    descend: bool = True


class TritonTarget(GitTarget):
    """`--triton-dir DIR`: Triton commits built into wheels (cached), like `triton`; a culprit
    that bumps LLVM is followed into llvm-project (the descent workflow)."""

    kind = "triton"
    command = "triton"

    def __init__(self, triton_dir: Path, test: dict, config: TritonTargetConfig, *, first_parent: bool = False) -> None:
        super().__init__(triton_dir, first_parent=first_parent)
        self.test = test
        self.config = config

    def _bisector(self, good: str, bad: str):
        from tritonbisect.domains.triton.bisector import TritonBisector

        return TritonBisector(
            self.repo, good, bad, test=self.test, build=self.config.build,
            first_parent=self.first_parent, llvm_dir=self.config.llvm_dir, llvm=self.config.llvm,
        )

    def _plan(self):
        from tritonbisect.domains.llvm.descent import DescentPlan

        c = self.config
        return DescentPlan(
            descend=c.descend,
            llvm_dir=str(Path(c.llvm_dir).resolve()) if c.llvm_dir else None,
            compat_map=str(Path(c.compat_map).resolve()) if c.compat_map else None,
            test=self.test,
            build=asdict(c.build),
            llvm=c.llvm,
        )

    def phase(self, good: str, bad: str) -> PhaseSpec:
        return self._bisector(good, bad).phase()

    def workflow(self) -> str | None:
        from tritonbisect.domains.llvm.descent import WORKFLOW

        return WORKFLOW

    def prepare_session(self, session: Session) -> None:
        self._plan().save(session)

    def check_range(self, good: str, bad: str) -> None:
        from tritonbisect.domains.llvm.descent import preflight

        super().check_range(good, bad)
        preflight(self._bisector(good, bad), self._plan())


class TorchTarget(GitTarget):
    """`--torch-dir DIR`: PyTorch commits, each with the Triton it pins, like `torch`."""

    kind = "torch"
    command = "torch"

    def __init__(self, torch_dir: Path, test: dict, *, build: Any, triton_dir: Path | None,
                 use: dict[str, str], llvm_dir: Path | None, first_parent: bool = False) -> None:
        super().__init__(torch_dir, first_parent=first_parent)
        self.test = test
        self.build = build
        self.triton_dir = triton_dir
        self.use = use
        self.llvm_dir = llvm_dir

    def phase(self, good: str, bad: str) -> PhaseSpec:
        from tritonbisect.domains.torch.bisector import TorchBisector

        return TorchBisector(
            self.repo, good, bad, test=self.test, build=self.build, triton_dir=self.triton_dir,
            use=self.use, first_parent=self.first_parent, llvm_dir=self.llvm_dir,
        ).phase()

