"""The search loop of a phase, whatever the strategy: keeps the workers busy with the commits
the strategy plans, hears each step back (journaled before the strategy sees it), stops
steps whose verdict no longer matters, and ends with the strategy's answer, a switch to the
flake-aware search, or an abort."""

from __future__ import annotations

from collections.abc import Callable

from tritonbisect.search.classic import Found, Inconclusive
from tritonbisect.session.builds_at_hand import BuildsAtHand, built
from tritonbisect.session.journal import ROLE_SEARCH
from tritonbisect.session.observer import Progress
from tritonbisect.session.phase_context import PhaseContext
from tritonbisect.session.step_queue import StepQueue
from tritonbisect.session.strategy import CasesFound, Strategy, Switched

# Asked again with nothing running and nothing started this many times, a strategy is stuck.
_STUCK_AFTER = 2


class SearchLoop:
    """See the module docstring."""

    def __init__(self, ctx: PhaseContext, queue: StepQueue, builds: BuildsAtHand, *,
                 progress: Callable[[], Progress]) -> None:
        self.queue = queue
        self.ui = ctx.ui
        self.phase = queue.phase
        self.jobs = ctx.jobs
        self.in_set = frozenset(ctx.cands.order)
        self.builds = builds
        self.commits = ctx.cands.order
        self.subject = ctx.subject
        self.progress = progress
        self.abort = ctx.abort

    def run(self, strategy: Strategy) -> Found | Inconclusive | CasesFound | Switched | None:
        """Search with `strategy` until it answers or hands over; None when the phase aborted."""
        round_ = max((s.round or 0 for s in self.queue.journal.steps() if s.role == ROLE_SEARCH), default=0)
        cached = self.builds.cached(self.commits)
        self.queue.keep_builds(strategy.keep())
        stuck = 0
        while True:
            live = self.queue.live()
            flying = frozenset(s.commit for s in live)
            free = self.jobs - len(live)
            plan = strategy.plan(free=free, flying=flying, live=len(live), cached=cached)
            if plan.switch:
                return Switched()
            if plan.answer is not None:
                for rec in self.queue.settle():
                    self.ui.step_finished(self.phase, rec, self.subject(rec["commit"]), None)
                return plan.answer
            started = 0
            for commit in plan.test:
                if started >= free:
                    break
                if commit not in flying:
                    # a re-test goes where a checkout still holds the commit's build
                    self.queue.submit(commit, ROLE_SEARCH, round_ + 1, reuse=self.builds.reuse)
                    started += 1
            if started or plan.again:
                stuck = 0
                continue
            if not self.queue:
                stuck += 1
                if stuck > _STUCK_AFTER:
                    raise RuntimeError(f"{strategy.label} made no progress ({plan.seen!r})")
                continue
            learned = False
            for done in self.queue.finished():
                if done.rec is None:  # stopped: its verdict no longer mattered
                    continue
                commit = done.step.commit
                if done.corrected:
                    strategy.corrected()
                if done.aborted:
                    self.ui.step_finished(self.phase, done.rec, self.subject(commit), None)
                    self.abort(f"{commit[:12]}: {done.result.reason}")
                    return None
                if self.builds.caches and built(done.rec):
                    cached = cached | {commit}
                if done.step.role == ROLE_SEARCH and commit in self.in_set:
                    round_ = max(round_, done.step.round or 0)
                    learned = True
                self.ui.step_finished(self.phase, done.rec, self.subject(commit), self.progress())
            if learned:
                self.queue.keep_builds(strategy.keep())
                if strategy.switch_after():
                    return Switched()
                for step in strategy.useless(self.queue.live()):
                    self.queue.cancel(step)
                    name = getattr(self.ui, "short", None)
                    shown = name(step.commit) if name is not None else step.commit[:12]
                    self.ui.note(f"stopped testing {shown}: its verdict no longer matters")
