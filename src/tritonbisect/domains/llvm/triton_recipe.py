"""The "llvm-triton" recipe: bisect llvm-project through Triton.

At an LLVM commit: build LLVM (cached by commit + config), check out the Triton commit the
compatibility map assigns to it in a worktree this worker owns, build that Triton against
the LLVM (cached by both commits; the same key a "triton" step with llvm_dir uses, so the
descent's endpoints cost no new build), install it, and run the test in the Triton worktree.

Config: the "triton" recipe's keys (see triton_recipe) plus
  triton_dir      the user's Triton repository (a worker-owned worktree is made from it)
  triton_commits  {llvm sha: triton sha} assignment (from the compatibility map)
  triton_commit   the Triton commit for LLVM commits not in triton_commits
  fork            when a pin is a fork commit (fork.py): {"patches": [fork commits, oldest
                  first], "pins": {base: pin}} -- each LLVM commit is built with the patches
                  replayed (patch_replay.py); an endpoint base is built as its pin
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from tritonbisect.builds.gitutil import GitFailure, checkout_worktree
from tritonbisect.builds.recipes import PrepareResult, StepContext, TestRun
from tritonbisect.builds.target_test import run_test
from tritonbisect.core.gitrun import GitError
from tritonbisect.core.outcome import Kind
from tritonbisect.domains.llvm.patch_replay import REPLAY_FILE, Replayed, replay
from tritonbisect.domains.triton.recipe import TritonRecipe

RECIPE = "llvm-triton"


class LLVMTritonRecipe(TritonRecipe):
    """The "llvm-triton" recipe: the bisected repository is llvm-project."""

    name = RECIPE

    def __init__(self, config: Mapping[str, Any]) -> None:
        super().__init__(config)
        if not config.get("triton_dir"):
            raise ValueError("llvm-triton recipe needs triton_dir")
        self.triton_dir = Path(config["triton_dir"])
        self.llvm_dir = None  # the bisected repository is LLVM itself
        self.assignment: dict[str, str] = dict(config.get("triton_commits") or {})
        self.default_triton: str | None = config.get("triton_commit")
        self._triton_for: Callable[[str], str] | None = None
        fork = config.get("fork") or {}
        self.patches: list[str] = list(fork.get("patches") or [])
        self.fork_pins: dict[str, str] = dict(fork.get("pins") or {})

    def with_assigner(self, fn: Callable[[str], str]) -> LLVMTritonRecipe:
        """Use a callable (LLVM sha → Triton sha) instead of the config's assignment."""
        self._triton_for = fn
        return self

    def triton_commit_for(self, llvm_commit: str) -> str | None:
        if self._triton_for is not None:
            return self._triton_for(llvm_commit)
        return self.assignment.get(llvm_commit, self.default_triton)

    def triton_worktree(self, ctx: StepContext, triton_commit: str) -> Path:
        """This worker's Triton worktree, checked out at triton_commit (build outputs kept)."""
        root = self.workdir(ctx) / "worktrees" / f"triton-{self.repo_id(self.triton_dir)[:12]}"
        return checkout_worktree(self.triton_dir, root / f"for-{self.worker_tag(ctx)}", triton_commit)

    def prepare(self, commit: str, ctx: StepContext) -> PrepareResult:
        start = time.monotonic()
        ctx.log_dir.mkdir(parents=True, exist_ok=True)
        triton_commit = self.triton_commit_for(commit)
        if not triton_commit:
            return PrepareResult(Kind.INFRA, f"no Triton commit assigned to LLVM {commit[:12]}")
        try:
            llvm_commit, replayed = self.llvm_tree(commit, ctx)
        except (GitError, GitFailure, OSError) as exc:
            return PrepareResult(Kind.INFRA, f"fork patches: {exc}", seconds=time.monotonic() - start)
        if llvm_commit is None:
            assert replayed is not None  # a conflict
            return PrepareResult(Kind.BUILD_FAILED, replayed.describe(), seconds=time.monotonic() - start)
        llvm = self.build_llvm_at(ctx.worktree, llvm_commit, ctx)
        if llvm.kind is not Kind.PASS:
            return PrepareResult(llvm.kind, llvm.reason, cached=llvm.cached,
                                 seconds=time.monotonic() - start, log=llvm.log)
        try:
            tree = self.triton_worktree(ctx, triton_commit)
        except GitFailure as exc:
            return PrepareResult(Kind.INFRA, str(exc), seconds=time.monotonic() - start)
        done = self.build_and_install(tree, triton_commit, ctx, llvm_commit=llvm_commit, llvm=llvm,
                                      start=start)
        if replayed is not None:
            done.reason = f"{replayed.describe()}; {done.reason}"
        elif llvm_commit != commit:
            done.reason = f"the pin {llvm_commit[:12]} itself (fork); {done.reason}"
        return done

    def llvm_tree(self, commit: str, ctx: StepContext) -> tuple[str | None, Replayed | None]:
        """The LLVM commit to build for upstream `commit`: itself; at a fork range's endpoint
        the pin; else `commit` with the fork's patches replayed (None on a conflict). The
        worktree is left at it; what was replayed goes to the step's fork-patches.json."""
        if not self.patches and not self.fork_pins:
            return commit, None
        pinned = self.fork_pins.get(commit)
        if pinned is not None:  # an endpoint: the pin as pinned, nothing replayed on it
            if pinned != commit:
                checkout_worktree(Path(ctx.worktree), Path(ctx.worktree), pinned)
            return pinned, None
        replayed = replay(Path(ctx.worktree), commit, self.patches)
        ctx.log_dir.mkdir(parents=True, exist_ok=True)
        (ctx.log_dir / REPLAY_FILE).write_text(json.dumps(replayed.to_dict(), indent=1), encoding="utf-8")
        return replayed.commit, replayed

    def test(self, commit: str, ctx: StepContext, *, record: bool = False) -> TestRun:
        triton_commit = self.triton_commit_for(commit) or ""
        tree = self.triton_worktree(ctx, triton_commit)
        tctx = self.test_context(ctx, tree)
        return run_test(self.target_env(ctx), self.test_spec, triton_commit, tctx, record=record,
                        runner=self.runner(ctx, tree))

__all__ = ["RECIPE", "LLVMTritonRecipe"]
