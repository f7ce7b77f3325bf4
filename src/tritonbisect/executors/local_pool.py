"""The local executor's worker pool: steps on `jobs` threads, each step in a git worktree of
the pool's own, which keeps the build of the last commit built in it until another step
builds there."""

from __future__ import annotations

import threading
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from tritonbisect.builds.recipes import PrepareResult, Recipe
from tritonbisect.core.outcome import Kind, Policy
from tritonbisect.core.process import track_token, untrack_token
from tritonbisect.core.secrets import pass_through
from tritonbisect.executors.pool_settings import ExecutorSettings
from tritonbisect.executors.runner import (
    Reuse,
    StepRequest,
    StepResult,
    StepSettings,
    execute_with_retry,
    run_in_worktree,
)
from tritonbisect.executors.worktree import Worktree, acquire_worktree

if TYPE_CHECKING:  # pragma: no cover
    from concurrent.futures import Future


@dataclass
class _Checkout:
    """One of a pool's worktrees, and the build it holds."""

    position: int  # in the pool's list: the worker number of a step whose worktree failed
    tree: Worktree | None = None  # made on first use
    busy: bool = False
    holds: str | None = None  # the commit whose successful build is in it
    build_no: int = 0  # which of the pool's builds that was
    build_log: str | None = None
    # the pool's keep_builds calls when its last step ended: a step that ended after the
    # latest call is one whose verdict the driver may not have heard yet
    ended_at: int = -1


class WorkerPool:
    """Runs StepRequests on `jobs` threads, each step in a worktree of the pool's own.

    A worktree holds the build of the last commit built in it until another step builds
    there. `keep_builds(commits)` asks the pool to leave those builds where they are, and
    those of the steps that ended since (the caller has not heard them yet): other steps then
    take another worktree (made when none is free, so at most len(commits) + jobs more than
    jobs). A request with `reuse` runs in a worktree that holds its commit's build and
    skips the build (Reuse.LATEST: only when no other build started since, for a build that
    changes things outside its worktree).
    """

    def __init__(
        self, settings: ExecutorSettings, repo: Path, workdir: Path, repo_id: str, recipe: Recipe, policy: Policy
    ) -> None:
        self.repo = repo
        self.workdir = workdir
        self.repo_id = repo_id
        self.jobs = max(1, settings.jobs)
        self.recipe = recipe
        self.policy = policy
        pass_through(settings.pass_env)  # the secrets the user lets builds and tests see
        self.step_settings = StepSettings(
            policy=policy, repeat=settings.repeat, env=dict(settings.env), timeout=settings.timeout, workdir=workdir,
            cache_dir=settings.cache_dir, workers=self.jobs, sandbox=settings.sandbox,
        )
        from concurrent.futures import ThreadPoolExecutor

        self._executor = ThreadPoolExecutor(max_workers=self.jobs, thread_name_prefix="tb-worker")
        self._checkouts: list[_Checkout] = []
        self._lock = threading.Lock()  # the bookkeeping of the worktrees, held briefly
        self._alloc_lock = threading.Lock()  # making a worktree (git), held longer
        self._keep: frozenset[str] = frozenset()
        self._keep_calls = 0  # keep_builds calls so far
        self._builds = 0  # builds started so far

    def keep_builds(self, commits: Iterable[str]) -> None:
        with self._lock:
            self._keep = frozenset(commits)
            self._keep_calls += 1

    def _worktree(self, checkout: _Checkout) -> Worktree:
        with self._alloc_lock:
            if checkout.tree is None:
                taken = {c.tree.index for c in self._checkouts if c.tree is not None}
                start = 0
                while True:
                    wt = acquire_worktree(self.repo, self.workdir, self.repo_id, start=start,
                                          sandboxed=self.step_settings.sandbox)
                    if wt.index not in taken:
                        break
                    start = wt.index + 1  # pragma: no cover (flock is per open file)
                checkout.tree = wt
            return checkout.tree

    def _take(self, request: StepRequest) -> tuple[_Checkout, bool]:
        """The worktree a step runs in, and whether it skips the build there."""
        with self._lock:
            idle = [c for c in self._checkouts if not c.busy]
            if request.reuse is not Reuse.NO:
                for c in idle:
                    if c.holds == request.commit and c.tree is not None and (
                            request.reuse is Reuse.KEPT or c.build_no == self._builds):
                        c.busy = True
                        return c, True
            # a worktree that holds this commit builds it again at no cost; else one whose
            # build nobody asked to keep; else a new one. While builds are kept, a step that
            # ended since the driver last said which (its verdict not heard yet) keeps its
            # build too: the driver may ask to keep it
            same = [c for c in idle if c.holds == request.commit]
            keeping = bool(self._keep)
            free = same or [c for c in idle if c.holds is None or (
                c.holds not in self._keep and not (keeping and c.ended_at >= self._keep_calls))]
            checkout = free[0] if free else _Checkout(len(self._checkouts))
            if not free:
                self._checkouts.append(checkout)
            checkout.busy = True
            return checkout, False

    def submit(self, request: StepRequest) -> Future[StepResult]:
        track_token(request.token)
        return self._executor.submit(self._run, request)

    def _run(self, request: StepRequest) -> StepResult:
        checkout, reuse = self._take(request)
        try:
            return execute_with_retry(lambda d: self._attempt(request, checkout, reuse, d), request.log_dir)
        finally:
            with self._lock:
                checkout.busy = False
                checkout.ended_at = self._keep_calls
            untrack_token(request.token)

    def _attempt(self, request: StepRequest, checkout: _Checkout, reuse: bool, log_dir: Path) -> StepResult:
        kept = None
        if reuse:
            assert checkout.tree is not None
            kept = PrepareResult(
                Kind.PASS, f"the build of an earlier step, kept in worktree w{checkout.tree.index}",
                cached=True, log=Path(checkout.build_log) if checkout.build_log else None, kept=True,
            )
        else:
            with self._lock:
                self._builds += 1
                number = self._builds
                checkout.holds = None
        result = run_in_worktree(
            lambda: self._worktree(checkout), self.recipe, request.commit, log_dir,
            self.step_settings, token=request.token, record=request.record,
            baseline=request.baseline, worker=checkout.position, kept=kept,
        )
        build = result.build or {}
        if kept is None and build.get("kind") == Kind.PASS.value:
            with self._lock:
                checkout.holds, checkout.build_no, checkout.build_log = request.commit, number, build.get("log")
        return result

    def close(self) -> None:
        self._executor.shutdown(wait=True, cancel_futures=True)
        for checkout in self._checkouts:
            if checkout.tree is not None:
                checkout.tree.release()
        self._checkouts.clear()
