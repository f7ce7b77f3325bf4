"""The steps a phase has running: started on the worker pool, heard back as they finish, each
journaled before anything is decided from it, stopped when their verdict no longer matters,
and drained when the phase has its answer or aborts."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import FIRST_COMPLETED, Future, wait
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tritonbisect.core.outcome import Verdict
from tritonbisect.executors.choose import StepPool
from tritonbisect.executors.runner import Reuse, StepRequest, StepResult
from tritonbisect.session.phase_context import PhaseContext

# A person's verdict (session/manual.py): the step's result as judged, and what the journal
# record says of the judging.
Judge = Callable[[StepResult, str], tuple[StepResult, dict[str, Any] | None]]


@dataclass
class InFlight:
    """A step started and not heard back yet."""

    commit: str
    role: str
    round: int | None
    request: StepRequest
    future: Future[StepResult]
    cancelled: bool = False  # stopped because its verdict no longer matters: not journaled


@dataclass
class Finished:
    """A step heard back."""

    step: InFlight
    result: StepResult
    rec: dict[str, Any] | None  # its journal record; None when it was stopped (not journaled)
    corrected: bool = False  # while it was judged, a person took an earlier answer back

    @property
    def aborted(self) -> bool:
        return self.result.verdict == Verdict.ABORT


class StepQueue:
    """Runs a phase's steps on a worker pool (see the module docstring)."""

    def __init__(
        self, ctx: PhaseContext, *, baseline: Callable[[str], tuple[float, ...] | None] = lambda _commit: None,
        reference: Callable[[str], str | None] = lambda _commit: None,
    ) -> None:
        self.journal = ctx.journal
        self.ui = ctx.ui
        self.phase = ctx.journal.phase
        self.steps_dir = ctx.steps_dir
        self.subject = ctx.subject
        self.baseline = baseline
        self.reference = reference  # --perf-design paired: what a step is paired with by default
        self.judge: Judge | None = None
        self.pool: StepPool | None = None
        self._steps: dict[Future[StepResult], InFlight] = {}
        self._dir_counter = len(list(self.steps_dir.iterdir())) if self.steps_dir.is_dir() else 0

    @contextlib.contextmanager
    def running_on(self, pool: StepPool) -> Iterator[StepQueue]:
        """Steps run on `pool` inside the block; leaving it (Ctrl-C included) stops what runs
        and closes the pool."""
        self.pool = pool
        try:
            yield self
        except BaseException:
            self.cancel_all()
            raise
        finally:
            self.pool = None
            pool.close()

    # starting steps ----------------------------------------------------------------------

    def _step_dir(self, commit: str, role: str) -> Path:
        self._dir_counter += 1
        while True:
            path = self.steps_dir / f"{self._dir_counter:04d}-{self.phase}-{role}-{commit[:12]}"
            if not path.exists():
                return path
            self._dir_counter += 1

    def _start(self, commit: str, role: str, *, record: bool, reuse: Reuse, reference: str | None = None,
               verify: bool = False) -> tuple[StepRequest, Future[StepResult]]:
        request = StepRequest(
            commit=commit, log_dir=self._step_dir(commit, role), record=record,
            baseline=self.baseline(commit), reuse=reuse,
            reference=reference or self.reference(commit), verify=verify,
        )
        # where it runs (a Ray node), once a worker takes it
        request.notify = lambda stage, node: self.ui.step_running(commit, stage, node)
        assert self.pool is not None, "steps start inside running_on"
        future = self.pool.submit(request)
        self.ui.step_started(self.phase, commit, role, self.subject(commit))
        return request, future

    def submit(self, commit: str, role: str, round_: int | None, *, record: bool = False,
               reuse: Reuse = Reuse.NO, reference: str | None = None, verify: bool = False) -> InFlight:
        """Start a step; `reference` (default: the queue's) and `verify` (an A/B of the
        sandwich) pair it under --perf-design paired."""
        request, future = self._start(commit, role, record=record, reuse=reuse, reference=reference,
                                      verify=verify)
        step = InFlight(commit, role, round_, request, future)
        self._steps[future] = step
        return step

    def run_now(self, commit: str, role: str) -> StepResult:
        """Run one step and wait for it, outside the queue (a person's "retry")."""
        _request, future = self._start(commit, role, record=False, reuse=Reuse.NO)
        return future.result()

    def keep_builds(self, commits: Iterable[str]) -> None:
        """Ask the pool to keep these commits' builds where they are (see executors/runner.py),
        and, while it keeps any, those of the steps that ended and were not heard back yet:
        the next call, once they are, says whether they stay."""
        if self.pool is not None:
            commits = list(commits)
            if commits:
                commits += [s.commit for s in self._steps.values() if s.future.done() and not s.cancelled]
            self.pool.keep_builds(commits)

    # what runs -----------------------------------------------------------------------------

    def __len__(self) -> int:
        return len(self._steps)

    def live(self) -> list[InFlight]:
        """The steps whose verdict is still wanted."""
        return [s for s in self._steps.values() if not s.cancelled]

    def flying(self) -> frozenset[str]:
        return frozenset(s.commit for s in self.live())

    # hearing back ----------------------------------------------------------------------------

    def _wait_done(self) -> list[InFlight]:
        while self._steps:
            done, _ = wait(list(self._steps), timeout=0.5, return_when=FIRST_COMPLETED)
            if done:
                return [self._steps.pop(fut) for fut in done]
        return []

    def finished(self, *, aborts: bool = True) -> Iterator[Finished]:
        """Wait until at least one step finishes; yield each finished one, journaled first.

        A step that was stopped is not journaled (its rec is None); with aborts=False neither
        is one whose infrastructure failed (when nothing more will be decided from it)."""
        for step in self._wait_done():
            result = step.future.result()
            if step.cancelled or result.cancelled or (not aborts and result.verdict == Verdict.ABORT):
                self._stopped(step.commit)
                yield Finished(step, result, None)
                continue
            extra = None
            corrected = False
            if self.judge is not None:
                before = len(self.journal)
                result, extra = self.judge(result, step.role)
                corrected = len(self.journal) != before  # an answer was taken back at the prompt
            rec = self.journal.step(result, step.role, step.round, extra)
            yield Finished(step, result, rec, corrected)

    # stopping --------------------------------------------------------------------------------

    def cancel(self, step: InFlight) -> None:
        """Stop a step whose verdict no longer matters: its worker takes another commit."""
        step.request.token.cancel()
        step.cancelled = True
        self._stopped(step.commit)

    def _stopped(self, commit: str) -> None:
        """The display stops showing a step that will never be heard back."""
        self.ui.step_stopped(commit)

    def cancel_all(self) -> None:
        for step in self._steps.values():
            step.request.token.cancel()

    def settle(self) -> Iterator[dict[str, Any]]:
        """Stop every step and wait for them; yield the records of those that had finished."""
        self.cancel_all()
        while self._steps:
            for done in self.finished(aborts=False):
                if done.rec is not None:
                    yield done.rec

    def abandon(self) -> None:
        """Stop every step and wait for them, journaling nothing (the phase aborts)."""
        self.cancel_all()
        while self._steps:
            self._wait_done()
