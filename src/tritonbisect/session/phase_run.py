"""One phase of a session, run to its end: endpoint checks, the search (classic, or
flake-aware), the culprit's confirmation, the answer.

Every finished step is appended to the journal before anything is decided from it, so a
resumed phase replays the journal and goes on without re-running finished steps.
"""

from __future__ import annotations

from typing import Any

from tritonbisect.builds.recipes import Recipe, recipe_from_config, test_spec_of
from tritonbisect.core.outcome import Policy
from tritonbisect.search.classic import Found, Inconclusive, steps_left
from tritonbisect.session.answer import Answer
from tritonbisect.session.builds_at_hand import BuildsAtHand, builds_install_outside
from tritonbisect.session.case_answer import CaseAnswer, record_split, split_line
from tritonbisect.session.case_evidence import CaseSplit
from tritonbisect.session.confirm import Confirmation, TakenBack
from tritonbisect.session.endpoints import EndpointCheck
from tritonbisect.session.flakiness import Flakiness
from tritonbisect.session.handle import SessionHandle
from tritonbisect.session.manual import ManualJudge
from tritonbisect.session.observer import Display, Progress
from tritonbisect.session.phase_context import PhaseContext
from tritonbisect.session.phase_context import candidates_of as candidates_of  # re-exported
from tritonbisect.session.phase_hint import PhaseHint
from tritonbisect.session.phases import STATUS_ABORTED, STATUS_INVALID, PhaseState
from tritonbisect.session.search_loop import SearchLoop
from tritonbisect.session.step_queue import StepQueue
from tritonbisect.session.strategy import CasesFound, Strategy, Switched
from tritonbisect.session.strategy_cases import CasesSearch
from tritonbisect.session.strategy_classic import ClassicSearch
from tritonbisect.session.strategy_flaky import FlakeAwareSearch
from tritonbisect.session.worker_pool import phase_pool


def paired_or_not(policy: Policy, recipe: Recipe, ui: Display) -> Policy:
    """The phase's policy: --perf-design paired needs each side's build to stay in its own
    checkout; a build command that installs outside it (`pip install -e .`, `make install`)
    leaves only the latest build in place, so such a phase is judged unpaired (said once)."""
    perf = policy.perf
    if perf is None or not perf.paired or not builds_install_outside(recipe):
        return policy
    import dataclasses

    ui.note("--perf-design paired needs each build to stay in its checkout, and the build command "
            "installs outside it: judging unpaired (the good endpoint measured once); "
            "--artifact PATH keeps a build apart")
    return dataclasses.replace(policy, perf=dataclasses.replace(perf, design="unpaired"))


class PhaseRun:
    """Orchestrates one phase: the endpoint check (endpoints.py), a search loop (search_loop.py)
    driving a strategy (strategy_classic.py, strategy_flaky.py), the confirmation (confirm.py)
    and the answer (answer.py); steps go through one StepQueue (step_queue.py)."""

    def __init__(self, session: SessionHandle, phase: PhaseState, ui: Display) -> None:
        self.ctx = ctx = PhaseContext.for_phase(session, phase, ui, abort=self._abort)
        self.session = session
        self.phase = phase
        self.spec = spec = phase.spec
        self.ui = ui
        self.settings = session.settings
        self.history = ctx.history
        self.cands = ctx.cands
        self.journal = ctx.journal
        self.names = ctx.names
        self.recipe = recipe_from_config(spec.recipe_name, spec.recipe_config)
        self.policy = paired_or_not(self.settings.policy(), self.recipe, ui)
        self.queue = StepQueue(ctx, baseline=self._perf_baseline, reference=self._perf_reference)
        self.hint = PhaseHint(ctx)
        self.flakiness = Flakiness(self.settings.search, self.hint, ui)
        self.builds = BuildsAtHand(ctx, self.recipe)
        self.loop = SearchLoop(ctx, self.queue, self.builds, progress=self.progress)
        self.judge = ManualJudge(ui) if self.settings.test.manual else None
        if self.judge is not None:  # --manual: a person gives the verdict (session/manual.py)
            self.queue.judge = self._judged
        self.confirmation = Confirmation(ctx, self.queue, self.builds, one_at_a_time=self.judge is not None,
                                         paired=self.policy.perf is not None and self.policy.perf.paired)
        self.answer = Answer(ctx, self.flakiness)
        self.case_answer = CaseAnswer(ctx, self.flakiness)
        self.strategy: Strategy | None = None  # the search running (for the display)
        self.classic: ClassicSearch | None = None  # the last classic search (its verdicts)
        self.split: CaseSplit | None = None  # the test reports cases: what the endpoints say of each
        self.cases: CasesSearch | None = None  # the last search over cases (its verdicts)

    # what the display and a person judging by hand see ---------------------------------------

    @property
    def records(self) -> list[dict[str, Any]]:
        return self.journal.records

    def subject(self, commit: str) -> str:
        return self.names.subject(commit)

    def progress(self) -> Progress:
        open_cases: tuple[str, ...] = ()
        if self.strategy is not None:
            remaining, steps = self.strategy.progress()
            open_cases = self.strategy.open_cases()
        else:
            remaining = len(self.cands.order)
            steps = steps_left(remaining, self.settings.executor.jobs)
        return Progress(remaining, steps, len(self.journal), len(self.queue), open_cases)

    def _judged(self, result: Any, role: str) -> tuple[Any, dict[str, Any] | None]:
        assert self.judge is not None
        return self.judge.judge(self, result, role)

    def _perf_baseline(self, commit: str) -> tuple[float, ...] | None:
        """--regress perf: the good endpoint's samples, the yardstick of every other step
        (None for the good endpoint itself, which measures them)."""
        if self.policy.perf is None or self.policy.perf.paired or commit == self.spec.good:
            return None
        from tritonbisect.core.perf import baseline_of

        return baseline_of(self.journal.records, self.spec.good)

    def _perf_reference(self, commit: str) -> str | None:
        """--perf-design paired: what a step is paired with, the good endpoint (the culprit's
        check names its parent itself)."""
        perf = self.policy.perf
        if perf is None or not perf.paired or commit == self.spec.good:
            return None
        return self.spec.good

    # the phase ----------------------------------------------------------------------------------

    def run(self) -> None:
        self.phase.range_size = len(self.cands.order)
        self.ui.phase_started(self.session, self.phase, len(self.cands.order), self.subject)
        if self.journal.records:
            self.ui.note(f"{len(self.journal.records)} finished steps replayed from the journal")
        pool = phase_pool(
            self.settings, self.spec, self.history.repo_id(), self.recipe, self.policy, note=self.ui.note
        )
        with self.queue.running_on(pool):
            if not self._endpoints():
                return
            action = self.search()
            if action is None:
                return
            self._finish(action)

    def _abort(self, reason: str) -> None:
        self.queue.abandon()
        self.phase.status = STATUS_ABORTED
        self.phase.reason = reason
        self.session.save()
        self.ui.phase_finished(self.session, self.phase)

    def _endpoints(self) -> bool:
        """Whether the endpoints bracket a regression; a person's own endpoints are taken as
        given, tested ones are checked (the phase ends here when they do not)."""
        spec = self.spec
        if self.judge is not None:
            self.judge.declare_endpoints(self)
            return True
        self.queue.keep_builds(self.builds.to_keep(self.cands, {}, spec.good))
        test_spec = test_spec_of(self.recipe)
        check = EndpointCheck(
            self.ctx, self.queue, self.flakiness, fixed=self.policy.regress == "fixed",
            perf=self.policy.perf is not None, needs_record=bool(test_spec and test_spec.record_command),
            paired=self.policy.perf is not None and self.policy.perf.paired,
        )
        problems = check.run()
        if problems is None:
            return False
        self.split = check.split
        if self.split is not None:
            record_split(self.session, spec.name, self.split, self.journal.records)
            if self.split.regressed:
                self.ui.note(split_line(self.split))
        if problems:
            done = check.latest()
            self.phase.status = STATUS_INVALID
            self.phase.reason = "; ".join(problems)
            self.session.save()
            self.ui.endpoints_invalid(self.session, self.phase, done.get(spec.good), done.get(spec.bad))
            self.ui.phase_finished(self.session, self.phase)
            return False
        return True

    def search(self) -> Found | Inconclusive | CasesFound | None:
        """The classic search while the test looks deterministic, else (or once it no longer
        does) the flake-aware one; over the regressed cases when the test reports cases. None
        when the phase aborted."""
        if self.split is not None:
            return self._cases_search(self.split)
        if not self.flakiness.decide(self.journal.evidence()):
            self.classic = ClassicSearch(self.ctx, self.flakiness, self.builds)
            self.strategy = self.classic
            outcome = self.loop.run(self.classic)
            if not isinstance(outcome, Switched):
                return outcome
        return self._flake_aware_search()

    def _cases_search(self, split: CaseSplit) -> CasesFound | None:
        settings = self.settings
        if self.flakiness.rate or self.flakiness.mode == "auto" or settings.hint.wanted:
            self.ui.note("the flake-aware and hint-guided searches are single-case: with several cases "
                         "the search stays classic (contradictions are re-tested, then skipped)")
        self.cases = CasesSearch(self.ctx, self.builds, cases=split.regressed)
        self.strategy = self.cases
        outcome = self.loop.run(self.cases)
        return outcome if isinstance(outcome, CasesFound) else None  # it never hands over

    def _flake_aware_search(self) -> Found | Inconclusive | None:
        self.strategy = FlakeAwareSearch(self.ctx, self.flakiness, self.builds)
        outcome = self.loop.run(self.strategy)
        return outcome if isinstance(outcome, (Found, Inconclusive)) else None  # it never hands over

    def _finish(self, action: Found | Inconclusive | CasesFound) -> None:
        if isinstance(action, CasesFound):
            self._finish_cases(action)
            return
        if self.flakiness.aware:
            self.answer.flake_aware(action)
            return
        if isinstance(action, Inconclusive):
            self.answer.inconclusive(action)
            return
        culprit = action.culprit
        verdicts = self.classic.effective() if self.classic is not None else {}
        parent = self.confirmation.parent_of(culprit, verdicts)
        self.phase.culprit = culprit
        self.phase.candidates = [culprit]
        self.session.save()
        confirmed = self.confirmation.run(culprit, parent)
        if confirmed is None:
            return
        if isinstance(confirmed, TakenBack):
            self._research()
            return
        agrees = confirmed.culprit_bad and confirmed.parent_good
        if not agrees and self.flakiness.switch(self.journal.evidence()):
            found = self._flake_aware_search()
            if found is not None:
                self.answer.flake_aware(found)
            return
        self.answer.confirmed(confirmed)

    def _finish_cases(self, found: CasesFound) -> None:
        """Confirm each distinct culprit of the cases (it and its parent re-tested, all at
        once, on the builds at hand), then state each case's answer."""
        verdicts = self.cases.effective() if self.cases is not None else {}
        parents: dict[str, str] = {}
        for case, answer in found.answers.items():
            if isinstance(answer, Found) and answer.culprit not in parents:
                parents[answer.culprit] = self.confirmation.parent_of(answer.culprit, verdicts.get(case, {}))
        order = {c: i for i, c in enumerate(self.cands.order)}
        pairs = sorted(parents.items(), key=lambda pair: order.get(pair[0], -1))
        if pairs:
            self.phase.culprit = pairs[0][0]
            self.phase.candidates = [pairs[0][0]]
            self.session.save()
        confirmed = self.confirmation.retest(pairs) if pairs else {}
        if confirmed is None:
            return
        if isinstance(confirmed, TakenBack):
            self._research()
            return
        self.case_answer.settle(found, parents, confirmed)

    def _research(self) -> None:
        """Search again from the journal as it is now (as a resume would), then confirm."""
        self.ui.note("an answer was taken back: searching again from the verdicts that stand")
        self.phase.culprit = None
        self.phase.candidates = []
        self.session.save()
        action = self.search()
        if action is not None:
            self._finish(action)
