"""The classic search as a strategy: the pure search of search/classic.py over the verdicts the
journal holds (one per commit, as a resumed session reads them), with contradicting verdicts
re-tested, then skipped, unless the phase switches to the flake-aware search."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from tritonbisect.core.outcome import Verdict
from tritonbisect.search import classic as search
from tritonbisect.session.builds_at_hand import BuildsAtHand
from tritonbisect.session.evidence import classic_verdicts
from tritonbisect.session.flakiness import Flakiness
from tritonbisect.session.journal import ROLE_SEARCH
from tritonbisect.session.phase_context import PhaseContext
from tritonbisect.session.step_queue import InFlight
from tritonbisect.session.step_record import StepRecord
from tritonbisect.session.strategy import Plan


class ClassicSearch:
    """See the module docstring. Made when a search starts (a resume, or a search again after
    a correction, starts a new one: overrides are not kept across them)."""

    label = "search"

    def __init__(self, ctx: PhaseContext, flakiness: Flakiness, builds: BuildsAtHand) -> None:
        self.cands = ctx.cands
        self.in_set = frozenset(ctx.cands.order)
        self.journal = journal = ctx.journal
        self.flakiness = flakiness
        self.builds = builds
        self.ui = ctx.ui
        self.jobs = ctx.jobs
        self.good = ctx.good
        # verdicts the search set aside: a commit that keeps contradicting the history
        self.overrides: dict[str, Verdict] = {}
        # re-tests of each commit, so that one contradicting twice is skipped, not re-tested
        self.search_counts: Counter[str] = Counter(
            str(s.commit) for s in journal.steps() if s.role == ROLE_SEARCH
        )

    # the verdicts ----------------------------------------------------------------------------

    def verdicts(self) -> dict[str, str]:
        """One verdict per commit of the set, from the journal (a person's corrections
        applied), the bad endpoint bad unless said otherwise."""
        out = classic_verdicts(self.journal.evidence(), self.in_set)
        out.setdefault(self.cands.bad, Verdict.BAD)
        return out

    def effective(self) -> dict[str, str]:
        eff = self.verdicts()
        eff.update(self.overrides)
        return eff

    # the strategy ----------------------------------------------------------------------------

    def plan(self, *, free: int, flying: frozenset[str], live: int, cached: frozenset[str]) -> Plan:
        if free <= 0:
            return Plan(seen=search.Wait())
        action = search.next_step(self.cands, self.effective(), workers=free, in_flight=flying, cached=cached)
        if isinstance(action, search.TestNext):
            return Plan(test=action.commits, seen=action)
        if isinstance(action, search.Inconclusive):
            again = self._undecided_again(action.candidates, free, flying)
            if again:
                return Plan(test=again, seen=action)
        if isinstance(action, (search.Found, search.Inconclusive)):
            return Plan(answer=action, seen=action)
        if isinstance(action, search.Conflict):
            return self._conflict(action, free, flying)
        return Plan(seen=action)

    def _conflict(self, action: search.Conflict, free: int, flying: frozenset[str]) -> Plan:
        """Verdicts that contradict the history: a flaky test (switch), else re-test them once,
        and skip a commit that still contradicts."""
        if self.flakiness.switch(self.journal.evidence(), "verdicts contradict the history"):
            return Plan(switch=True, seen=action)
        marks = self.journal.evidence().marks  # a person's verdicts: never re-tested, never overridden
        retest: list[str] = []
        changed = False
        for commit in action.commits:
            if commit in flying or commit in marks:
                continue
            if self.search_counts[commit] >= 2 or commit not in self.in_set:
                # tested twice and still contradicting: do not trust it
                if self.overrides.get(commit) != Verdict.SKIP:
                    self.overrides[commit] = Verdict.SKIP
                    self.ui.note(f"{commit[:12]} keeps contradicting the history: skipped")
                    changed = True
            elif len(retest) < free:
                retest.append(commit)
        if retest:
            self.ui.note(
                "verdicts contradict the history (a flaky test?); re-testing "
                + ", ".join(c[:12] for c in retest)
            )
        self.search_counts.update(retest)
        return Plan(test=tuple(retest), again=changed, seen=action)

    def _undecided_again(self, candidates: Sequence[str], free: int, flying: frozenset[str]) -> tuple[str, ...]:
        """--regress perf: candidates left because their step could not decide at its bound
        (a change near the threshold, a noisy stretch) are run once more, on fresh samples,
        before the search gives up on them."""
        latest: dict[str, StepRecord] = {}
        tested: Counter[str] = Counter()
        for step in self.journal.steps():
            if step.role == ROLE_SEARCH:
                latest[str(step.commit)] = step
                tested[str(step.commit)] += 1
        again = tuple(
            c for c in candidates
            if c not in flying and tested[c] == 1 and latest[c].verdict == Verdict.SKIP
            and latest[c].perf_undecided
        )[:free]
        if again:
            self.ui.note("undecided at their bound, run once more: " + ", ".join(c[:12] for c in again))
        return again

    def progress(self) -> tuple[int, int]:
        try:
            n = len(search.remaining(self.cands, self.effective()))
        except Exception:  # noqa: BLE001 - the display only
            n = 0
        return n, (search.steps_left(n, self.jobs) if n else 0)

    def open_cases(self) -> tuple[str, ...]:
        return ()

    def switch_after(self) -> bool:
        return self.flakiness.switch(self.journal.evidence())

    def useless(self, steps: Sequence[InFlight]) -> list[InFlight]:
        """Running search steps above a newly found bad commit (or below a good one): their
        workers take a useful commit instead."""
        known = self.verdicts()
        targets = [s for s in steps if s.role == ROLE_SEARCH and s.commit not in known]
        if not targets:
            return []
        implied = self._implied()
        if not implied:
            return []
        return [s for s in targets if s.commit in implied]

    def keep(self) -> tuple[str, ...]:
        return self.builds.to_keep(self.cands, self.effective(), self.good)

    def corrected(self) -> None:
        self.overrides.clear()  # a resume starts without them too; contradictions come back

    # ancestry ----------------------------------------------------------------------------------

    def _implied(self) -> frozenset[str] | None:
        """Commits whose verdict follows from the verdicts so far: ancestors of a good commit
        are good, descendants of a bad one bad. None while the verdicts contradict."""
        return search.implied(self.cands, self.effective())
