"""The Triton bisector: one phase over Triton commits, and the facts about LLVM bumps.

A Triton commit that changes the llvm-project commit it pins (`cmake/llvm-hash.txt`, or
`cmake/llvm-info.json` from 2026 on: `tritonbisect.domains.triton.llvm_pin`) is an *LLVM bump*: when it is
the culprit, the regression may live in LLVM, and the descent (domains/llvm/descent.py) goes
into llvm-project between the old and the new hash. A commit that only moves the pin to the
other file, or only changes the prebuilt's build number, is not a bump.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from tritonbisect.core.errors import InputError
from tritonbisect.core.history import History
from tritonbisect.domains.triton.llvm_pin import (
    BUMP,
    HASH_FILE,
    PIN_FILES,
    PIN_FILES_TEXT,
    LLVMPin,
    PinError,
    pin_change,
    require_pin,
)
from tritonbisect.domains.triton.pin_set import (
    PIN_SET_FILES,
    PinSet,
    PinSetChange,
    pin_set_changes,
    read_pin_set,
)
from tritonbisect.session.session import PhaseSpec

TRITON_RECIPE = "triton"

__all__ = ["HASH_FILE", "PIN_FILES", "PIN_FILES_TEXT", "LLVMBump", "PinChange", "TritonBisector",
           "TritonBuildOptions", "bumps_between", "llvm_bump", "pin_change_at", "pin_of", "pin_set_changes_at",
           "pin_set_changes_between", "pin_set_of", "pinned_llvm"]


@dataclass(frozen=True)
class LLVMBump:
    """A Triton commit that moves the pinned LLVM from `old` to `new` (as written in the file)."""

    commit: str
    parent: str
    old: str
    new: str

    def describe(self) -> str:
        return (
            f"{self.commit[:12]} is an LLVM bump: the pinned LLVM moves from "
            f"{self.old[:12]} to {self.new[:12]}"
        )


@dataclass(frozen=True)
class PinChange:
    """What a commit does to the pin: kind is llvmpin.BUMP, PREBUILT or FORMAT."""

    commit: str
    kind: str
    old: LLVMPin
    new: LLVMPin

    def describe(self) -> str:
        if self.kind == BUMP:
            return f"{self.commit[:12]} bumps LLVM from {self.old.hash[:12]} to {self.new.hash[:12]}"
        if self.new.build_number != self.old.build_number:
            return (
                f"{self.commit[:12]} changes only the prebuilt LLVM's build number "
                f"({self.old.build_number} -> {self.new.build_number}) for the same llvm-project "
                f"commit {self.new.hash[:12]}: not an LLVM bump, nothing to bisect in llvm-project"
            )
        return f"{self.commit[:12]} moves the LLVM pin from {self.old.file} to {self.new.file} (same LLVM)"


def pin_of(history: History, commit: str) -> LLVMPin:
    """The pin of `commit`; InputError (one line) when no pin file is there or it is unreadable."""
    return require_pin(lambda path: history.file_at(commit, path), f"at {commit[:12]} in {history.root}")


def pinned_llvm(history: History, commit: str) -> str:
    """The LLVM hash `commit` pins; InputError (one line) when there is none."""
    return pin_of(history, commit).hash


def pin_change_at(history: History, commit: str) -> PinChange | None:
    """What `commit` does to the pin (None: nothing, or it touches no pin file)."""
    if not set(PIN_FILES) & set(history.files_touched(commit)):
        return None
    parent = history.resolve(f"{commit}~1")
    old, new = pin_of(history, parent), pin_of(history, commit)
    kind = pin_change(old, new)
    return None if kind is None else PinChange(commit, kind, old, new)


def llvm_bump(history: History, commit: str) -> LLVMBump | None:
    """The bump made by `commit`, or None when it leaves the pinned llvm-project commit alone
    (a build-number-only change or a move to the other pin file is not a bump)."""
    change = pin_change_at(history, commit)
    if change is None or change.kind != BUMP:
        return None
    parent = history.resolve(f"{commit}~1")
    return LLVMBump(commit, parent, change.old.hash, change.new.hash)


def pin_commits_between(history: History, good: str, bad: str, files: tuple[str, ...] = PIN_FILES) -> list[str]:
    """Commits in good..bad that touch a pin file, oldest first (one git call)."""
    from tritonbisect.core.gitrun import run_git

    proc = run_git(["log", "--format=%H", "--reverse", f"{good}..{bad}", "--", *files], cwd=history.root)
    if proc.returncode != 0:
        raise InputError(f"git log {good}..{bad} failed in {history.root}: {proc.stderr.strip()[-200:]}")
    return [line for line in proc.stdout.splitlines() if line]


def pin_set_of(history: History, commit: str) -> PinSet:
    """Every LLVM `commit` pins (and the NVIDIA toolchain); InputError (one line) when it
    pins no core LLVM or a pin file is unreadable."""
    where = f"at {commit[:12]} in {history.root}"
    pin_of(history, commit)  # the core pin's own one-line errors
    try:
        found = read_pin_set(lambda path: history.file_at(commit, path))
    except PinError as exc:
        raise InputError(f"{exc} ({where})") from None
    assert found is not None  # pin_of found the core pin
    return found


def pin_set_changes_at(history: History, commit: str) -> list[PinSetChange]:
    """What `commit` does to each pinned LLVM and the toolchain ([] when it touches none of
    their files)."""
    if not set(PIN_SET_FILES) & set(history.files_touched(commit)):
        return []
    parent = history.resolve(f"{commit}~1")
    return pin_set_changes(pin_set_of(history, parent), pin_set_of(history, commit))


def pin_set_changes_between(history: History, good: str, bad: str) -> dict[str, list[PinSetChange]]:
    """The commits in good..bad that change the pin set, oldest first, with their changes.
    A commit whose pins cannot be read on one side is left out (the caller reports bumps)."""
    out: dict[str, list[PinSetChange]] = {}
    for sha in pin_commits_between(history, good, bad, PIN_SET_FILES):
        try:
            changes = pin_set_changes_at(history, sha)
        except InputError:
            continue
        if changes:
            out[sha] = changes
    return out


def bumps_between(history: History, good: str, bad: str) -> list[str]:
    """Commits in good..bad that change the pinned llvm-project commit, oldest first. A commit
    where the pin appears or cannot be read on one side is kept (the caller reports it)."""
    out = []
    for sha in pin_commits_between(history, good, bad):
        try:
            if llvm_bump(history, sha) is None:
                continue
        except InputError:
            pass
        out.append(sha)
    return out


@dataclass
class TritonBuildOptions:
    """How a Triton commit becomes a wheel installed into the target environment."""

    debug: bool = False
    max_jobs: int | None = None
    python: str | None = None
    venv: str | None = None
    build_type: str = ""  # "", RelWithDebInfo, TritonRelBuildWithAsserts
    clang_lld: bool = False
    backends: dict = field(default_factory=dict)  # {"amd": {"dir": checkout}}: --amd-llvm-dir
    backend_llvm: str = "pinned"  # or "core": --backend-llvm

    def recipe_config(self, test: dict) -> dict:
        config = {
            "test": test,
            "debug": self.debug,
            "max_jobs": self.max_jobs,
            "python": self.python,
            "venv": self.venv,
        }
        if self.build_type:
            config["build_type"] = self.build_type
        if self.clang_lld:
            config["clang_lld"] = True
        if self.backends:  # every step builds the pinned backend LLVMs: "core" is for one A/B step only
            config["backends"] = self.backends
        return config


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
