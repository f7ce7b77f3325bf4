"""The Triton bisector: one phase over Triton commits, and the facts about LLVM bumps.

A Triton commit that changes `cmake/llvm-hash.txt` is an *LLVM bump*: when it is the
culprit, the regression may live in LLVM, and the workflow (`bisect.workflow`) descends
into llvm-project between the old and the new hash.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path

from tritonbisect.bisect.history import History
from tritonbisect.bisect.session import PhaseSpec
from tritonbisect.build.recipes import register_recipe
from tritonbisect.errors import InputError

HASH_FILE = "cmake/llvm-hash.txt"
TRITON_RECIPE = "triton"
PINNED_RECIPE = "triton-pinned-llvm"  # defined below: builds the pinned LLVM from --llvm-dir


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
        """With --llvm-dir, each commit's pinned LLVM is built from it ("triton-pinned-llvm");
        else Triton's own build fetches its LLVM ("triton")."""
        config = self.build.recipe_config(self.test)
        if self.llvm_dir is not None:
            config.update(llvm_dir=str(Path(self.llvm_dir).resolve()), llvm=self.llvm)
        return PhaseSpec(
            name="triton",
            repo=self.history.root,
            good=self.good,
            bad=self.bad,
            recipe_name=PINNED_RECIPE if self.llvm_dir is not None else TRITON_RECIPE,
            recipe_config=config,
            first_parent=self.first_parent,
        )

    def bumps(self) -> list[str]:
        return bumps_between(self.history, self.good, self.bad)


# --- the recipe that builds the pinned LLVM from a checkout ------------------------------


def _pinned_recipe_class():
    """Defined lazily: the build layer is only imported when a step runs."""
    import subprocess

    from tritonbisect.bisect.outcome import Kind
    from tritonbisect.build.llvm_recipe import LLVMConfig, build_llvm, llvm_env
    from tritonbisect.build.triton_recipe import (
        GitFailure,
        TritonRecipe,
        WheelBuild,
        _base_env,
        checkout_worktree,
        step_runner,
    )

    class PinnedLLVMTritonRecipe(TritonRecipe):
        """Registered as "triton-pinned-llvm": bisect Triton, building at each Triton commit
        the LLVM it pins (cmake/llvm-hash.txt) from the `llvm_dir` checkout, cached by LLVM
        commit + config, instead of downloading a prebuilt one. Wheels share their cache keys
        with the "llvm-triton" recipe, so the LLVM descent re-uses the Triton phase's builds.

        Config: the "triton" recipe's keys, plus `llvm_dir` and `llvm` (LLVMConfig fields).
        """

        name = PINNED_RECIPE

        def __init__(self, config):
            super().__init__(config)
            self.llvm_dir = Path(config["llvm_dir"])
            self.llvm_config = LLVMConfig.from_dict(config.get("llvm"))

        def _llvm_sha(self, pinned: str) -> str:
            proc = subprocess.run(
                [
                    "git",
                    "-C",
                    str(self.llvm_dir),
                    "rev-parse",
                    "--verify",
                    "-q",
                    f"{pinned}^{{commit}}",
                ],
                capture_output=True,
                text=True,
                timeout=120,
                env=_base_env(),
            )
            if proc.returncode != 0 or not proc.stdout.strip():
                raise GitFailure(
                    f"LLVM {pinned[:12]} (pinned in {HASH_FILE}) not found in {self.llvm_dir}"
                )
            return proc.stdout.strip()

        def build_wheel(self, source, commit, ctx, env, *, log, extra_env={}, extra_key={}):  # noqa: B006
            start = time.monotonic()
            hash_file = Path(source) / HASH_FILE
            pinned = hash_file.read_text().strip().split()[0] if hash_file.is_file() else ""
            if not pinned:
                return WheelBuild(
                    Kind.BUILD_FAILED,
                    f"{HASH_FILE} is missing at {commit[:12]}",
                    None,
                    True,
                    0.0,
                    log,
                )
            workdir = self.workdir(ctx)
            worker = f"{ctx.worktree.parent.name}-{ctx.worktree.name}"
            build_env = {**_base_env(), **ctx.env}
            try:
                sha = self._llvm_sha(pinned)
                repo_id = self.repo_id(self.llvm_dir)
                tree = checkout_worktree(
                    self.llvm_dir,
                    workdir / "worktrees" / f"llvm-{repo_id[:12]}" / f"pinned-{worker}",
                    sha,
                )
            except GitFailure as exc:
                return WheelBuild(Kind.INFRA, str(exc), None, False, time.monotonic() - start, log)
            llvm = build_llvm(
                tree,
                sha,
                cache=self.cache(ctx),
                config=self.llvm_config,
                build_dir=workdir / "llvm-build" / f"pinned-{worker}",
                log=ctx.log_dir / "llvm-build.log",
                repo_id=repo_id,
                env=build_env,
                timeout=self.build_timeout,
                runner=step_runner(ctx),
            )
            if llvm.kind is not Kind.PASS or llvm.prefix is None:
                return WheelBuild(
                    llvm.kind,
                    f"pinned LLVM {sha[:12]}: {llvm.reason}",
                    None,
                    llvm.cached,
                    time.monotonic() - start,
                    llvm.log,
                )
            wb = super().build_wheel(
                source,
                commit,
                ctx,
                env,
                log=log,
                extra_env={**extra_env, **llvm_env(llvm.prefix)},
                extra_key={**extra_key, "llvm": sha, "llvm_config": self.llvm_config.key_config()},
            )
            wb.cached = wb.cached and llvm.cached
            wb.seconds = time.monotonic() - start
            return wb

    return PinnedLLVMTritonRecipe


def _pinned_factory(config):
    return _pinned_recipe_class()(config)


register_recipe(PINNED_RECIPE, _pinned_factory)
