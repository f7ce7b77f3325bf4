"""The search over several cases as a strategy: search/cases.py over each case's verdicts in
the journal (session/case_evidence.py), so that one build and test of a commit serves every
open case and the next commit is the one that tells most about all of them together.

Contradicting verdicts in a case are re-tested, then skipped for that case, as
strategy_classic.py does for one answer. It never hands over to the flake-aware search, which
is single-case.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from tritonbisect.core.outcome import Verdict
from tritonbisect.search import classic
from tritonbisect.search.cases import CasesStep, next_step_cases
from tritonbisect.session.builds_at_hand import BuildsAtHand
from tritonbisect.session.case_evidence import case_verdicts
from tritonbisect.session.journal import ROLE_SEARCH
from tritonbisect.session.phase_context import PhaseContext
from tritonbisect.session.step_queue import InFlight
from tritonbisect.session.strategy import CasesFound, Plan

# Builds kept in their checkouts for the confirmation, at most (each open case has two
# boundaries; past this many, the confirmation of the last cases builds again).
_MAX_KEPT = 8


class CasesSearch:
    """See the module docstring. Made when a search starts (a resume starts a new one, from
    the journal: overrides are not kept across them, as in the classic search)."""

    label = "search over cases"

    def __init__(self, ctx: PhaseContext, builds: BuildsAtHand, *, cases: Sequence[str]) -> None:
        self.cands = ctx.cands
        self.in_set = frozenset(ctx.cands.order)
        self.journal = journal = ctx.journal
        self.builds = builds
        self.ui = ctx.ui
        self.jobs = ctx.jobs
        self.good = ctx.good
        self.cases = list(cases)
        # per case, verdicts set aside: a commit that keeps contradicting that case's history
        self.overrides: dict[str, dict[str, Verdict]] = {}
        self.search_counts: Counter[str] = Counter(
            str(s.commit) for s in journal.steps() if s.role == ROLE_SEARCH
        )
        self._last: CasesStep | None = None

    # the verdicts ----------------------------------------------------------------------------

    def verdicts(self) -> dict[str, dict[str, str]]:
        """Each case's verdicts from the journal (a person's corrections applied), the bad
        endpoint bad unless said otherwise."""
        out = case_verdicts(self.journal.records, self.cases, self.in_set)
        for verdicts in out.values():
            verdicts.setdefault(self.cands.bad, Verdict.BAD)
        return out

    def effective(self) -> dict[str, dict[str, str]]:
        eff = self.verdicts()
        for case, overrides in self.overrides.items():
            eff[case].update(overrides)
        return eff

    def _step(self, *, free: int, flying: frozenset[str], cached: frozenset[str]) -> CasesStep:
        in_flight = flying & self.in_set
        # next_step_cases counts the steps in flight among its workers
        step = next_step_cases(self.cands, self.effective(), workers=free + len(in_flight),
                               in_flight=in_flight, cached=cached)
        self._last = step
        return step

    # the strategy ----------------------------------------------------------------------------

    def plan(self, *, free: int, flying: frozenset[str], live: int, cached: frozenset[str]) -> Plan:
        if free <= 0:
            return Plan(seen=classic.Wait())
        step = self._step(free=free, flying=flying, cached=cached)
        if step.conflicts:
            return self._conflicts(step, free, flying)
        if step.done:
            return Plan(answer=CasesFound(dict(step.settled)), seen=step)
        return Plan(test=step.commits, seen=step)

    def _conflicts(self, step: CasesStep, free: int, flying: frozenset[str]) -> Plan:
        """Cases whose verdicts contradict the history: re-test those commits once (one test
        serves every case), and skip, for that case only, a commit that still contradicts."""
        marks = self.journal.evidence().marks  # a person's verdicts: never re-tested, never overridden
        retest: list[str] = []
        changed = False
        for case, conflict in step.conflicts.items():
            for commit in conflict.commits:
                if commit in flying or commit in marks or commit in retest:
                    continue
                if self.search_counts[commit] >= 2 or commit not in self.in_set:
                    overrides = self.overrides.setdefault(case, {})
                    if overrides.get(commit) != Verdict.SKIP:
                        overrides[commit] = Verdict.SKIP
                        self.ui.note(f"{commit[:12]} keeps contradicting the history of case {case}: skipped for it")
                        changed = True
                elif len(retest) < free:
                    retest.append(commit)
        if retest:
            self.ui.note(
                f"verdicts of case{'s' if len(step.conflicts) > 1 else ''} {', '.join(step.conflicts)} contradict "
                "the history (a flaky test?); re-testing " + ", ".join(c[:12] for c in retest)
            )
        self.search_counts.update(retest)
        others = [c for c in step.commits if c not in retest]
        return Plan(test=(*retest, *others), again=changed, seen=step)

    def progress(self) -> tuple[int, int]:
        step = self._last
        if step is None:
            try:
                step = self._step(free=1, flying=frozenset(), cached=frozenset())
            except Exception:  # noqa: BLE001 - the display only
                return 0, 0
        remaining = max(step.remaining.values(), default=0)
        return remaining, step.steps_left(self.jobs)

    def open_cases(self) -> tuple[str, ...]:
        """The cases whose culprit is not known yet, for the display."""
        step = self._last
        if step is None:
            return tuple(self.cases)
        return tuple(c for c in self.cases if c in step.remaining or c in step.conflicts)

    def switch_after(self) -> bool:
        return False  # the flake-aware search is single-case

    def useless(self, steps: Sequence[InFlight]) -> list[InFlight]:
        """Running search steps whose verdict follows, in every open case, from the verdicts
        so far: their workers take a useful commit instead."""
        targets = [s for s in steps if s.role == ROLE_SEARCH]
        if not targets:
            return []
        eff = self.effective()
        open_ = self.open_cases()
        implied = [classic.implied(self.cands, eff[c]) for c in open_]
        if any(i is None for i in implied):
            return []  # a case contradicts itself: its re-tests decide
        return [s for s in targets if all(s.commit in i for i in implied if i is not None)
                and all(s.commit not in eff[c] for c in open_)]

    def keep(self) -> tuple[str, ...]:
        """The boundaries of every case, open ones first (the culprits and their parents when
        the search ends: the confirmation re-tests them)."""
        eff = self.effective()
        open_ = self.open_cases()
        keep: dict[str, None] = {}
        for case in [*open_, *(c for c in self.cases if c not in open_)]:
            keep.update(dict.fromkeys(self.builds.to_keep(self.cands, eff[case], self.good)))
        return tuple(keep)[:_MAX_KEPT]

    def corrected(self) -> None:
        self.overrides.clear()
