"""How much a candidate's cost changed against its reference's, from samples taken in pairs:
statistics only (no I/O), for any cost a test measures -- a kernel's time, a compile time.

    compare(reference, candidate, threshold=0.05, alpha=0.01) -> Comparison

`reference[i]` and `candidate[i]` are the i-th pair: two runs measured one right after the
other on the same worker, in a random order, so whatever slows the machine for a while -- a
co-tenant on the GPU, clocks, heat, a CI runner's neighbours -- falls on either alike.
Values are costs: positive, lower is better (`higher_is_better`: a rate, compared as its
inverse). Both tests are paired randomization tests: under "the candidate costs 1 + delta
times the reference", the candidate divided by 1 + delta and the reference are two draws
of the same slot pair, which the random order assigned, so every swap of a pair's runs was
as likely as what happened. Two statistics:

    floor   the ratio of the arms' floors (their FLOOR_QUANTILE quantile). Interference
            only ever adds time: a run takes its code's own time plus whatever the machine
            took from it, so each arm's fastest runs are its code's time however often the
            others were slowed. On an H200 whose co-tenant ran in bursts, the paired ratios
            of a 21% slower kernel spread from 0.45 to 3.3 and the medians said +70%; the
            floors said +21.7% (quiet GPU: +21.2%). Its p-values count the swap patterns
            (`FloorTest`), its interval inverts them.
    paired  the paired log-ratios: the Wilcoxon signed-rank test, the Hodges-Lehmann
            estimate and its interval (exact up to EXACT_MAX pairs without ties). Best
            where what slows the machine lasts longer than a pair and cancels in the ratio.

The floor stands for an arm only if the arms differ by a scale: the candidate's runs must not
rise above its floor more often or further than its reference's do above theirs.
`floor_check` tests that (one-sided Mann-Whitney of each run's excess over its arm's floor, at
CHECK_ALPHA); a candidate that is slow in some of its own runs and not in others (an
autotuner's choice, a bimodal kernel) fails it, and the paired statistic decides. So do
fewer than MIN_FLOOR_PAIRS pairs. Without interference the check also fails now and then
by chance (an arm's floor is itself noisy); the paired statistic is as good there.

The decision is taken against the allowed slow-down `threshold`, each side at level alpha
(the interval shown is at 1 - 2*alpha and agrees with the decision):

    worse      significantly above +threshold: the interval lies wholly above it
    within     significantly below it
    undecided  neither yet: take more pairs

The swap patterns are drawn from a generator seeded by the samples themselves: the same
samples always give the same decision (a resumed session judges as its first run did).
"""

from __future__ import annotations

import math
import random
import zlib
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from statistics import NormalDist
from typing import Any

from tritonbisect.search.perfstats import mann_whitney_u

WORSE = "worse"
WITHIN = "within"
UNDECIDED = "undecided"

FLOOR = "floor"
PAIRED = "paired"

# an arm's floor: its 5% quantile, between its two fastest runs at 20 pairs (one stray
# fast run does not make it); lower quantiles held best against bursts (bench/pairstats_bench.py)
FLOOR_QUANTILE = 0.05
MIN_FLOOR_PAIRS = 10  # fewer: the swaps of so few pairs cannot make a floor significant
CHECK_ALPHA = 0.05  # the floor check's level (a false alarm costs only the floor's power:
# the paired statistic decides that step; under bursts it fails at this rate, by chance)
FLIPS = 1024  # swap patterns of the randomization test: all of them up to 10 pairs
BISECTIONS = 18  # steps of the search for a floor interval's bounds
EXACT_MAX = 30  # pairs up to which the signed-rank distribution is counted exactly
SLOWED = 0.05  # a run this much above its arm's floor counts as slowed (for the record)


@dataclass(frozen=True)
class Interval:
    """A relative change and its confidence interval (+0.061 = 6.1% more)."""

    change: float
    low: float
    high: float

    def text(self) -> str:
        """`+6.1% [4.9, 7.2]` (an open side: `-inf` or `inf`)."""
        return f"{_pct(self.change, sign=True)}% [{_pct(self.low)}, {_pct(self.high)}]"


def _pct(x: float, *, sign: bool = False) -> str:
    if math.isinf(x):
        return "inf" if x > 0 else "-inf"
    return f"{x * 100:+.1f}" if sign else f"{x * 100:.1f}"


@dataclass(frozen=True)
class FloorCheck:
    """Whether the floors may stand for the arms (see the module docstring)."""

    applies: bool
    p: float  # two-sided Mann-Whitney p of the runs' excess over their arm's floor
    slowed_reference: float  # share of the reference's runs more than SLOWED above its floor
    slowed_candidate: float
    reason: str


@dataclass(frozen=True)
class Comparison:
    decision: str  # WORSE | WITHIN | UNDECIDED
    method: str  # FLOOR | PAIRED: the estimate that decided
    estimate: Interval  # that estimate, of the metric as given (a rate's change for a rate)
    floor: Interval  # the floors' ratio (its interval open unless the floor decided)
    paired: Interval
    check: FloorCheck
    n: int  # pairs
    confidence: float  # of the intervals: 1 - 2 * alpha
    threshold: float
    p_worse: float  # the deciding test's one-sided p-values against the threshold
    p_within: float

    def text(self) -> str:
        return self.estimate.text()

    def describe(self) -> str:
        """`+6.1% [4.9, 7.2] (floor of 20 pairs; 98% CI)`."""
        return f"{self.text()} ({self.method}, {self.n} pairs, {self.confidence * 100:g}% CI)"

    def to_dict(self) -> dict[str, Any]:
        """As JSON keeps it: an open side of an interval is None (JSON has no infinity)."""
        return _finite(asdict(self))


def _finite(data: Any) -> Any:
    if isinstance(data, dict):
        return {k: _finite(v) for k, v in data.items()}
    if isinstance(data, float) and not math.isfinite(data):
        return None
    return data


def interval_of(data: Mapping[str, Any] | None) -> Interval | None:
    """An Interval from its dict (a journal record); None when there is none."""
    if not isinstance(data, Mapping):
        return None
    raw = (data.get("change"), data.get("low"), data.get("high"))
    values = [_num(x) for x in raw]
    change, low, high = values[0], -math.inf if raw[1] is None else values[1], math.inf if raw[2] is None else values[2]
    if change is None or low is None or high is None:
        return None  # a record someone else wrote: numbers only
    out = Interval(change, low, high)
    if not math.isfinite(out.change) or math.isnan(out.low) or math.isnan(out.high):
        return None
    return out


def _num(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value)


# --- small pieces --------------------------------------------------------------------------


def quantile(values: Sequence[float], q: float) -> float:
    """The q-quantile, linear between order statistics (R's type 7, numpy's default)."""
    if not values:
        raise ValueError("quantile of no values")
    return _quantile_sorted(sorted(values), q)


def _signed_rank_counts(n: int) -> list[int]:
    """How many of the 2**n sign patterns give each W+ = 0..n(n+1)/2."""
    counts = [1]
    for rank in range(1, n + 1):
        grown = counts + [0] * rank
        for w, c in enumerate(counts):
            grown[w + rank] += c
        counts = grown
    return counts


def _ranks(values: Sequence[float]) -> list[float]:
    """Ranks 1..n, ties sharing their mean rank."""
    order = sorted(range(len(values)), key=lambda i: values[i])
    ranks = [0.0] * len(values)
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and values[order[j + 1]] == values[order[i]]:
            j += 1
        for k in range(i, j + 1):
            ranks[order[k]] = (i + j) / 2 + 1
        i = j + 1
    return ranks


def signed_rank_p(diffs: Sequence[float]) -> tuple[float, float]:
    """The Wilcoxon signed-rank test of `diffs` about 0: one-sided p-values of "they tend to
    be positive" and "negative". Zeros are dropped; exact without ties up to EXACT_MAX
    differences, else the normal approximation with tie and continuity corrections."""
    d = [x for x in diffs if x != 0]
    n = len(d)
    if n == 0:
        return 1.0, 1.0
    ranks = _ranks([abs(x) for x in d])
    w_plus = sum(r for r, x in zip(ranks, d, strict=True) if x > 0)
    total = n * (n + 1) / 2
    ties = len(set(abs(x) for x in d)) != n
    if not ties and n <= EXACT_MAX:
        counts = _signed_rank_counts(n)
        whole = 2**n
        w = round(w_plus)
        return sum(counts[w:]) / whole, sum(counts[: w + 1]) / whole
    groups: dict[float, int] = {}
    for x in d:
        groups[abs(x)] = groups.get(abs(x), 0) + 1
    var = n * (n + 1) * (2 * n + 1) / 24 - sum(t**3 - t for t in groups.values()) / 48
    if var <= 0:
        return 1.0, 1.0
    sd = math.sqrt(var)
    mean = total / 2
    upper = 1 - NormalDist().cdf((w_plus - mean - 0.5) / sd)
    lower = NormalDist().cdf((w_plus - mean + 0.5) / sd)
    return min(1.0, upper), min(1.0, lower)


def hodges_lehmann(diffs: Sequence[float], alpha: float) -> tuple[float, float, float]:
    """The Hodges-Lehmann estimate of the centre of `diffs` (the median of the Walsh
    averages) and its interval at 1 - 2*alpha from the signed-rank distribution; a side
    the samples cannot bound at that level is infinite."""
    n = len(diffs)
    if n == 0:
        raise ValueError("no differences")
    walsh = sorted((diffs[i] + diffs[j]) / 2 for i in range(n) for j in range(i, n))
    total = len(walsh)
    centre = quantile(walsh, 0.5)
    if n <= EXACT_MAX:
        counts = _signed_rank_counts(n)
        whole = 2**n
        k, below = 0, 0
        while k < len(counts) and (below + counts[k]) / whole <= alpha:
            below += counts[k]
            k += 1
    else:
        sd = math.sqrt(n * (n + 1) * (2 * n + 1) / 24)
        k = max(0, math.floor(total / 2 + 0.5 - NormalDist().inv_cdf(1 - alpha) * sd))
    if k == 0:
        return centre, -math.inf, math.inf
    return centre, walsh[k - 1], walsh[total - k]


def _seed(*arms: Sequence[float]) -> int:
    return zlib.crc32(repr([[round(v, 12) for v in arm] for arm in arms]).encode())


def _flips(n: int, seed: int) -> list[tuple[bool, ...]]:
    """The swap patterns of the randomization test, the identity first: every one of the
    2**n up to FLIPS, else FLIPS - 1 drawn (seeded) besides the identity."""
    if 2**n <= FLIPS:
        return [tuple(bool(k >> i & 1) for i in range(n)) for k in range(2**n)]
    rng = random.Random(seed)
    return [(False,) * n] + [tuple(rng.random() < 0.5 for _ in range(n)) for _ in range(FLIPS - 1)]


def _low(values: list[float], q: float) -> float:
    values.sort()
    return _quantile_sorted(values, q)


def _quantile_sorted(s: Sequence[float], q: float) -> float:
    h = (len(s) - 1) * q
    lo = math.floor(h)
    if lo + 1 >= len(s):
        return s[-1]
    return s[lo] + (h - lo) * (s[lo + 1] - s[lo])


class FloorTest:
    """The randomization test of the floors' ratio against a ratio `1 + delta`.

    With the candidate divided by 1 + delta, a pair's two runs are exchangeable under
    "the candidate costs 1 + delta times the reference": which of two back-to-back slots
    each arm took is what the order within the pair decided, and a random order (or
    slots that do not differ by position) makes either way as likely. The p-values count the
    swap patterns whose floors' ratio is at least (at most) the observed one. For fixed
    patterns they are monotone in delta, so the interval is found by bisection and agrees
    with the decision."""

    def __init__(self, reference: Sequence[float], candidate: Sequence[float], *,
                 q: float = FLOOR_QUANTILE) -> None:
        self.ref = [math.log(v) for v in reference]
        self.cand = [math.log(v) for v in candidate]
        n = len(self.ref)
        self.q = q
        self.h = (n - 1) * q  # the floor interpolates between order statistics k and k + 1
        self.k = min(n, math.floor(self.h) + 2)  # how many of an arm's smallest it needs
        self.ref_order = sorted(range(n), key=lambda i: self.ref[i])
        self.cand_order = sorted(range(n), key=lambda i: self.cand[i])
        self.flips = _flips(n, _seed(reference, candidate))
        self.point = self.statistic(0.0, self.flips[0]) if self.flips else 0.0

    def _floor(self, flip: Sequence[bool], shift: float, *, candidate_role: bool) -> float:
        """The floor of one role's arm: its candidate runs are those of the pairs where
        `flip` is not `candidate_role`... said plainly: the candidate role holds the
        candidate's run of each pair not swapped and the reference's run of each swapped
        one; the reference role the others. Only its k smallest values are looked at."""
        k = self.k
        cands: list[float] = []
        for i in self.cand_order:
            if flip[i] != candidate_role:
                cands.append(self.cand[i] - shift)
                if len(cands) == k:
                    break
        refs: list[float] = []
        for i in self.ref_order:
            if flip[i] == candidate_role:
                refs.append(self.ref[i])
                if len(refs) == k:
                    break
        low = sorted(cands + refs)
        lo = math.floor(self.h)
        if lo + 1 >= len(self.ref):
            return low[-1]
        return low[lo] + (self.h - lo) * (low[lo + 1] - low[lo])

    def statistic(self, shift: float, flip: Sequence[bool]) -> float:
        """log floor(candidate role) - log floor(reference role), the candidate's logs less
        `shift`, pairs swapped where `flip` says."""
        return (self._floor(flip, shift, candidate_role=True)
                - self._floor(flip, shift, candidate_role=False))

    def p_values(self, shift: float) -> tuple[float, float]:
        """One-sided p-values (larger, smaller) of the log-ratio against `shift`."""
        observed = self.point - shift
        stats = [self.statistic(shift, f) for f in self.flips]
        tol = 1e-12
        above = sum(t >= observed - tol for t in stats)
        below = sum(t <= observed + tol for t in stats)
        # drawn patterns: the identity is among them, so this is (1 + k) / (1 + B)
        return above / len(stats), below / len(stats)

    def bound(self, alpha: float, *, lower: bool, span: float) -> float:
        """The lower (upper) confidence bound of the log-ratio at level alpha: where the
        larger (smaller) p-value reaches alpha; infinite where none does within `span`."""
        def rejects(shift: float) -> bool:
            larger, smaller = self.p_values(shift)
            return (larger if lower else smaller) < alpha

        lo, hi = self.point - span, self.point + span
        if lower:
            if rejects(self.point):
                return self.point  # pragma: no cover (the identity keeps p >= 1/2 at the point)
            if not rejects(lo):
                return -math.inf
            good, bad = lo, self.point  # rejects at good, not at bad
        else:
            if not rejects(hi):
                return math.inf
            good, bad = hi, self.point
        for _ in range(BISECTIONS):
            mid = (good + bad) / 2
            if rejects(mid):
                good = mid
            else:
                bad = mid
        return (good + bad) / 2


def floor_interval(reference: Sequence[float], candidate: Sequence[float], alpha: float,
                   *, q: float = FLOOR_QUANTILE) -> tuple[float, float, float]:
    """log(floor(candidate) / floor(reference)) and its interval at 1 - 2*alpha, from the
    randomization test (`FloorTest`)."""
    test = FloorTest(reference, candidate, q=q)
    span = max(1.0, 4 * max(abs(c - r) for r, c in zip(test.ref, test.cand, strict=True)))
    return (test.point, test.bound(alpha, lower=True, span=span),
            test.bound(alpha, lower=False, span=span))


def floor_check(reference: Sequence[float], candidate: Sequence[float], *,
                q: float = FLOOR_QUANTILE, alpha: float = CHECK_ALPHA) -> FloorCheck:
    """Whether each arm's runs exceed their own floor alike (see the module docstring)."""
    fr, fc = quantile(reference, q), quantile(candidate, q)
    ex_r = [v / fr - 1 for v in reference]
    ex_c = [v / fc - 1 for v in candidate]
    slowed_r = sum(e > SLOWED for e in ex_r) / len(ex_r)
    slowed_c = sum(e > SLOWED for e in ex_c) / len(ex_c)
    if len(reference) < MIN_FLOOR_PAIRS:
        return FloorCheck(False, 1.0, slowed_r, slowed_c,
                          f"{len(reference)} pairs: too few for the floors (at least {MIN_FLOOR_PAIRS})")
    # one-sided: what the floor could hide is the candidate's own slow runs
    p = mann_whitney_u(ex_c, ex_r, "greater").p
    if p < alpha:
        return FloorCheck(False, p, slowed_r, slowed_c, (
            f"the candidate's runs rise further above its floor than the reference's (p={p:.2g}; "
            f"slowed {slowed_c:.0%} vs {slowed_r:.0%}): its own time varies, so its fastest "
            "runs do not stand for it"))
    return FloorCheck(True, p, slowed_r, slowed_c,
                      f"the candidate's runs rise above its floor as the reference's do (p={p:.2g}; "
                      f"slowed {slowed_c:.0%} vs {slowed_r:.0%})")


# --- the comparison --------------------------------------------------------------------------


def compare(
    reference: Sequence[float],
    candidate: Sequence[float],
    *,
    threshold: float,
    alpha: float,
    higher_is_better: bool = False,
    method: str = "auto",
    interval: bool = True,
) -> Comparison:
    """Is `candidate` worse than `reference` by more than `threshold` (a fraction)?

    `method`: "auto" (the floor where `floor_check` lets it, else paired), FLOOR or PAIRED.
    Intervals are of the metric as given: a rate's own change (negative is worse). Without
    `interval` the floor's interval is not searched (its point stands for it: a caller that
    takes more samples when undecided wants only the decision)."""
    if len(reference) != len(candidate):
        raise ValueError("the reference and the candidate need the same number of samples (pairs)")
    if not reference:
        raise ValueError("no pairs")
    if not 0 < alpha < 0.5:
        raise ValueError("alpha must be between 0 and 0.5")
    if not 0 <= threshold < 1:
        raise ValueError("threshold must be at least 0 and below 1")
    if method not in ("auto", FLOOR, PAIRED):
        raise ValueError(f"method must be auto, floor or paired, not {method!r}")
    if any(not (v > 0 and math.isfinite(v)) for v in (*reference, *candidate)):
        raise ValueError("samples must be positive finite numbers")
    # costs: a rate's inverse, so that interference always adds and worse is larger
    ref = [1 / v for v in reference] if higher_is_better else list(reference)
    cand = [1 / v for v in candidate] if higher_is_better else list(candidate)
    limit = -math.log(1 - threshold) if higher_is_better else math.log(1 + threshold)
    n = len(ref)

    diffs = [math.log(c / r) for r, c in zip(ref, cand, strict=True)]
    sr_worse, sr_within = signed_rank_p([d - limit for d in diffs])
    paired_log = hodges_lehmann(diffs, alpha)
    check = floor_check(ref, cand)
    if method == FLOOR and n < MIN_FLOOR_PAIRS:
        raise ValueError(f"the floor needs at least {MIN_FLOOR_PAIRS} pairs")
    use_floor = method == FLOOR or (method == "auto" and check.applies)

    floor_log: tuple[float, float, float] | None = None
    if use_floor:
        test = FloorTest(ref, cand)
        p_worse, p_within = test.p_values(limit)
        decision = WORSE if p_worse < alpha else WITHIN if p_within < alpha else UNDECIDED
        if interval:
            span = max(1.0, 4 * max(abs(d) for d in diffs))
            lo = test.bound(alpha, lower=True, span=span)
            hi = test.bound(alpha, lower=False, span=span)
            # the bounds are found to BISECTIONS steps: they keep to the decision taken at the limit
            lo = max(lo, limit) if decision == WORSE else min(lo, limit)
            hi = min(hi, limit) if decision == WITHIN else max(hi, limit)
        else:
            lo, hi = -math.inf, math.inf
        floor_log = (test.point, lo, hi)
        chosen = floor_log
    else:
        _, lo, hi = paired_log
        # the Walsh averages' interval is the signed-rank test inverted: its bounds decide
        decision = WORSE if lo > limit else WITHIN if hi < limit else UNDECIDED
        p_worse, p_within = sr_worse, sr_within
        chosen = paired_log

    def metric(logs: tuple[float, float, float]) -> Interval:
        point, low, high = logs
        if higher_is_better:  # the rate's change: the cost's inverse
            return Interval(_rel(-point), _rel(-high), _rel(-low))
        return Interval(_rel(point), _rel(low), _rel(high))

    floor_point = math.log(quantile(cand, FLOOR_QUANTILE) / quantile(ref, FLOOR_QUANTILE))
    return Comparison(
        decision=decision,
        method=FLOOR if use_floor else PAIRED,
        estimate=metric(chosen),
        floor=metric(floor_log) if floor_log is not None else metric((floor_point, -math.inf, math.inf)),
        paired=metric(paired_log),
        check=check,
        n=n,
        confidence=1 - 2 * alpha,
        threshold=threshold,
        p_worse=p_worse,
        p_within=p_within,
    )


def _rel(log_ratio: float) -> float:
    return log_ratio if math.isinf(log_ratio) else math.expm1(log_ratio)
