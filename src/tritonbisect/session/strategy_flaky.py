"""The flake-aware search as a strategy: test by expected information (search/bayes_step.py)
over every verdict the journal holds, until one commit (or one untestable cluster) holds the
confidence asked for, or the test budget is spent.

It re-tests commits (the culprit and its parent, at least, before an answer holds): the
builds of the search's boundaries stay in their checkouts, as for the classic confirmation
(session/builds_at_hand.py), so that a re-test costs no build even when nothing is cached."""

from __future__ import annotations

import math
from collections.abc import Sequence

from tritonbisect.search import bayes_step
from tritonbisect.search import classic as search
from tritonbisect.search.bayes import binary_entropy
from tritonbisect.session.builds_at_hand import BuildsAtHand
from tritonbisect.session.evidence import classic_verdicts
from tritonbisect.session.flakiness import Flakiness
from tritonbisect.session.phase_context import PhaseContext
from tritonbisect.session.step_queue import InFlight
from tritonbisect.session.strategy import Plan


class FlakeAwareSearch:
    """See the module docstring."""

    label = "flake-aware search"

    def __init__(self, ctx: PhaseContext, flakiness: Flakiness, builds: BuildsAtHand) -> None:
        self.cands = ctx.cands
        self.builds = builds
        self.good = ctx.good
        self.journal = ctx.journal
        self.flakiness = flakiness
        self.ui = ctx.ui
        self.jobs = ctx.jobs
        self.model = flakiness.model()
        self.confidence = flakiness.confidence
        self.budget = flakiness.test_budget(len(ctx.cands.order))

    def plan(self, *, free: int, flying: frozenset[str], live: int, cached: frozenset[str]) -> Plan:
        ev = self.journal.evidence()
        tests_left = self.budget - ev.search_tests - live
        if tests_left <= 0 and live:
            return Plan(seen=search.Wait())  # the budget is spent: hear what is running
        action = bayes_step.next_step(
            self.cands, ev.counts, model=self.model, marks=ev.marks,
            skipped={c for c in ev.skipped if c not in ev.counts},
            workers=max(0, free), in_flight=flying, cached=cached | self.builds.at_hand(self.keep()),
            confidence=self.confidence, tests_left=max(0, tests_left),
            prior=self.flakiness.hint.prior(),
        )
        if isinstance(action, (search.Found, search.Inconclusive)):
            if tests_left <= 0 and isinstance(action, search.Inconclusive):
                self.ui.note(f"test budget spent ({self.budget} search tests; raise it with --max-tests)")
            return Plan(answer=action, seen=action)
        if isinstance(action, search.TestNext):
            return Plan(test=action.commits, seen=action)
        return Plan(seen=action)

    def progress(self) -> tuple[int, int]:
        """(commits holding 99% of the mass, estimated tests left) for the display."""
        post = self.flakiness.posterior(self.cands, self.journal.evidence())
        if post is None:
            return 0, 0
        bits = post.entropy() + math.log2(1.0 / (1.0 - self.confidence))
        p, q = post.rates()
        per_test = max(0.1, 1.0 - binary_entropy(p) / 2 - binary_entropy(q) / 2)  # what one test tells, roughly
        steps = math.ceil(bits / per_test / max(1, self.jobs))
        return len(post.credible_set(0.99)), steps

    def open_cases(self) -> tuple[str, ...]:
        return ()

    def switch_after(self) -> bool:
        return False

    def useless(self, steps: Sequence[InFlight]) -> list[InFlight]:
        return []

    def keep(self) -> tuple[str, ...]:
        """The builds of the first bad commit and the last good one before it (by the latest
        verdicts): the re-tests that make an answer hold are mostly of those two."""
        verdicts = classic_verdicts(self.journal.evidence(), self.cands.order)
        verdicts.setdefault(self.cands.bad, "bad")
        return self.builds.to_keep(self.cands, verdicts, self.good)

    def corrected(self) -> None:
        pass  # it reads every verdict from the journal each time
