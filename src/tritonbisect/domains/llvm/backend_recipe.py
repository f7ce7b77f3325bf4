"""The "backend-llvm" recipe: bisect a backend's own LLVM (ROCm/llvm-project for AMD) through
one Triton commit, the culprit that bumped that backend's pin.

At a backend LLVM commit: build that LLVM (cached by commit and options; with the fork's
patches replayed when a pin is a fork commit, as in the core descent), build the backend's
codegen library from the Triton tree against it (cached), install the Triton wheel (always
the same commit: a cache hit after the first step) and run the test with
TRITON_<BACKEND>_CODEGEN_PATH pointing at the library. The library is loaded at run time, so
no step rebuilds Triton.

Config: the "llvm-triton" recipe's keys, plus
  backend     "amd" or "nvidia"
  llvm_dir    the core llvm-project checkout the Triton commit's own LLVM is built from
  revisions   {backend LLVM sha: "<llvm_hash>-<build_number>"} of the pins (the endpoints'
              libraries are then the very ones the Triton phase built)
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from tritonbisect.builds.gitutil import GitFailure
from tritonbisect.builds.recipes import PrepareResult, StepContext
from tritonbisect.core.gitrun import GitError
from tritonbisect.core.outcome import Kind
from tritonbisect.domains.llvm.triton_recipe import LLVMTritonRecipe
from tritonbisect.domains.triton.backend_libs import Override, backend_llvm

RECIPE = "backend-llvm"


class BackendLLVMRecipe(LLVMTritonRecipe):
    name = RECIPE

    def __init__(self, config: Mapping[str, Any]) -> None:
        super().__init__(config)
        self.backend = str(config.get("backend") or "amd")
        # the Triton commit is built against its own core LLVM, as in the Triton phase
        self.llvm_dir = Path(config["llvm_dir"]) if config.get("llvm_dir") else None
        self.revisions: dict[str, str] = dict(config.get("revisions") or {})

    def prepare(self, commit: str, ctx: StepContext) -> PrepareResult:
        start = time.monotonic()
        ctx.log_dir.mkdir(parents=True, exist_ok=True)
        label = f"{self.backend.upper()} LLVM"
        triton_commit = self.triton_commit_for(commit)
        if not triton_commit:
            return PrepareResult(Kind.INFRA, f"no Triton commit for {label} {commit[:12]}")
        try:
            llvm_commit, replayed = self.llvm_tree(commit, ctx)
            if llvm_commit is None:
                assert replayed is not None  # a conflict
                return PrepareResult(Kind.BUILD_FAILED, replayed.describe(), seconds=time.monotonic() - start)
            llvm, key = backend_llvm(self, self.backend, Path(ctx.worktree), llvm_commit, ctx,
                                     worktree=Path(ctx.worktree))
            if llvm.kind is not Kind.PASS or llvm.prefix is None:
                return PrepareResult(llvm.kind, f"{label} {llvm_commit[:12]}: {llvm.reason}", cached=llvm.cached,
                                     seconds=time.monotonic() - start, log=llvm.log)
            revision = self.revisions.get(llvm_commit) or f"{llvm_commit}-0"
            self.backend_overrides = {self.backend: Override(llvm.prefix, key, revision)}
            tree = self.triton_worktree(ctx, triton_commit)
        except (GitError, GitFailure, OSError) as exc:
            return PrepareResult(Kind.INFRA, str(exc), seconds=time.monotonic() - start)
        done = self.build_and_install(tree, triton_commit, ctx, start=start)
        where = replayed.describe() if replayed is not None else f"{label} {llvm_commit[:12]}"
        head = f"{where} {'cached' if llvm.cached else 'built'}"
        if done.kind is Kind.PASS and "triton" not in done.built:
            head += f"; Triton {triton_commit[:12]} not rebuilt (its codegen library is loaded at run time)"
        done.reason = f"{head}; {done.reason}"
        if not llvm.cached:
            done.built = (f"llvm-{self.backend}", *done.built)
            done.cached = False
            done.log = done.log or llvm.log
        return done


__all__ = ["RECIPE", "BackendLLVMRecipe"]
