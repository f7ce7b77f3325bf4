"""How flaky a phase takes its test to be: the --flaky modes, --flake-rate, the confidence an
answer must reach, the test budget, and whether the phase searches flake-aware.

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
from dataclasses import dataclass
from typing import TYPE_CHECKING

from tritonbisect.search import bayes

if TYPE_CHECKING:  # pragma: no cover
    from tritonbisect.search.classic import Candidates
    from tritonbisect.session.evidence import Evidence
    from tritonbisect.session.observer import Display
    from tritonbisect.session.phase_hint import PhaseHint

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


@dataclass
class SearchSettings:
    """How a session searches: the history it walks and how flaky it takes the test to be."""

    first_parent: bool = False  # --first-parent: only the first parent of merges
    flaky: str = "detect"  # --flaky, one of FLAKY_MODES
    flake_rate: list[float] | None = None  # --flake-rate P[,Q]: fixed error rates
    confidence: float | None = None  # --confidence; None: DEFAULT_CONFIDENCE or FLAKY_CONFIDENCE
    max_tests: int | None = None  # --max-tests: search tests allowed (flake-aware search)


def confidence_of(settings: SearchSettings) -> float:
    """The posterior an answer must reach: --confidence, else the default for the mode."""
    if settings.confidence:
        return float(settings.confidence)
    declared_flaky = settings.flaky == "auto" or settings.flake_rate
    return FLAKY_CONFIDENCE if declared_flaky else DEFAULT_CONFIDENCE


def flake_model_of(settings: SearchSettings) -> bayes.FlakeModel:
    """The bayes.FlakeModel of a session's settings: --flake-rate's fixed rates, or learned."""
    rate = settings.flake_rate
    if rate:
        return bayes.FlakeModel(p=float(rate[0]), q=float(rate[1]) if len(rate) > 1 else 0.0)
    return bayes.FlakeModel()


class Flakiness:
    """One phase's view of its test's flakiness; whether it searches flake-aware is decided
    when the search starts and never goes back (see the module docstring)."""

    def __init__(self, settings: SearchSettings, hint: PhaseHint, ui: Display) -> None:
        self.settings = settings
        self.hint = hint
        self.ui = ui
        self.mode = settings.flaky or "detect"
        self.rate = settings.flake_rate
        self.confidence = confidence_of(settings)
        self.aware: bool | None = None

    def model(self) -> bayes.FlakeModel:
        """The flake model of the flake-aware search (a hinted phase trusts the test as the
        classic search does, unless told the test is flaky)."""
        model = flake_model_of(self.settings)
        if self.hint.prior() is not None and not model.fixed and self.mode != "auto":
            model = bayes.FlakeModel(trust=CLASSIC_TRUST)  # hinted: the deterministic limit
        return model

    def test_budget(self, n_candidates: int) -> int:
        given = self.settings.max_tests
        return int(given) if given else default_test_budget(n_candidates)

    def endpoint_runs(self) -> int:
        return ENDPOINT_RUNS if self.mode == "auto" and not self.rate else 1

    def decide(self, evidence: Evidence) -> bool:
        """Whether this phase searches flake-aware (decided once, then sticky)."""
        if self.aware is None:
            self.aware = bool(
                self.rate
                or self.mode == "auto"
                or self.hint.prior() is not None  # a hint is a prior: the probabilistic search
                or (self.mode == "detect" and evidence.flakiness_seen)
            )
            if self.aware and self.mode == "detect" and not self.rate and evidence.flakiness_seen:
                self.ui.note("the verdicts so far disagree: using the flake-aware search")
        return self.aware

    def switch(self, evidence: Evidence, why: str | None = None) -> bool:
        """Under --flaky detect, switch to the flake-aware search when the verdicts disagree
        (or `why`, an ancestry conflict the caller saw). True when switched."""
        if self.aware or self.mode != "detect":
            return False
        if why is None:
            if not evidence.flakiness_seen:
                return False
            shown = ", ".join(c[:12] for c in evidence.disagreeing[:3]) or "repeated runs"
            why = f"verdicts disagree ({shown})"
        self.aware = True
        self.ui.note(f"{why}: the test looks flaky; switching to the flake-aware search")
        return True

    def posterior(self, cands: Candidates, evidence: Evidence) -> bayes.Posterior | None:
        """The posterior of the phase from every verdict (None when it cannot be computed).

        The flake-aware search knows (or was told) the test is flaky. The classic search
        assumes a deterministic test: its answer is weighed with CLASSIC_TRUST that the test
        is deterministic, which the verdicts themselves can overturn."""
        model = self.model()
        if not self.aware and not model.fixed:
            model = bayes.FlakeModel(trust=CLASSIC_TRUST)
        try:
            return bayes.posterior(cands, evidence.counts, model=model, marks=evidence.marks)
        except ValueError:
            return None

    def confirmed_confidence(self, post: bayes.Posterior | None, culprit: str) -> tuple[bool, str]:
        """A confirmed classic answer (bad again, its parent good again): whether its confidence
        is high, and the words for its probability.

        High when P(culprit) reaches the threshold, or when no verdict contradicts the culprit:
        then the test behaved deterministically, and P, computed as if it might be flaky, is
        low only because many commits were never tested (with --jobs, the steps above a bad
        commit are stopped; thousands of commits above the culprit rest on its own verdicts).
        A deterministic answer is never low-confidence."""
        if post is None:
            return True, ""
        prob = post.prob(culprit)
        if prob >= self.confidence:
            return True, f"; P(culprit) = {prob:.3f}"
        if post.wrong_verdicts(culprit) == 0:
            return True, f"; no verdict contradicts it (P(culprit) = {prob:.3f} were the test flaky)"
        return False, f"; P(culprit) = {prob:.3f} (below {self.confidence:g})"

    def search_name(self) -> str:
        """Which search gave the answer, for the posterior summary in session.json."""
        if self.hint.prior() is None:
            return "flake-aware" if self.aware else "classic"
        return "hint-guided" + (", flake-aware" if self.model().trust == 0 else "")
