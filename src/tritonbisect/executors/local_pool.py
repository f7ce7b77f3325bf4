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
from tritonbisect.core.clock import now_iso
from tritonbisect.core.outcome import Kind, Policy, Verdict
from tritonbisect.core.process import track_token, untrack_token
from tritonbisect.core.secrets import pass_through
from tritonbisect.executors.pool_settings import ExecutorSettings
from tritonbisect.executors.runner import (
    Reuse,
    StepRequest,
    StepResult,
    StepSettings,
    execute_with_retry,
    prepare_reference,
    run_in_worktree,
)
from tritonbisect.executors.worktree import Worktree, acquire_worktree

if TYPE_CHECKING:  # pragma: no cover
    from concurrent.futures import Future

    from tritonbisect.executors.paired import ReferenceSide


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
        # --perf-design paired: the commits steps are paired with; a checkout that holds one's
        # build keeps it for the next paired step (no other step builds there)
        self._references: set[str] = set()

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
            checkout = (same or self._free(idle) or [self._new()])[0]
            checkout.busy = True
            return checkout, False

    def _free(self, idle: list[_Checkout]) -> list[_Checkout]:
        """Idle checkouts whose build nobody asked to keep (see `_take`); under the lock."""
        keeping = bool(self._keep)
        return [c for c in idle if c.holds is None or (
            c.holds not in self._keep and c.holds not in self._references
            and not (keeping and c.ended_at >= self._keep_calls))]

    def _new(self) -> _Checkout:
        checkout = _Checkout(len(self._checkouts))
        self._checkouts.append(checkout)
        return checkout

    def _take_reference(self, commit: str) -> tuple[_Checkout, bool]:
        """The checkout a paired step's reference runs in, and whether it holds its build:
        one that does, else one free (a new one at most: a worker's second)."""
        with self._lock:
            self._references.add(commit)
            idle = [c for c in self._checkouts if not c.busy]
            held = [c for c in idle if c.holds == commit and c.tree is not None]
            checkout = (held or self._free(idle) or [self._new()])[0]
            checkout.busy = True
            return checkout, bool(held)

    def submit(self, request: StepRequest) -> Future[StepResult]:
        track_token(request.token)
        return self._executor.submit(self._run, request)

    def _run(self, request: StepRequest) -> StepResult:
        paired = request.reference is not None and self.policy.perf is not None and self.policy.perf.paired
        # the reference first: the checkout that holds its build is then not taken for the candidate's
        ref = self._take_reference(request.reference)[0] if paired and request.reference else None
        checkout, reuse = self._take(request)
        try:
            return execute_with_retry(lambda d: self._attempt(request, checkout, reuse, d, ref), request.log_dir)
        finally:
            with self._lock:
                for c in (checkout, ref):
                    if c is not None:
                        c.busy = False
                        c.ended_at = self._keep_calls
            untrack_token(request.token)

    def _reference(self, request: StepRequest, ref: _Checkout, log_dir: Path) -> ReferenceSide | StepResult:
        """The paired step's reference prepared in its checkout (nothing done where the
        checkout holds its build), or the step's result when it could not be."""
        assert request.reference is not None
        commit = request.reference
        with self._lock:
            held = ref.holds == commit and ref.tree is not None
            if not held:
                ref.holds = None
        kept = None
        if held:
            assert ref.tree is not None
            kept = PrepareResult(Kind.PASS, f"the reference's build, kept in worktree w{ref.tree.index}",
                                 cached=True, log=Path(ref.build_log) if ref.build_log else None, kept=True)
        side = prepare_reference(lambda: self._worktree(ref), self.recipe, commit, log_dir,
                                 self.step_settings, token=request.token, kept=kept)
        if isinstance(side, str):
            now = now_iso("milliseconds")
            return StepResult(commit=request.commit, kind=Kind.INFRA, verdict=Verdict.ABORT,
                              reason=side, worker=ref.position, started=now, finished=now, seconds=0.0,
                              log_dir=str(log_dir), cancelled=request.token.cancelled)
        with self._lock:
            ref.holds, ref.build_log = commit, side.build.get("log")
        return side

    def _attempt(self, request: StepRequest, checkout: _Checkout, reuse: bool, log_dir: Path,
                 ref: _Checkout | None = None) -> StepResult:
        reference = None
        if ref is not None:
            prepared = self._reference(request, ref, log_dir)
            if isinstance(prepared, StepResult):
                return prepared
            reference = prepared
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
            reference=reference, verify=request.verify,
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
