"""One phase of a session, run to its end: endpoint checks, the search, culprit confirmation.

Every finished step is appended to the journal before anything else is decided from it, so a
resumed phase replays the journal and goes on without re-running finished steps.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from tritonbisect.session.journal import ROLE_CONFIRM, ROLE_ENDPOINT
from tritonbisect.session.phase_journal import PhaseJournal
from tritonbisect.session.phase_search import SearchLoop
from tritonbisect.session.phases import (
    STATUS_ABORTED,
    STATUS_FOUND,
    STATUS_INCONCLUSIVE,
    STATUS_INVALID,
    PhaseState,
)
from tritonbisect.session.step_queue import StepQueue

if TYPE_CHECKING:  # pragma: no cover
    from tritonbisect.session.manual import ManualJudge
    from tritonbisect.session.session import Session

_CANDIDATES: dict[tuple[str, str, str, bool], Any] = {}


def candidates_of(history: Any, good: str, bad: str, *, first_parent: bool = False) -> Any:
    """`history.candidates(...)`, remembered for this process (a command validates the range
    before it creates the session; the phase then reuses the result)."""
    key = (str(history.root), good, bad, bool(first_parent))
    if key not in _CANDIDATES:
        _CANDIDATES[key] = history.candidates(good, bad, first_parent=first_parent)
    return _CANDIDATES[key]


@dataclass
class Progress:
    remaining: int  # culprits still possible
    steps_left: int  # estimated rounds of tests left
    done: int  # steps finished in this phase
    in_flight: int


class PhaseRun(SearchLoop):
    _subjects_loaded: bool  # set in __init__, read first by subject()

    def __init__(self, session: Session, phase: PhaseState, ui: Any) -> None:
        self.session = session
        self.phase = phase
        self.spec = phase.spec
        self.ui = ui
        self.settings = session.settings

    # helpers ---------------------------------------------------------------------------

    def _judged(self, result: Any, role: str) -> tuple[Any, dict[str, Any] | None]:
        assert self.judge is not None
        before = len(self.records)
        judged = self.judge.judge(self, result, role)
        if len(self.records) != before:  # an answer was taken back at the prompt
            self._reread_verdicts()
        return judged

    def subject(self, commit: str) -> str:
        if not self._subjects_loaded:
            # one git call for every commit of the range, instead of one per step
            self._subjects_loaded = True
            with contextlib.suppress(Exception):  # a subject is decoration only
                self._subjects.update(self.history.subjects([self.spec.good, *self.cands.order]))
        if commit not in self._subjects:
            try:
                self._subjects[commit] = self.history.commit_info(commit).subject
            except Exception:  # noqa: BLE001 - a subject is decoration only
                self._subjects[commit] = ""
        return self._subjects[commit]

    def _perf_baseline(self, commit: str) -> tuple[float, ...] | None:
        """--regress perf: the good endpoint's samples, the yardstick of every other step
        (None for the good endpoint itself, which measures them)."""
        if self.perf is None or commit == self.spec.good:
            return None
        from tritonbisect.core.perf import baseline_of

        return baseline_of(self.records, self.spec.good)

    def _progress(self) -> Progress:
        from tritonbisect.search import classic as search

        if self._bayes:
            remaining, steps = self._bayes_progress()
            return Progress(remaining, steps, len(self.records), len(self.queue))

        try:
            rem = search.remaining(self.cands, self._effective())
        except Exception:  # noqa: BLE001
            rem = ()
        n = len(rem)
        return Progress(
            remaining=n,
            steps_left=search.steps_left(n, self.settings.jobs) if n else 0,
            done=len(self.records),
            in_flight=len(self.queue),
        )

    def _research(self) -> None:
        """Search again from the journal as it is now (as a resume would), then confirm."""
        self.ui.note("an answer was taken back: searching again from the verdicts that stand")
        self.phase.culprit = None
        self.phase.candidates = []
        self.session.save()
        action = self._search()
        if action is not None:
            self._finish(action)

    def _reread_verdicts(self) -> None:
        """The verdicts the search goes on from, after a correction: the same as a resume
        would read from the journal, so the running search and a resumed one agree."""
        from tritonbisect.session.evidence import classic_verdicts

        self.verdicts.clear()
        self.verdicts.update(classic_verdicts(self._evidence(), self._in_set))
        self.verdicts.setdefault(self.spec.bad, "bad")
        self.overrides.clear()  # a resume starts without them too; contradictions come back

    def _effective(self) -> dict[str, str]:
        eff = dict(self.verdicts)
        eff.update(self.overrides)
        return eff

    # the phase -------------------------------------------------------------------------

    def run(self) -> None:
        from tritonbisect.builds.recipes import recipe_from_config
        from tritonbisect.core.history import History
        from tritonbisect.search.classic import Candidates
        from tritonbisect.session.worker_pool import make_pool

        spec = self.spec
        self.history = History(spec.repo)
        self._subjects: dict[str, str] = {}
        self._subjects_loaded = False
        if spec.candidates:
            self.cands = Candidates.linear(spec.candidates)
        else:
            self.cands = candidates_of(self.history, spec.good, spec.bad, first_parent=spec.first_parent)
        self.phase.range_size = len(self.cands.order)
        self.recipe = recipe_from_config(spec.recipe_name, spec.recipe_config)
        self.policy = self.settings.policy()
        self.perf = self.policy.perf  # --regress perf: the good endpoint measures the reference
        # read once: phases share the journal
        self.journal = PhaseJournal(self.session.journal, spec.name, self.session.journal.records())
        self.queue = StepQueue(self.journal, self.ui, steps_dir=self.session.dir / "steps",
                               subject=self.subject, baseline=self._perf_baseline)
        self.verdicts: dict[str, str] = {}
        self.overrides: dict[str, str] = {}
        self._children: dict[str, list[str]] | None = None
        self._in_set = frozenset(self.cands.order)
        self.judge: ManualJudge | None = None
        if getattr(self.settings, "manual", False):
            from tritonbisect.session.manual import ManualJudge

            self.judge = ManualJudge(self.ui)
            self.queue.judge = self._judged
        self.ui.phase_started(self.session, self.phase, len(self.cands.order), self.subject)
        if self.records:
            self.ui.note(f"{len(self.records)} finished steps replayed from the journal")
        pool = make_pool(
            self.settings, spec, self.history.repo_id(), self.recipe, self.policy, note=self.ui.note
        )
        with self.queue.running_on(pool):
            if not self._endpoints():
                return
            action = self._search()
            if action is None:
                return
            self._finish(action)

    def _abort(self, reason: str) -> None:
        self.queue.abandon()
        self.phase.status = STATUS_ABORTED
        self.phase.reason = reason
        self.session.save()
        self.ui.phase_finished(self.session, self.phase)

    # endpoints ---------------------------------------------------------------------------

    def _endpoint_records(self) -> dict[str, dict[str, Any]]:
        out: dict[str, dict[str, Any]] = {}
        for rec in self.records:
            if rec.get("role") == ROLE_ENDPOINT and rec.get("verdict") in ("good", "bad", "skip"):
                out[rec["commit"]] = rec
        return out

    def _endpoints(self) -> bool:
        """Test the endpoints (each `_endpoint_runs()` times: several under --flaky auto) and
        check that they bracket a regression; a person's own endpoints are taken as given."""
        from tritonbisect.builds.recipes import test_spec_of

        spec = self.spec
        if self.judge is not None:
            self.judge.declare_endpoints(self)
            return True
        runs = self._endpoint_runs()
        tally = self._endpoint_tally()
        todo = {c: runs - sum(tally.get(c, {}).values()) for c in (spec.good, spec.bad)}
        test_spec = test_spec_of(self.recipe)
        needs_record = bool(test_spec and test_spec.record_command)
        if any(n > 0 for n in todo.values()):
            self.ui.note(
                f"checking the endpoints: the good {self._noun()} must "
                + ("fail, the bad (fixed) one must pass" if self.policy.regress == "fixed"
                   else "pass, the bad one must fail")
                + (f" ({runs} runs each, to measure how flaky the test is)" if runs > 1 else "")
            )
        if (needs_record or self.perf is not None) and todo[spec.good] > 0 and not tally.get(spec.good):
            # the good endpoint records the reference the bad endpoint is compared against
            # (the oracle's golden output, or the perf samples)
            self.queue.submit(spec.good, ROLE_ENDPOINT, 0, record=needs_record)
            if not self._collect_endpoints():
                return False
            todo[spec.good] -= 1
        for commit in (spec.good, spec.bad):
            for _ in range(max(0, todo[commit])):
                self.queue.submit(commit, ROLE_ENDPOINT, 0)
        if not self._collect_endpoints():
            return False
        problems = self._endpoint_problems(self._endpoint_tally())
        if problems:
            again = self._contradicting_endpoints()
            if again:
                # one run is one observation: a flaky test may say so once
                self.ui.note(
                    f"{' and '.join(again)} contradicted what you said: running "
                    f"{'them' if len(again) > 1 else 'it'} again before giving up"
                )
                for name in again:
                    commit = spec.good if name.startswith("the good") else spec.bad  # see _contradicting_endpoints
                    self.queue.submit(commit, ROLE_ENDPOINT, 0, record=needs_record and commit == spec.good)
                if not self._collect_endpoints():
                    return False
                problems = self._endpoint_problems(self._endpoint_tally())
                if not problems:
                    self.ui.note(
                        "the runs of an endpoint disagree: the test looks flaky; going on with the "
                        "flake-aware search (--flaky auto measures the flakiness first, "
                        "--flake-rate P fixes it, --repeat N runs each step N times)"
                    )
        if problems:
            done = self._endpoint_records()
            good, bad = done.get(spec.good), done.get(spec.bad)
            self.phase.status = STATUS_INVALID
            self.phase.reason = "; ".join(problems)
            self.session.save()
            self.ui.endpoints_invalid(self.session, self.phase, good, bad)
            self.ui.phase_finished(self.session, self.phase)
            return False
        return True

    def _collect_endpoints(self) -> bool:
        while self.queue:
            for done in self.queue.finished():
                rec = done.rec
                if rec is None:
                    continue
                self.ui.step_finished(self.spec.name, rec, self.subject(rec["commit"]), None)
                if done.aborted:
                    self._abort(f"endpoint {done.result.commit[:12]}: {done.result.reason}")
                    return False
        return True

    # confirmation ------------------------------------------------------------------------

    def _parent_of(self, culprit: str) -> str:
        parents = tuple(self.cands.parents.get(culprit, ()))
        if parents:
            goods = [p for p in parents if self._effective().get(p) == "good"]
            return (goods or list(parents))[0]
        if self.spec.candidates:
            return self.spec.good
        try:
            return self.history.resolve(f"{culprit}^1")
        except Exception:  # noqa: BLE001
            return self.spec.good

    def _finish(self, action: Any) -> None:
        from tritonbisect.search import classic as search

        if self._bayes:
            self._finish_bayes(action)
            return
        phase = self.phase
        if isinstance(action, search.Inconclusive):
            phase.status = STATUS_INCONCLUSIVE
            phase.candidates = list(action.candidates)
            phase.culprit = None
            phase.reason = (
                f"{len(action.candidates)} candidates remain, which no test can tell apart: "
                + self._candidates_said(phase.candidates)
            )
            self._record_posterior(None, phase.candidates)
            self.session.save()
            self.ui.phase_finished(self.session, phase)
            return
        culprit = action.culprit
        parent = self._parent_of(culprit)
        phase.culprit = culprit
        phase.candidates = [culprit]
        self.session.save()
        ev = self._evidence()
        marks = ev.marks  # a person's verdict is not re-tested
        confirm: dict[str, dict[str, Any]] = {}
        for rec in self.records:
            undone = int(rec.get("seq") or 0) in ev.undone
            if rec.get("role") == ROLE_CONFIRM and rec.get("verdict") in ("good", "bad", "skip") and not undone:
                confirm[rec["commit"]] = rec
        todo = [c for c in dict.fromkeys((culprit, parent)) if c not in confirm and c not in marks]
        if todo:
            self.ui.note(f"confirming: re-testing {self._named(culprit)} and its parent {self._named(parent)}")
        # judged by hand: one commit at a time, so the checkout shown is the one judged
        for batch in [[c] for c in todo] if self.judge is not None else [todo]:
            for commit in batch:
                self.queue.submit(commit, ROLE_CONFIRM, None)
            while self.queue:
                for done in self.queue.finished():
                    if done.rec is None:
                        continue
                    commit, rec = done.step.commit, done.rec
                    self.ui.step_finished(self.spec.name, rec, self.subject(commit), None)
                    if done.aborted:
                        self._abort(f"confirmation of {commit[:12]}: {done.result.reason}")
                        return
                    confirm[commit] = rec
                    if done.corrected:  # an answer the culprit rests on was taken back
                        self._research()
                        return
        for commit, verdict in marks.items():
            confirm[commit] = {"verdict": verdict, "kind": "marked"}
        c_ok = confirm[culprit]["verdict"] == "bad"
        p_ok = confirm[parent]["verdict"] == "good"
        if not (c_ok and p_ok) and self._switch_on_flakiness():
            action = self._bayes_search()
            if action is not None:
                self._finish_bayes(action)
            return
        prob = self._record_posterior(culprit)
        threshold = self._confidence()
        stated = "" if prob is None else f"; P(culprit) = {prob:.3f}"
        phase.status = STATUS_FOUND
        if c_ok and p_ok:
            phase.confidence = "high" if prob is None or prob >= threshold else "low"
            phase.reason = (
                f"confirmed: {self._named(culprit)} is bad again and its parent {self._named(parent)} good again"
                + stated
                + ("" if phase.confidence == "high" else f" (below {threshold:g})")
            )
        else:
            phase.confidence = "low"
            parts = []
            if not c_ok:
                parts.append(f"{culprit[:12]} re-tested {confirm[culprit]['verdict']} ({confirm[culprit]['kind']})")
            if not p_ok:
                parts.append(f"parent {parent[:12]} re-tested {confirm[parent]['verdict']} ({confirm[parent]['kind']})")
            phase.reason = (
                "low confidence: the confirmation disagrees with the search: "
                + "; ".join(parts)
                + stated
                + " (flaky test? try --flaky auto)"
            )
        self.session.save()
        self.ui.phase_finished(self.session, phase)
