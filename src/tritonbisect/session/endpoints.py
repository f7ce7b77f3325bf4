"""The endpoint checks of a phase: the good commit must pass and the bad one fail before the
search starts (each run several times under --flaky auto; one that contradicts the person is
run again under --flaky detect), else the phase ends with the evidence."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from typing import Any

from tritonbisect.core.outcome import Verdict
from tritonbisect.session.case_answer import no_regression_line
from tritonbisect.session.case_evidence import CaseSplit, split_cases
from tritonbisect.session.evidence import undone_seqs
from tritonbisect.session.flakiness import Flakiness
from tritonbisect.session.journal import ROLE_ENDPOINT
from tritonbisect.session.phase_context import PhaseContext
from tritonbisect.session.step_queue import StepQueue
from tritonbisect.session.step_record import StepRecord

OBSERVED = (Verdict.GOOD, Verdict.BAD, Verdict.SKIP)


class EndpointCheck:
    """Runs the endpoint steps still missing from the journal and judges them."""

    def __init__(self, ctx: PhaseContext, queue: StepQueue, flakiness: Flakiness, *, fixed: bool, perf: bool,
                 needs_record: bool, paired: bool = False) -> None:
        self.spec = ctx.spec
        self.journal = ctx.journal
        self.queue = queue
        self.flakiness = flakiness
        self.names = ctx.names
        self.ui = ctx.ui
        self.fixed = fixed  # --regress fixed: the good commit fails, the bad (fixed) one passes
        self.perf = perf  # --regress perf: the good endpoint measures the reference
        # --perf-design paired: the bad endpoint is an A/B against the good one (the sandwich's first half)
        self.paired = paired
        self.needs_record = needs_record  # the good endpoint records the oracle's golden output
        self.abort = ctx.abort
        # the test reports cases (a kernel each, say): which of them the endpoints bracket
        self.split: CaseSplit | None = None

    def run(self) -> list[str] | None:
        """Why the endpoints cannot bracket a regression: [] when they can, None when the
        phase aborted (said already). A test that reports cases at the bad endpoint is judged
        per case (`self.split`): the endpoints hold when they bracket one case's regression."""
        spec = self.spec
        runs = self.flakiness.endpoint_runs()
        tally = self.tally()
        todo = {c: runs - sum(tally.get(c, {}).values()) for c in (spec.good, spec.bad)}
        noun = self.names.noun
        if any(n > 0 for n in todo.values()):
            rule = "pass, the bad one must fail"
            if self.fixed:
                rule = "fail, the bad (fixed) one must pass"
            elif self.perf:  # a timing regression: both pass, the good one's figures are the reference
                rule = "pass and measure the reference, the bad one must be slower by more than --perf-threshold"
            self.ui.note(
                f"checking the endpoints: the good {noun} must " + rule
                + (f" ({runs} runs each, to measure how flaky the test is)" if runs > 1 else "")
            )
        if (self.needs_record or self.perf) and todo[spec.good] > 0 and not tally.get(spec.good):
            # the good endpoint records the reference the bad endpoint is compared against
            # (the oracle's golden output, or the perf samples)
            self.queue.submit(spec.good, ROLE_ENDPOINT, 0, record=self.needs_record)
            if not self._collect():
                return None
            todo[spec.good] -= 1
        if self.paired and todo[spec.bad] > 0:
            self.ui.note(f"A/B of the endpoints: the bad {noun} paired with the good one, to see "
                         "whether there is a regression and how large")
        for commit in (spec.good, spec.bad):
            for _ in range(max(0, todo[commit])):
                self.queue.submit(commit, ROLE_ENDPOINT, 0, verify=self.paired and commit == spec.bad)
        if not self._collect():
            return None
        if self.paired:
            ab = next((r for r in reversed(self.journal.records)
                       if r.get("role") == ROLE_ENDPOINT and r.get("commit") == spec.bad), None)
            if ab is not None and self._undecided_ab(ab):
                from tritonbisect.core.perf_paired import figure_text

                self.ui.note(f"the A/B of the endpoints cannot tell at its bound ({figure_text(ab['perf'])}): "
                             f"bisecting, as the bad {noun} was said to be bad")
        self.split = split_cases(self.journal.records, spec.good, spec.bad, spec.only_cases)
        if self.split is not None:  # each case is judged on its own: a case failing at good is left out
            return [] if self.split.regressed else [no_regression_line(self.split)]
        problems = self.problems(self.tally())
        if problems:
            again = self._contradicting()
            if again:
                # one run is one observation: a flaky test may say so once
                self.ui.note(
                    f"{' and '.join(name for name, _ in again)} contradicted what you said: running "
                    f"{'them' if len(again) > 1 else 'it'} again before giving up"
                )
                for _name, commit in again:
                    self.queue.submit(commit, ROLE_ENDPOINT, 0, record=self.needs_record and commit == spec.good)
                if not self._collect():
                    return None
                problems = self.problems(self.tally())
                if not problems:
                    self.ui.note(
                        "the runs of an endpoint disagree: the test looks flaky; going on with the "
                        "flake-aware search (--flaky auto measures the flakiness first, "
                        "--flake-rate P fixes it, --repeat N runs each step N times)"
                    )
        return problems

    def _collect(self) -> bool:
        while self.queue:
            for done in self.queue.finished():
                if done.rec is None:
                    continue
                self.ui.step_finished(self.spec.name, done.rec, self.names.subject(done.step.commit), None)
                if done.aborted:
                    self.abort(f"endpoint {done.result.commit[:12]}: {done.result.reason}")
                    return False
        return True

    # what the journal says ------------------------------------------------------------------------

    def latest(self) -> dict[str, dict[str, Any]]:
        """The last endpoint record of each endpoint that gave a verdict."""
        out: dict[str, dict[str, Any]] = {}
        for rec in self.journal.records:
            if rec.get("role") == ROLE_ENDPOINT and rec.get("verdict") in OBSERVED:
                out[rec["commit"]] = rec
        return out

    def tally(self) -> dict[str, Counter[Verdict]]:
        """Verdicts of the endpoint steps, per commit (after corrections)."""
        steps = self.journal.steps()
        undone = undone_seqs(steps)
        tally: dict[str, Counter[Verdict]] = {}
        for step in steps:
            if step.role != ROLE_ENDPOINT or step.verdict not in OBSERVED or step.verdict is None:
                continue
            if step.seq is not None and step.seq in undone:
                continue
            verdict = step.verdict
            if self._undecided_ab(step):
                verdict = Verdict.BAD  # as the person said: the A/B could not tell otherwise
            tally.setdefault(str(step.commit), Counter())[verdict] += 1
        return tally

    def _undecided_ab(self, rec: Mapping[str, Any] | StepRecord) -> bool:
        """--perf-design paired: the bad endpoint's A/B that could not decide at its bound.
        It does not contradict the person (only "within the threshold" would): the search goes
        on, the note says how uncertain the size is."""
        step = rec if isinstance(rec, StepRecord) else StepRecord.of(rec)
        return (self.paired and step.commit == self.spec.bad and step.perf_undecided
                and step.perf.get("reference_commit") == self.spec.good)

    def _contradicting(self) -> list[tuple[str, str]]:
        """Endpoints run once whose test verdict contradicts the person, to run again (not
        under --flaky off, nor --regress perf, which samples on its own; a commit that does
        not build does not build twice): (how they are named, commit)."""
        if self.flakiness.mode == "off" or self.perf:
            return []
        tally = self.tally()
        noun = self.names.noun
        out = []
        for name, commit, want in ((f"the good {noun}", self.spec.good, Verdict.GOOD),
                                   (f"the bad {noun}", self.spec.bad, Verdict.BAD)):
            runs = tally.get(commit, Counter())
            if sum(runs.values()) == 1 and not runs[want] and not runs[Verdict.SKIP]:
                out.append((f"{name} {self.names.named(commit)}", commit))
        return out

    def problems(self, tally: dict[str, Counter[Verdict]]) -> list[str]:
        """Why the endpoints cannot bracket a regression (empty: they can).

        One run each: the good commit must be good and the bad one bad. Several runs (a flaky
        test): the good commit must pass at least once, the bad one fail at least once, and
        the good commit must pass more often than the bad one."""
        spec = self.spec
        noun = self.names.noun
        named = self.names.named
        good, bad = tally.get(spec.good, Counter()), tally.get(spec.bad, Counter())
        runs = max(sum(good.values()), sum(bad.values()))
        problems = []
        if runs <= 1:
            latest = self.latest()
            if good[Verdict.GOOD] != 1:
                why = _describe(latest.get(spec.good))
                problems.append(f"the good {noun} {named(spec.good)} is not good ({why})")
            if bad[Verdict.BAD] != 1:
                why = _describe(latest.get(spec.bad))
                problems.append(f"the bad {noun} {named(spec.bad)} is not bad ({why})")
            if self.perf and bad[Verdict.GOOD]:  # measured, not a flaky verdict
                problems.append(
                    "the bad endpoint is not slower than the good one by more than --perf-threshold: "
                    "a lower threshold bisects a smaller change (the step's line shows the change measured)"
                )
            elif good[Verdict.BAD] or bad[Verdict.GOOD]:  # the test said the opposite, once
                problems.append(
                    "if the test is flaky: --flaky detect runs a contradicting endpoint again, "
                    "--flaky auto runs each endpoint 3 times, --repeat N runs every step N times"
                )
            return problems
        g_rate = good[Verdict.GOOD] / max(1, good[Verdict.GOOD] + good[Verdict.BAD])
        b_rate = bad[Verdict.GOOD] / max(1, bad[Verdict.GOOD] + bad[Verdict.BAD])
        if not good[Verdict.GOOD]:
            problems.append(f"the good {noun} {named(spec.good)} never passed ({_tally(good)})")
        if not bad[Verdict.BAD]:
            problems.append(f"the bad {noun} {named(spec.bad)} never failed ({_tally(bad)})")
        if not problems and g_rate <= b_rate:
            problems.append(f"the test does not tell the endpoints apart: good {_tally(good)}, bad {_tally(bad)}")
        return problems


def _describe(rec: Any) -> str:
    if rec is None:
        return "not tested"
    return f"{rec.get('kind')}: {rec.get('reason')}"


def _tally(counter: Counter[Verdict]) -> str:
    parts = [f"{counter[v]} {v.value}" for v in OBSERVED if counter[v]]
    return ", ".join(parts) or "not tested"
