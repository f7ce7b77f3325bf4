"""The Triton bisector: one phase over Triton commits, and the facts about LLVM bumps.

A Triton commit that changes `cmake/llvm-hash.txt` is an *LLVM bump*: when it is the
culprit, the regression may live in LLVM, and the workflow (`bisect.workflow`) descends
into llvm-project between the old and the new hash.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from tritonbisect.bisect.history import History
from tritonbisect.bisect.session import PhaseSpec
from tritonbisect.errors import InputError

HASH_FILE = "cmake/llvm-hash.txt"
TRITON_RECIPE = "triton"


@dataclass(frozen=True)
class LLVMBump:
    """A Triton commit that moves the pinned LLVM from `old` to `new` (as written in the file)."""

    commit: str
    parent: str
    old: str
    new: str

    def describe(self) -> str:
        return (
            f"{self.commit[:12]} is an LLVM bump: {HASH_FILE} moves from "
            f"{self.old[:12]} to {self.new[:12]}"
        )


def pinned_llvm(history: History, commit: str) -> str:
    """The LLVM hash `commit` pins; InputError (one line) when the file is absent or empty."""
    text = history.file_at(commit, HASH_FILE)
    value = (text or "").strip()
    if not value:
        raise InputError(
            f"{HASH_FILE} is missing at {commit[:12]} in {history.root}: "
            "not a Triton checkout that pins LLVM"
        )
    return value.split()[0]


def llvm_bump(history: History, commit: str) -> LLVMBump | None:
    """The bump made by `commit`, or None when it leaves `cmake/llvm-hash.txt` alone."""
    if HASH_FILE not in history.files_touched(commit):
        return None
    parent = history.resolve(f"{commit}~1")
    return LLVMBump(commit, parent, pinned_llvm(history, parent), pinned_llvm(history, commit))


def bumps_between(history: History, good: str, bad: str) -> list[str]:
    """Commits in good..bad that change `cmake/llvm-hash.txt`, oldest first (one git call)."""
    import git

    out = git.Repo(history.root).git.log(
        "--format=%H", "--reverse", f"{good}..{bad}", "--", HASH_FILE
    )
    return [line for line in out.splitlines() if line]


@dataclass
class TritonBuildOptions:
    """How a Triton commit becomes a wheel installed into the target environment."""

    debug: bool = False
    max_jobs: int | None = None
    python: str | None = None
    venv: str | None = None

    def recipe_config(self, test: dict) -> dict:
        return {
            "test": test,
            "debug": self.debug,
            "max_jobs": self.max_jobs,
            "python": self.python,
            "venv": self.venv,
        }


@dataclass
class TritonBisector:
    """`tritonbisect triton`: bisect Triton commits with the "triton" recipe."""

    triton_dir: Path
    good: str
    bad: str
    test: dict  # TestSpec.to_dict()
    build: TritonBuildOptions
    first_parent: bool = False
    llvm_dir: Path | None = None  # build each commit's pinned LLVM from this checkout
    llvm: dict = field(default_factory=dict)  # LLVMConfig fields

    def __post_init__(self) -> None:
        self.history = History(self.triton_dir)
        self.good = self.history.resolve(self.good)
        self.bad = self.history.resolve(self.bad)

    def phase(self) -> PhaseSpec:
        """The "triton" recipe. With --llvm-dir, its config carries llvm_dir: the recipe builds
        each commit's pinned LLVM from it (cached by LLVM commit + config) and the wheel against
        it, under the cache key an "llvm-triton" step uses, so the LLVM descent re-uses these
        builds; else Triton's own build fetches its LLVM."""
        config = self.build.recipe_config(self.test)
        if self.llvm_dir is not None:
            config.update(llvm_dir=str(Path(self.llvm_dir).resolve()), llvm=self.llvm)
        return PhaseSpec(
            name="triton",
            repo=self.history.root,
            good=self.good,
            bad=self.bad,
            recipe_name=TRITON_RECIPE,
            recipe_config=config,
            first_parent=self.first_parent,
        )

    def bumps(self) -> list[str]:
        return bumps_between(self.history, self.good, self.bad)
