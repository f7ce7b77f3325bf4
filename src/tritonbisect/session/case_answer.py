"""How a phase whose test reports several cases states its answer: each case's culprit (its
confirmation in) or candidates, kept in session.json, and the phase's own answer: the earliest
culprit in topological order, which the exit code follows.

    extra["cases"][phase] = {
      "cases": {name: {"status": "found" | "inconclusive" | "invalid-endpoints" | "searching",
                       "culprit": sha | null, "candidates": [...], "confidence": "high" | "low" | null,
                       "probability": P | null, "tests": n, "reason": one line,
                       "revert": "fixes" | ... (--verify-revert, session/revert_cases.py)}},
      "not_regressed": [name, ...],   the cases the bad endpoint does not fail
      "culprits": [sha, ...]          the distinct culprits, earliest first
    }

A case is in "cases" when the bad endpoint fails it: "searching" while its culprit is sought,
"invalid-endpoints" when the good endpoint fails it too (left out of the search).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from tritonbisect.core.outcome import Verdict
from tritonbisect.search.classic import Found
from tritonbisect.session.case_evidence import (
    CaseSplit,
    case_evidence,
    case_records,
    case_tests,
    case_view,
)
from tritonbisect.session.evidence import candidate_states, candidates_summary
from tritonbisect.session.flakiness import Flakiness
from tritonbisect.session.handle import SessionHandle
from tritonbisect.session.phase_context import PhaseContext
from tritonbisect.session.phases import (
    STATUS_FOUND,
    STATUS_INCONCLUSIVE,
    STATUS_INVALID,
)
from tritonbisect.session.strategy import CasesFound

if TYPE_CHECKING:  # pragma: no cover
    pass

EXTRA = "cases"
SEARCHING = "searching"


def cases_state(session: SessionHandle, phase: str) -> dict[str, Any] | None:
    """The cases of a phase as session.json keeps them (None: its test reports no cases)."""
    state = (getattr(session, "extra", None) or {}).get(EXTRA) or {}
    found = state.get(phase)
    return found if isinstance(found, dict) else None


def record_split(session: SessionHandle, phase: str, split: CaseSplit, records: list[dict[str, Any]]) -> None:
    """What the endpoints say of each case, kept before the search (a resume writes it again)."""
    old = cases_state(session, phase) or {}
    cases: dict[str, Any] = {}
    for name in split.regressed:
        before = (old.get("cases") or {}).get(name) or {}
        cases[name] = before if before.get("status") != STATUS_INVALID else {}
        cases[name].setdefault("status", SEARCHING)
        cases[name]["tests"] = case_tests(records, name)
    for name, why in split.left_out.items():
        cases[name] = {"status": STATUS_INVALID, "culprit": None, "reason": why, "tests": case_tests(records, name)}
    session.extra.setdefault(EXTRA, {})[phase] = {
        "cases": cases, "not_regressed": list(split.not_regressed), "culprits": list(old.get("culprits") or []),
    }
    session.save()


def split_line(split: CaseSplit) -> str:
    """The note that says which cases the search takes up."""
    parts = [f"{len(split.regressed)} regressed ({_names(split.regressed)})"]
    if split.not_regressed:
        parts.append(f"{len(split.not_regressed)} pass at the bad commit")
    if split.left_out:
        parts.append(f"{len(split.left_out)} left out: "
                     + "; ".join(f"{name} ({why})" for name, why in list(split.left_out.items())[:5])
                     + ("; ..." if len(split.left_out) > 5 else ""))
    total = len(split.regressed) + len(split.not_regressed) + len(split.left_out)
    return f"the test reports {total} case{'s' if total != 1 else ''}: " + ", ".join(parts)


def no_regression_line(split: CaseSplit) -> str:
    """The one line of endpoints that bracket no case's regression."""
    why = []
    if split.not_regressed:
        why.append(f"{len(split.not_regressed)} pass at the bad commit")
    if split.left_out:
        why.append(f"{len(split.left_out)} fail at the good commit too ({_names(list(split.left_out))})")
    return "no case regressed between the endpoints: " + ", ".join(why)


def _names(names: list[str], most: int = 6) -> str:
    return ", ".join(names[:most]) + (f" and {len(names) - most} more" if len(names) > most else "")


class CaseAnswer:
    """Writes the answer of a phase over cases (see the module docstring)."""

    def __init__(self, ctx: PhaseContext, flakiness: Flakiness) -> None:
        self.session = ctx.session
        self.phase = ctx.phase
        self.cands = ctx.cands
        self.journal = ctx.journal
        self.flakiness = flakiness
        self.names = ctx.names
        self.ui = ctx.ui

    def settle(self, found: CasesFound, parents: Mapping[str, str], confirmed: Mapping[str, Mapping[str, Any]]) -> None:
        """Each case's answer from the search and the confirmation's records (culprit and
        parent of each culprit), then the phase's."""
        records = self.journal.records
        state = cases_state(self.session, self.phase.spec.name)
        if state is None:
            state = self.session.extra.setdefault(EXTRA, {}).setdefault(
                self.phase.spec.name, {"cases": {}, "not_regressed": [], "culprits": []})
        entries: dict[str, Any] = state["cases"]
        posteriors: dict[str, dict[str, Any]] = {}
        for case, answer in found.answers.items():
            entry: dict[str, Any] = {"tests": case_tests(records, case), "probability": None}
            if isinstance(answer, Found):
                culprit = answer.culprit
                entry.update(self._confirmed(case, culprit, parents[culprit], confirmed, posteriors))
            else:
                said = candidates_summary(candidate_states(case_records(records, case), answer.candidates))
                entry.update(status=STATUS_INCONCLUSIVE, culprit=None, candidates=list(answer.candidates),
                             confidence=None,
                             reason=f"{len(answer.candidates)} candidates remain, which no test can tell apart: {said}")
            old = entries.get(case) or {}
            if "revert" in old and old.get("culprit") == entry.get("culprit"):
                entry["revert"] = old["revert"]  # a resume that settles again keeps the revert check
            entries[case] = entry
        order = {c: i for i, c in enumerate(self.cands.order)}
        culprits = sorted({e["culprit"] for e in entries.values() if e.get("culprit")}, key=lambda c: order.get(c, -1))
        state["culprits"] = culprits
        self._phase_answer(entries, culprits, posteriors)
        self.session.save()
        self.ui.phase_finished(self.session, self.phase)

    def _confirmed(self, case: str, culprit: str, parent: str, confirmed: Mapping[str, Mapping[str, Any]],
                   posteriors: dict[str, dict[str, Any]]) -> dict[str, Any]:
        """A case's culprit with its confirmation: high confidence when the culprit is bad again
        and its parent good again for that case, and no verdict contradicts it or the posterior
        reaches the threshold."""
        bad_again = _verdict(confirmed.get(culprit), case) == Verdict.BAD
        good_again = _verdict(confirmed.get(parent), case) == Verdict.GOOD
        post = self.flakiness.posterior(self.cands, case_evidence(self.journal.records, case))
        prob = post.prob(culprit) if post is not None else None
        threshold = self.flakiness.confidence
        stated = "" if prob is None else f"; P(culprit) = {prob:.3f}"
        named = self.names.named
        if post is not None:
            posteriors[case] = dict(post.summary(), probability=round(prob or 0.0, 6), threshold=threshold,
                                    search="classic, over cases", flaky=self.flakiness.mode)
        if bad_again and good_again:
            high, said = self.flakiness.confirmed_confidence(post, culprit)
            reason = f"confirmed: {named(culprit)} is bad again and its parent {named(parent)} good again" + said
        else:
            high = False
            parts = []
            for commit, ok, what in ((culprit, bad_again, ""), (parent, good_again, "parent ")):
                if not ok:
                    rec = case_view(dict(confirmed.get(commit) or {}), case)
                    parts.append(f"{what}{commit[:12]} re-tested {rec.get('verdict')} ({rec.get('kind')})")
            reason = ("low confidence: the confirmation disagrees with the search: " + "; ".join(parts) + stated
                      + " (flaky test?)")
        return {"status": STATUS_FOUND, "culprit": culprit, "candidates": [culprit],
                "confidence": "high" if high else "low",
                "probability": None if prob is None else round(prob, 6), "reason": reason}

    def _phase_answer(self, entries: Mapping[str, Any], culprits: list[str],
                      posteriors: Mapping[str, dict[str, Any]]) -> None:
        phase = self.phase
        name = phase.spec.name
        searched = {c: e for c, e in entries.items() if e.get("status") in (STATUS_FOUND, STATUS_INCONCLUSIVE)}
        inconclusive = [c for c, e in searched.items() if e["status"] == STATUS_INCONCLUSIVE]
        if culprits:
            top = culprits[0]
            top_cases = [c for c, e in searched.items() if e.get("culprit") == top]
            phase.status = STATUS_FOUND
            phase.culprit = top
            phase.candidates = [top]
            low = [c for c in top_cases if searched[c]["confidence"] == "low"]
            phase.confidence = "low" if low else "high"
            groups = "; ".join(
                f"{c[:12]} ({_names([k for k, e in searched.items() if e.get('culprit') == c])})" for c in culprits
            )
            n_found = len(searched) - len(inconclusive)
            reason = f"{n_found} case{'s' if n_found != 1 else ''} regressed at {len(culprits)} commit" \
                     f"{'s' if len(culprits) != 1 else ''}: {groups}"
            if inconclusive:
                reason += f"; {len(inconclusive)} inconclusive ({_names(inconclusive)})"
            if low:
                reason += f"; case {low[0]}: {searched[low[0]]['reason']}"
            phase.reason = reason
            post = posteriors.get(top_cases[0]) if top_cases else None
        else:
            first = searched[inconclusive[0]] if inconclusive else {"candidates": [], "reason": "no case was searched"}
            phase.status = STATUS_INCONCLUSIVE
            phase.culprit = None
            phase.candidates = list(first["candidates"])
            phase.confidence = None
            phase.reason = (f"no regressed case's culprit could be told apart ({_names(inconclusive)}); "
                            f"case {inconclusive[0] if inconclusive else '?'}: {first['reason']}")
            post = None
        if post is not None:
            self.session.extra.setdefault("posterior", {})[name] = post
        else:
            (self.session.extra.get("posterior") or {}).pop(name, None)


def _verdict(rec: Mapping[str, Any] | None, case: str) -> str | None:
    """A confirmation record's verdict for one case (a person's mark: its verdict)."""
    if rec is None:
        return None
    verdict = case_view(dict(rec), case).get("verdict")
    return None if verdict is None else str(verdict)
