"""How a phase states its answer: the status, the culprit or the candidates, the confidence and
the one-line reason of session.json, and the posterior summary kept with them."""

from __future__ import annotations

from typing import Any

from tritonbisect.search.classic import Found, Inconclusive
from tritonbisect.session.confirm import Confirmed
from tritonbisect.session.evidence import candidate_states, candidates_summary
from tritonbisect.session.flakiness import Flakiness
from tritonbisect.session.phase_context import PhaseContext
from tritonbisect.session.phases import STATUS_FOUND, STATUS_INCONCLUSIVE


class Answer:
    """Writes a phase's answer into its state and tells the display (see the module docstring)."""

    def __init__(self, ctx: PhaseContext, flakiness: Flakiness) -> None:
        self.session = ctx.session  # saved with the answer; the display is told about it
        self.phase = ctx.phase
        self.cands = ctx.cands
        self.journal = ctx.journal
        self.flakiness = flakiness
        self.names = ctx.names
        self.ui = ctx.ui

    def _said(self) -> None:
        self.session.save()
        self.ui.phase_finished(self.session, self.phase)

    # the classic search's answers ----------------------------------------------------------------

    def inconclusive(self, action: Inconclusive) -> None:
        phase = self.phase
        phase.status = STATUS_INCONCLUSIVE
        phase.candidates = list(action.candidates)
        phase.culprit = None
        phase.reason = (
            f"{len(action.candidates)} candidates remain, which no test can tell apart: "
            + self.candidates_said(phase.candidates)
        )
        self.record_posterior(None, phase.candidates)
        self._said()

    def confirmed(self, c: Confirmed) -> None:
        """A culprit whose confirmation is in: high confidence when both re-tests agree with
        the search and no verdict contradicts the culprit or the posterior reaches the threshold."""
        phase = self.phase
        prob = self.record_posterior(c.culprit)
        stated = "" if prob is None else f"; P(culprit) = {prob:.3f}"
        named = self.names.named
        phase.status = STATUS_FOUND
        ab = _ab_text(c.records.get(c.culprit))  # --perf-design paired: the culprit against its parent
        if c.culprit_bad and c.parent_good:
            post = self.flakiness.posterior(self.cands, self.journal.evidence())
            high, said = self.flakiness.confirmed_confidence(post, c.culprit)
            phase.confidence = "high" if high else "low"
            again = (f"{named(c.culprit)} is slower than {self.names.parent(c.parent).rstrip(',')}: {ab}" if ab else
                     f"{named(c.culprit)} is bad again and {self.names.parent(c.parent)} good again")
            phase.reason = (
                f"confirmed: {again}"
                + said
            )
        else:
            phase.confidence = "low"
            parts = []
            before = "the version before it, " if self.names.labels else "parent "
            for commit, ok, what in ((c.culprit, c.culprit_bad, ""), (c.parent, c.parent_good, before)):
                if not ok and ab and commit == c.culprit:
                    parts.append(f"{named(commit)} against {self.names.parent(c.parent)}: {ab}, "
                                 f"{'within the threshold' if c.records[commit]['verdict'] == 'good' else 'undecided'} "
                                 "(a slow-down spread over several commits?)")
                elif not ok:
                    rec = c.records[commit]
                    parts.append(f"{what}{named(commit)} re-tested {rec['verdict']} ({rec['kind']})")
            phase.reason = (
                "low confidence: the confirmation disagrees with the search: "
                + "; ".join(parts)
                + stated
                + " (flaky test? try --flaky auto)"
            )
        self._said()

    # the flake-aware search's answers ----------------------------------------------------------

    def flake_aware(self, action: Found | Inconclusive) -> None:
        phase = self.phase
        threshold = self.flakiness.confidence
        if isinstance(action, Found):
            prob = self.record_posterior(action.culprit) or 0.0
            phase.status = STATUS_FOUND
            phase.culprit = action.culprit
            phase.candidates = [action.culprit]
            phase.confidence = "high" if prob >= threshold else "low"
            phase.reason = (
                f"P(culprit) = {prob:.3f} from {self.evidence_line()} "
                f"(flake-aware search; threshold {threshold:g})"
            )
        else:
            cands = list(action.candidates)
            prob = self.record_posterior(None, cands) or 0.0
            phase.status = STATUS_INCONCLUSIVE
            phase.culprit = None
            phase.candidates = cands
            phase.confidence = None
            budget = self.flakiness.test_budget(len(self.cands.order))
            said = self.candidates_said(cands)
            why = (
                f"the test budget ({budget} search tests) was spent; raise it with --max-tests ({said})"
                if self.journal.evidence().search_tests >= budget
                else f"no test can tell them apart ({said})"
                + ("; `tritonbisect mark` one of them to decide" if "never tested" in said else "")
            )
            phase.reason = f"{len(cands)} candidates hold P = {prob:.3f} of the culprit; {why}"
        self._said()

    # what the answer is worth ------------------------------------------------------------------

    def record_posterior(self, culprit: str | None, candidates: list[str] | None = None) -> float | None:
        """Save the posterior summary of this phase in session.json (`extra["posterior"]`);
        returns P(culprit), or P(culprit in candidates)."""
        ev = self.journal.evidence()
        post = self.flakiness.posterior(self.cands, ev)
        if post is None:
            return None
        self.flakiness.hint.record_verdict(ev, self.flakiness.model(), culprit)
        summary = post.summary()
        prob = post.prob(culprit) if culprit else sum(post.prob(c) for c in candidates or [])
        summary.update(
            probability=round(prob, 6),
            threshold=self.flakiness.confidence,
            search=self.flakiness.search_name(),
            flaky=self.flakiness.mode,
        )
        self.session.extra.setdefault("posterior", {})[self.phase.spec.name] = summary
        return prob

    def candidates_said(self, candidates: list[str]) -> str:
        """What is known of an inconclusive answer's candidates, counted (evidence.py)."""
        return candidates_summary(candidate_states(self.journal.records, candidates))

    def evidence_line(self) -> str:
        ev = self.journal.evidence()
        p, q = (0.0, 0.0)
        post = self.flakiness.posterior(self.cands, ev)
        if post is not None:
            p, q = post.rates()
        n = sum(g + b for g, b in ev.counts.values())
        return f"{n} verdicts, error rates p≈{p:.2f} q≈{q:.2f}"


def _ab_text(rec: Any) -> str:
    """`+6.1% [4.9, 7.2] (floor, 30 pairs)` of a paired A/B record; "" for any other."""
    from tritonbisect.core.perf_paired import figure_text

    perf = (rec or {}).get("perf") if isinstance(rec, dict) else None
    if not isinstance(perf, dict) or perf.get("design") != "paired":
        return ""
    return figure_text(perf)
