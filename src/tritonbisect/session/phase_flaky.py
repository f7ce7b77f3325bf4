"""The flake-aware part of a phase: repeated endpoint runs, the Bayesian search loop, and the
confidence every answer states.

A mixin of `phase_run.PhaseRun` (through `phase_search.SearchLoop`), which provides the state
(cands, records, queue, settings, ui) and the step helpers (_abort, _known_cached, subject,
_progress).

Modes (`--flaky`):
  off     the classic search only; contradicting verdicts are re-tested, then skipped
  detect  (default) the classic search while the verdicts agree; the first contradiction (a
          commit tested both good and bad, a good commit above a bad one, a step whose
          repeated runs disagree, a confirmation that disagrees) switches the phase to the
          flake-aware search, which counts every verdict so far
  auto    flake-aware from the start; each endpoint is run ENDPOINT_RUNS times so that the
          error rates are estimated before the search
`--flake-rate p[,q]` fixes the rates and makes the phase flake-aware from the start.
"""

from __future__ import annotations

import math
from collections import Counter
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pragma: no cover
    from collections.abc import Callable

    from tritonbisect.builds.recipes import Recipe
    from tritonbisect.search.classic import Candidates
    from tritonbisect.session.evidence import Evidence
    from tritonbisect.session.phase_journal import PhaseJournal
    from tritonbisect.session.phases import PhaseSpec, PhaseState
    from tritonbisect.session.session import Session
    from tritonbisect.session.settings import BisectSettings
    from tritonbisect.session.step_queue import StepQueue

FLAKY_MODES = ("detect", "auto", "off")
ENDPOINT_RUNS = 3  # per endpoint under --flaky auto
DEFAULT_CONFIDENCE = 0.95
# A user who says the test is flaky (--flaky auto, --flake-rate) gets a stricter default: at
# p = 0.1 over 1000 commits, 0.95 is right in 97.5% of sessions and 0.99 in 99.5%, for about
# 2.6 more tests on average (bench/flaky_bench.py, strategies auto95 and auto).
FLAKY_CONFIDENCE = 0.99
# The prior probability that a test nothing has shown to be flaky is deterministic, for the
# confidence of a classic answer (search/bayes.py FlakeModel.trust): with it, a clean classic
# run with its confirmation states P >= 0.98 on ranges up to 4000 commits.
CLASSIC_TRUST = 0.9


def default_test_budget(n_candidates: int) -> int:
    """Search tests allowed in a flake-aware phase when --max-tests is not given: six times
    the noiseless limit, plus ten (room for p = 0.2 on any range; see bench/flaky_bench.py)."""
    return 6 * math.ceil(math.log2(n_candidates + 1)) + 10


def parse_flake_rate(text: str) -> tuple[float, float]:
    """`p` or `p,q` -> (p, q); q defaults to 0 (no false passes). ValueError with the reason."""
    parts = [part.strip() for part in text.split(",")]
    if not 1 <= len(parts) <= 2 or not all(parts):
        raise ValueError(f"--flake-rate expects P or P,Q, got {text!r}")
    try:
        values = [float(part) for part in parts]
    except ValueError:
        raise ValueError(f"--flake-rate expects numbers, got {text!r}") from None
    p, q = values[0], (values[1] if len(values) > 1 else 0.0)
    for name, rate in (("P", p), ("Q", q)):
        if not 0.0 <= rate < 0.5:
            raise ValueError(f"--flake-rate {name} must be at least 0 and below 0.5, got {rate}")
    return p, q


def confidence_of(settings: Any) -> float:
    """The posterior an answer must reach: --confidence, else the default for the mode."""
    given = getattr(settings, "confidence", None)
    if given:
        return float(given)
    declared_flaky = getattr(settings, "flaky", None) == "auto" or getattr(settings, "flake_rate", None)
    return FLAKY_CONFIDENCE if declared_flaky else DEFAULT_CONFIDENCE


def flake_model_of(settings: Any):
    """The bayes.FlakeModel of a session's settings: --flake-rate's fixed rates, or learned."""
    from tritonbisect.search.bayes import FlakeModel

    rate = getattr(settings, "flake_rate", None)
    if rate:
        return FlakeModel(p=float(rate[0]), q=float(rate[1]) if len(rate) > 1 else 0.0)
    return FlakeModel()


class FlakySearch:
    """Mixin: see the module docstring."""

    _bayes: bool | None = None

    # the state phase_run.PhaseRun sets up (declared, not set, here)
    session: Session
    phase: PhaseState
    spec: PhaseSpec
    settings: BisectSettings
    ui: Any
    recipe: Recipe
    perf: Any
    cands: Candidates
    journal: PhaseJournal
    verdicts: dict[str, str]
    overrides: dict[str, str]
    queue: StepQueue
    _children: dict[str, list[str]] | None
    _in_set: frozenset[str]
    _caches: bool  # set by SearchLoop._known_cached
    # and the step helpers it (or SearchLoop) defines
    _effective: Callable[[], dict[str, str]]
    _endpoint_records: Callable[[], dict[str, dict[str, Any]]]
    _known_cached: Callable[[], frozenset[str]]
    _reread_verdicts: Callable[[], None]
    _abort: Callable[[str], None]
    subject: Callable[[str], str]
    _progress: Callable[[], Any]

    @property
    def records(self) -> list[dict[str, Any]]:
        return self.journal.records

    # how commits are named to the user ------------------------------------------------------

    def _labels(self) -> dict[str, str]:
        """Names a command gave this phase's commits (`wheels`: the versions of its ladder)."""
        return (getattr(self.session, "extra", {}).get("labels") or {}).get(self.spec.name) or {}

    def _named(self, commit: str) -> str:
        return self._labels().get(commit) or commit[:12]

    def _noun(self) -> str:
        return "version" if self._labels() else "commit"

    # settings -----------------------------------------------------------------------------

    def _flaky_mode(self) -> str:
        return getattr(self.settings, "flaky", "detect") or "detect"

    def _flake_model(self):
        from tritonbisect.search import bayes

        model = flake_model_of(self.settings)
        if self._prior() is not None and not model.fixed and self._flaky_mode() != "auto":
            model = bayes.FlakeModel(trust=CLASSIC_TRUST)  # hinted: the deterministic limit
        return model

    def _prior(self):
        """The hint's prior over the commits (--prefer-pass/--prefer-files), or None."""
        from tritonbisect.session.phase_hint import prior_of

        return prior_of(self)

    def _confidence(self) -> float:
        return confidence_of(self.settings)

    def _test_budget(self) -> int:
        given = getattr(self.settings, "max_tests", None)
        return int(given) if given else default_test_budget(len(self.cands.order))

    def _endpoint_runs(self) -> int:
        if self._flaky_mode() == "auto" and not getattr(self.settings, "flake_rate", None):
            return ENDPOINT_RUNS
        return 1

    # evidence -----------------------------------------------------------------------------

    def _evidence(self) -> Evidence:
        from tritonbisect.session.evidence import evidence_of

        return evidence_of(self.records)

    def _flake_aware(self) -> bool:
        """Whether this phase uses the flake-aware search (decided once, then sticky)."""
        if self._bayes is None:
            mode = self._flaky_mode()
            self._bayes = bool(
                getattr(self.settings, "flake_rate", None)
                or mode == "auto"
                or self._prior() is not None  # a hint is a prior: the probabilistic search
                or (mode == "detect" and self._evidence().flakiness_seen)
            )
            if (self._bayes and mode == "detect" and not getattr(self.settings, "flake_rate", None)
                    and self._evidence().flakiness_seen):
                self.ui.note("the verdicts so far disagree: using the flake-aware search")
        return self._bayes

    def _switch_on_flakiness(self, why: str | None = None) -> bool:
        """Under --flaky detect, switch to the flake-aware search when the verdicts disagree
        (or `why`, an ancestry conflict the caller saw). True when switched."""
        if self._bayes or self._flaky_mode() != "detect":
            return False
        if why is None:
            ev = self._evidence()
            if not ev.flakiness_seen:
                return False
            shown = ", ".join(c[:12] for c in ev.disagreeing[:3]) or "repeated runs"
            why = f"verdicts disagree ({shown})"
        self._bayes = True
        self.ui.note(f"{why}: the test looks flaky; switching to the flake-aware search")
        return True

    # the endpoints --------------------------------------------------------------------------

    def _endpoint_tally(self) -> dict[str, Counter[str]]:
        """Verdicts of the endpoint steps, per commit (after corrections)."""
        from tritonbisect.session.evidence import undone_seqs

        undone = undone_seqs(self.records)
        tally: dict[str, Counter[str]] = {}
        for rec in self.records:
            if rec.get("role") != "endpoint" or rec.get("verdict") not in ("good", "bad", "skip"):
                continue
            if rec.get("seq") is not None and int(rec["seq"]) in undone:
                continue
            tally.setdefault(str(rec["commit"]), Counter())[rec["verdict"]] += 1
        return tally

    def _contradicting_endpoints(self) -> list[str]:
        """Endpoints run once whose test verdict contradicts the person, to run again (not
        under --flaky off, nor --regress perf, which samples on its own; a commit that does
        not build does not build twice)."""
        if self._flaky_mode() == "off" or self.perf is not None:
            return []
        tally = self._endpoint_tally()
        out = []
        for name, commit, want in ((f"the good {self._noun()}", self.spec.good, "good"),
                                   (f"the bad {self._noun()}", self.spec.bad, "bad")):
            runs = tally.get(commit, Counter())
            if sum(runs.values()) == 1 and not runs[want] and not runs["skip"]:
                out.append(f"{name} {self._named(commit)}")
        return out

    def _endpoint_problems(self, tally: dict[str, Counter[str]]) -> list[str]:
        """Why the endpoints cannot bracket a regression (empty: they can).

        One run each: the good commit must be good and the bad one bad. Several runs (a flaky
        test): the good commit must pass at least once, the bad one fail at least once, and
        the good commit must pass more often than the bad one."""
        spec = self.spec
        good, bad = tally.get(spec.good, Counter()), tally.get(spec.bad, Counter())
        runs = max(sum(good.values()), sum(bad.values()))
        problems = []
        if runs <= 1:
            latest = self._endpoint_records()
            if good["good"] != 1:
                why = _describe(latest.get(spec.good))
                problems.append(f"the good {self._noun()} {self._named(spec.good)} is not good ({why})")
            if bad["bad"] != 1:
                why = _describe(latest.get(spec.bad))
                problems.append(f"the bad {self._noun()} {self._named(spec.bad)} is not bad ({why})")
            if good["bad"] or bad["good"]:  # the test said the opposite, once
                problems.append(
                    "if the test is flaky: --flaky detect runs a contradicting endpoint again, "
                    "--flaky auto runs each endpoint 3 times, --repeat N runs every step N times"
                )
            return problems
        g_rate = good["good"] / max(1, good["good"] + good["bad"])
        b_rate = bad["good"] / max(1, bad["good"] + bad["bad"])
        if not good["good"]:
            problems.append(f"the good {self._noun()} {self._named(spec.good)} never passed ({_tally(good)})")
        if not bad["bad"]:
            problems.append(f"the bad {self._noun()} {self._named(spec.bad)} never failed ({_tally(bad)})")
        if not problems and g_rate <= b_rate:
            problems.append(
                f"the test does not tell the endpoints apart: good {_tally(good)}, "
                f"bad {_tally(bad)}"
            )
        return problems

    # the flake-aware loop --------------------------------------------------------------------

    def _bayes_search(self):
        """Test by expected information until one commit (or one untestable cluster) holds
        the confidence, or the test budget is spent. Returns the action, None when aborted."""
        from tritonbisect.search import bayes_step
        from tritonbisect.search import classic as search
        from tritonbisect.session.journal import ROLE_SEARCH

        spec = self.spec
        model = self._flake_model()
        confidence = self._confidence()
        budget = self._test_budget()
        cached = self._known_cached()
        in_set = self._in_set
        finished_round = max(
            (int(r.get("round") or 0) for r in self.records if r.get("role") == ROLE_SEARCH),
            default=0,
        )
        guard = 0
        while True:
            ev = self._evidence()
            live = self.queue.live()
            flying = self.queue.flying()
            free = self.settings.jobs - len(live)
            tests_left = budget - ev.search_tests - len(live)
            if tests_left <= 0 and live:
                action: Any = search.Wait()  # the budget is spent: hear what is running
            else:
                action = bayes_step.next_step(
                    self.cands, ev.counts, model=model, marks=ev.marks,
                    skipped={c for c in ev.skipped if c not in ev.counts},
                    workers=max(0, free), in_flight=flying, cached=cached,
                    confidence=confidence, tests_left=max(0, tests_left), prior=self._prior(),
                )
            if isinstance(action, (search.Found, search.Inconclusive)):
                if tests_left <= 0 and isinstance(action, search.Inconclusive):
                    self.ui.note(f"test budget spent ({budget} search tests; raise it with --max-tests)")
                for rec in self.queue.settle():
                    self.ui.step_finished(spec.name, rec, self.subject(rec["commit"]), None)
                return action
            submitted = 0
            if isinstance(action, search.TestNext):
                for commit in action.commits:
                    if submitted >= free or commit in flying:
                        continue
                    self.queue.submit(commit, ROLE_SEARCH, finished_round + 1)
                    submitted += 1
            if submitted:
                guard = 0
                continue
            if not self.queue:
                guard += 1
                if guard > 2:
                    raise RuntimeError(f"flake-aware search made no progress ({action!r})")
                continue
            for done in self.queue.finished():
                if done.rec is None:
                    continue
                rec, result = done.rec, done.result
                commit, role, round_ = done.step.commit, done.step.role, done.step.round
                if done.aborted:
                    self.ui.step_finished(spec.name, rec, self.subject(commit), None)
                    self._abort(f"{commit[:12]}: {result.reason}")
                    return None
                if self._caches and (rec.get("build") or {}).get("kind") == "pass":
                    cached = cached | {commit}
                if role == ROLE_SEARCH and commit in in_set:
                    finished_round = max(finished_round, round_ or 0)
                self.ui.step_finished(spec.name, rec, self.subject(commit), self._progress())

    def _bayes_progress(self) -> tuple[int, int]:
        """(commits holding 99% of the mass, estimated tests left) for the display."""
        post = self._posterior()
        if post is None:
            return 0, 0
        bits = post.entropy() + math.log2(1.0 / (1.0 - self._confidence()))
        p, q = post.rates()
        per_test = max(0.1, 1.0 - _h(p) / 2 - _h(q) / 2)  # what one test tells, roughly
        steps = math.ceil(bits / per_test / max(1, self.settings.jobs))
        return len(post.credible_set(0.99)), steps

    # what the answer is worth ----------------------------------------------------------------

    def _posterior(self):
        """The posterior of this phase from every verdict (None when it cannot be computed).

        The flake-aware search knows (or was told) the test is flaky. The classic search
        assumes a deterministic test: its answer is weighed with CLASSIC_TRUST that the test
        is deterministic, which the verdicts themselves can overturn."""
        from tritonbisect.search import bayes

        ev = self._evidence()
        model = self._flake_model()
        if not self._bayes and not model.fixed:
            model = bayes.FlakeModel(trust=CLASSIC_TRUST)
        try:
            return bayes.posterior(self.cands, ev.counts, model=model, marks=ev.marks)
        except ValueError:
            return None

    def _record_posterior(self, culprit: str | None, candidates: list[str] | None = None) -> float | None:
        """Save the posterior summary of this phase in session.json (`extra["posterior"]`);
        returns P(culprit), or P(culprit in candidates)."""
        post = self._posterior()
        if post is None:
            return None
        from tritonbisect.session.phase_hint import record_verdict

        record_verdict(self, culprit)
        summary = post.summary()
        prob = post.prob(culprit) if culprit else sum(post.prob(c) for c in candidates or [])
        summary.update(
            probability=round(prob, 6),
            threshold=self._confidence(),
            search=("flake-aware" if self._bayes else "classic") if self._prior() is None else (
                "hint-guided" + (", flake-aware" if self._flake_model().trust == 0 else "")),
            flaky=self._flaky_mode(),
        )
        self.session.extra.setdefault("posterior", {})[self.spec.name] = summary
        return prob

    def _finish_bayes(self, action: Any) -> None:
        from tritonbisect.search import classic as search
        from tritonbisect.session.phases import STATUS_FOUND, STATUS_INCONCLUSIVE

        phase = self.phase
        threshold = self._confidence()
        if isinstance(action, search.Found):
            prob = self._record_posterior(action.culprit) or 0.0
            phase.status = STATUS_FOUND
            phase.culprit = action.culprit
            phase.candidates = [action.culprit]
            phase.confidence = "high" if prob >= threshold else "low"
            phase.reason = (
                f"P(culprit) = {prob:.3f} from {self._evidence_line()} "
                f"(flake-aware search; threshold {threshold:g})"
            )
        else:
            cands = list(action.candidates)
            prob = self._record_posterior(None, cands) or 0.0
            phase.status = STATUS_INCONCLUSIVE
            phase.culprit = None
            phase.candidates = cands
            phase.confidence = None
            budget = self._test_budget()
            said = self._candidates_said(cands)
            why = (
                f"the test budget ({budget} search tests) was spent; raise it with --max-tests ({said})"
                if self._evidence().search_tests >= budget
                else f"no test can tell them apart ({said})"
                + ("; `tritonbisect mark` one of them to decide" if "never tested" in said else "")
            )
            phase.reason = (
                f"{len(cands)} candidates hold P = {prob:.3f} of the culprit; {why}"
            )
        self.session.save()
        self.ui.phase_finished(self.session, phase)

    def _candidates_said(self, candidates: list[str]) -> str:
        """What is known of an inconclusive answer's candidates, counted (evidence.py)."""
        from tritonbisect.session.evidence import candidate_states, candidates_summary

        return candidates_summary(candidate_states(self.records, candidates))

    def _evidence_line(self) -> str:
        ev = self._evidence()
        p, q = (0.0, 0.0)
        post = self._posterior()
        if post is not None:
            p, q = post.rates()
        n = sum(g + b for g, b in ev.counts.values())
        return f"{n} verdicts, error rates p≈{p:.2f} q≈{q:.2f}"


def _h(p: float) -> float:
    if p <= 0.0 or p >= 1.0:
        return 0.0
    return -(p * math.log2(p) + (1.0 - p) * math.log2(1.0 - p))


def _describe(rec: Any) -> str:
    if rec is None:
        return "not tested"
    return f"{rec.get('kind')}: {rec.get('reason')}"


def _tally(counter: Counter[str]) -> str:
    parts = [f"{counter[v]} {v}" for v in ("good", "bad", "skip") if counter[v]]
    return ", ".join(parts) or "not tested"
