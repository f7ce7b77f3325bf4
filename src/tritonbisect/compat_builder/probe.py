"""The compatibility probe: does Triton commit T build (and import) against LLVM commit L?

1. build LLVM at L (cached by commit + config: `build.llvm_recipe.build_llvm`);
2. build T's wheel against it, install it into the target venv, run the smoke command in T's
   tree -- through the build layer's "llvm-triton" recipe, so every artifact lands in the
   same cache the `tritonbisect llvm` bisect reads (keys: Triton commit + {"llvm": L}).

With `sandbox`, Triton's build and smoke test run in builds/sandbox.py's sandbox (the tree
may hold a model's edits); LLVM, upstream code, is built as usual.

Verdicts: COMPATIBLE; INCOMPATIBLE (Triton fails to build, install-import or smoke against
L); SKIP (LLVM's own build failed: never incompatible, never sent to the AI). A machine
problem (missing tool, disk full, ...) raises AbortError: it says nothing about L or T.
"""

from __future__ import annotations

import shutil
import time
from dataclasses import dataclass
from pathlib import Path

from tritonbisect.builds.gitutil import GitFailure, base_build_env, checkout_worktree
from tritonbisect.builds.llvm_build import LLVMConfig, build_llvm, llvm_cache_key
from tritonbisect.builds.recipes import StepContext, TestSpec
from tritonbisect.builds.store import open_cache
from tritonbisect.compat_builder import gitops
from tritonbisect.core.errors import AbortError, InputError
from tritonbisect.core.outcome import Kind
from tritonbisect.domains.llvm.triton_recipe import LLVMTritonRecipe

COMPATIBLE = "compatible"
INCOMPATIBLE = "incompatible"
SKIP = "skip"

# The search's verdict for each probe verdict: the map looks for the first LLVM commit the
# current Triton does NOT build against, so "bad" = incompatible.
SEARCH_VERDICT = {COMPATIBLE: "good", INCOMPATIBLE: "bad", SKIP: "skip"}

DEFAULT_SMOKE = "python -c 'import triton'"


@dataclass
class ProbeResult:
    verdict: str
    reason: str
    stage: str  # where it ended: llvm | triton | install | smoke | done
    log: Path | None  # the log of the failing stage (the full Triton build log when incompatible)
    llvm_built: bool  # an LLVM build ran (not served from the cache)
    triton_built: bool  # a Triton build ran
    seconds: float
    source: Path | None = None  # the Triton tree that was built (its paths appear in the log)

    def to_dict(self) -> dict:
        return {
            "source": str(self.source) if self.source else None,
            "verdict": self.verdict,
            "reason": self.reason,
            "stage": self.stage,
            "log": str(self.log) if self.log else None,
            "llvm_built": self.llvm_built,
            "triton_built": self.triton_built,
            "seconds": round(self.seconds, 2),
        }


class Prober:
    def __init__(
        self,
        *,
        triton_repo: Path,
        llvm_repo: Path,
        workdir: Path,
        llvm_source: Path,
        smoke: str = DEFAULT_SMOKE,
        llvm_config: LLVMConfig | None = None,
        timeout: float | None = None,
        venv: str | None = None,
        python: str | None = None,
        cache_dir: str | None = None,
        sandbox: bool = False,
        fork: dict | None = None,
    ) -> None:
        self.llvm_repo = Path(llvm_repo)
        self.workdir = Path(workdir)
        self.llvm_source = Path(llvm_source)  # our own LLVM worktree (moved between commits)
        self.llvm_config = llvm_config or LLVMConfig()
        self.cache = open_cache(cache_dir, workdir=self.workdir)
        config = {
            "test": TestSpec(smoke).to_dict(),
            "triton_dir": str(triton_repo),
            "llvm": self.llvm_config.to_dict(),
            "cache_dir": str(self.cache.root),
            "venv": venv,
            "python": python,
            "build_timeout": timeout,
        }
        if fork:  # a bump into a fork: each LLVM commit is probed with the fork's patches
            config["fork"] = fork
        self.recipe = LLVMTritonRecipe(config)
        self._triton_commit = ""
        self.recipe.with_assigner(lambda _llvm: self._triton_commit)
        self.timeout = timeout
        self.sandbox = sandbox  # Triton's build, install check and smoke test in the sandbox

    # --- facts the search uses --------------------------------------------------------
    def llvm_cached(self, commits: list[str]) -> set[str]:
        """The LLVM commits whose build is already in the cache (cheap points for the search)."""
        repo_id = self.recipe.repo_id(self.llvm_repo)
        env = base_build_env()
        return {
            c for c in commits
            if self.cache.get(llvm_cache_key(repo_id, c, self.llvm_config, env)) is not None
        }

    # --- the probe --------------------------------------------------------------------
    def probe(self, triton_commit: str, llvm_commit: str, log_dir: Path, *, clean: bool = False) -> ProbeResult:
        """Probe one pair. `clean`: forget recorded Triton build failures of this commit and
        wipe its build outputs first, so the verdict comes from a fresh build."""
        start = time.monotonic()
        log_dir.mkdir(parents=True, exist_ok=True)
        try:
            checkout_worktree(self.llvm_repo, self.llvm_source, llvm_commit)
        except GitFailure as exc:  # e.g. a commit of a map that this clone has not fetched
            raise InputError(f"LLVM commit {llvm_commit[:12]} cannot be checked out ({exc}); fetch it into "
                             f"{self.llvm_repo} first") from None
        ctx = StepContext(worktree=self.llvm_source, log_dir=log_dir, worker=0,
                          timeout=self.timeout, workdir=self.workdir, sandbox=self.sandbox)
        workdir = self.recipe.workdir(ctx)
        try:  # a fork's patches replayed on it (the recipe's own prepare replays them again)
            built_as, replayed = self.recipe.llvm_tree(llvm_commit, ctx)
        except Exception as exc:  # noqa: BLE001 - git failing here is the machine's problem
            raise AbortError(f"fork patches at LLVM {llvm_commit[:12]}: {exc}") from None
        if built_as is None:
            assert replayed is not None  # a conflict
            return ProbeResult(SKIP, replayed.describe(), "llvm", None, False, False, time.monotonic() - start)
        llvm = build_llvm(
            self.llvm_source, built_as, cache=self.cache, config=self.llvm_config,
            build_dir=workdir / "llvm-build" / f"{self.llvm_source.parent.name}-{self.llvm_source.name}",
            log=log_dir / "llvm-build.log", repo_id=self.recipe.repo_id(self.llvm_source),
            env=base_build_env(), timeout=self.timeout,
        )

        tree: Path | None = None

        def result(verdict: str, reason: str, stage: str, log: Path | None, triton_built=False) -> ProbeResult:
            return ProbeResult(verdict, reason, stage, log, not llvm.cached, triton_built,
                               time.monotonic() - start, tree)

        if llvm.kind is Kind.INFRA:
            raise AbortError(f"LLVM build at {llvm_commit[:12]}: {llvm.reason} (log: {llvm.log})")
        if llvm.kind is not Kind.PASS:
            return result(SKIP, f"LLVM {llvm_commit[:12]} itself does not build: {llvm.reason}", "llvm", llvm.log)

        self._triton_commit = triton_commit
        try:
            tree = self.recipe.triton_worktree(ctx, triton_commit)
        except GitFailure as exc:
            raise InputError(f"Triton commit {triton_commit[:12]} cannot be checked out ({exc}); fetch it into "
                             f"{self.recipe.triton_dir} first") from None
        if clean:
            self.cache.forget_failures(triton_commit)
            gitops.git(tree, "clean", "-fdxq")
        prepared = self.recipe.prepare(llvm_commit, ctx)
        build_log = log_dir / "build.log"
        triton_built = build_log.is_file()
        if prepared.kind is Kind.INFRA:
            raise AbortError(f"probe of Triton {triton_commit[:12]} at LLVM {llvm_commit[:12]}: "
                             f"{prepared.reason} (log: {prepared.log})")
        if prepared.kind is not Kind.PASS:
            log = prepared.log
            if log is not None and log != build_log and Path(log).is_file():
                # a failure record served from the cache: keep its log with this probe
                shutil.copyfile(log, build_log)
                log = build_log
            return result(INCOMPATIBLE, prepared.reason, "triton", log, triton_built)
        run = self.recipe.test(llvm_commit, ctx)
        if run.timed_out:
            raise AbortError(f"smoke test of Triton {triton_commit[:12]} timed out (log: {run.log})")
        if run.returncode == 127:
            # bash could not find or start the command: a fact about the machine (or what
            # the sandbox lets it see), never about this Triton and this LLVM
            where = " in the sandbox" if self.sandbox else ""
            raise AbortError(f"the smoke command could not be started{where} (exit 127: command not found): "
                             f"check --smoke and the target environment (log: {run.log})")
        if run.returncode != 0:
            return result(INCOMPATIBLE, f"smoke test failed (exit {run.returncode})", "smoke", run.log, triton_built)
        return result(COMPATIBLE, prepared.reason, "done", None, triton_built)
