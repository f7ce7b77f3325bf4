"""Statistics for performance verdicts: the Mann-Whitney U test and the decision it drives.

Pure functions on lists of floats (no I/O, nothing of ours imported), so the decision rule
can be checked against scipy and simulated in the benchmark. A commit's timing samples are
compared with the good endpoint's samples scaled by the allowed slow-down (`threshold`):

    worse    the samples are larger than baseline * (1 + threshold), significantly
    within   they are smaller than baseline * (1 + threshold), significantly
    undecided  neither, yet: take more samples

("larger" and "smaller" swap when a higher metric is better, and the baseline is then
scaled by 1 - threshold.) Both one-sided tests run at the same significance `alpha`, so a
commit is called slower only on evidence at that level, and called fine only on evidence
that it is not slower beyond the threshold.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

EXACT_MAX_TOTAL = 60  # exact null distribution below this many samples in all (no ties)

WORSE = "worse"
WITHIN = "within"
UNDECIDED = "undecided"


@dataclass(frozen=True)
class MannWhitney:
    u: float  # U of the first sample: pairs where x > y, ties counted one half
    p: float  # one-sided p-value for the alternative asked
    method: str  # "exact" | "normal"


def _u_statistic(x: Sequence[float], y: Sequence[float]) -> float:
    u = 0.0
    for a in x:
        for b in y:
            if a > b:
                u += 1.0
            elif a == b:
                u += 0.5
    return u


def _exact_counts(m: int, n: int) -> list[int]:
    """Number of orderings of m x's and n y's with U = 0..m*n (no ties).

    The coefficients of the Gaussian binomial [m+n choose m]_q, built as
    prod_{k=1..m} (1 - q^(n+k)) / (1 - q^k) with exact integer arithmetic."""
    size = m * n + 1
    poly = [0] * size
    poly[0] = 1
    for k in range(1, m + 1):
        shift = n + k
        for i in range(size - 1, shift - 1, -1):  # multiply by (1 - q^shift)
            poly[i] -= poly[i - shift]
        for i in range(k, size):  # divide by (1 - q^k): running sums with stride k
            poly[i] += poly[i - k]
    return poly


def _ranks_ties(values: Sequence[float]) -> list[int]:
    counts: dict[float, int] = {}
    for v in values:
        counts[v] = counts.get(v, 0) + 1
    return [c for c in counts.values() if c > 1]


def mann_whitney_u(
    x: Sequence[float], y: Sequence[float], alternative: str = "greater"
) -> MannWhitney:
    """One-sided Mann-Whitney U test of x against y.

    alternative "greater": x tends to be larger than y; "less": smaller. Exact p-value when
    there are no ties and at most EXACT_MAX_TOTAL samples, else the normal approximation
    with tie and continuity corrections (as scipy.stats.mannwhitneyu does).
    """
    if alternative not in ("greater", "less"):
        raise ValueError(f"alternative must be 'greater' or 'less', not {alternative!r}")
    m, n = len(x), len(y)
    if m == 0 or n == 0:
        raise ValueError("both samples need at least one value")
    u = _u_statistic(x, y)
    # P(U >= u) for "greater"; for "less", by symmetry, P(U' >= m*n - u)
    u_tail = u if alternative == "greater" else m * n - u
    ties = _ranks_ties([*x, *y])
    if not ties and m + n <= EXACT_MAX_TOTAL:
        counts = _exact_counts(m, n)
        start = math.ceil(u_tail)
        p = sum(counts[start:]) / math.comb(m + n, m)
        return MannWhitney(u, min(1.0, p), "exact")
    total = m + n
    mean = m * n / 2
    tie_term = sum(t**3 - t for t in ties) / (total * (total - 1))
    var = m * n / 12 * ((total + 1) - tie_term)
    if var <= 0:
        return MannWhitney(u, 1.0, "normal")  # every value equal: no evidence either way
    z = (u_tail - mean - 0.5) / math.sqrt(var)
    p = 0.5 * math.erfc(z / math.sqrt(2))
    return MannWhitney(u, min(1.0, max(0.0, p)), "normal")


def median(values: Sequence[float]) -> float:
    s = sorted(values)
    k = len(s)
    if k == 0:
        raise ValueError("median of no values")
    return s[k // 2] if k % 2 else (s[k // 2 - 1] + s[k // 2]) / 2


@dataclass(frozen=True)
class Judgement:
    decision: str  # WORSE | WITHIN | UNDECIDED
    p_worse: float  # p-value of "worse than baseline beyond the threshold"
    p_within: float  # p-value of "not worse beyond the threshold"
    change: float  # median(samples) / median(baseline) - 1 (positive: larger metric)
    n: int
    n_baseline: int

    def describe(self, *, higher_is_better: bool = False) -> str:
        direction = "higher" if self.change >= 0 else "lower"
        return (
            f"median {abs(self.change) * 100:.1f}% {direction} than the good endpoint "
            f"(n={self.n} vs {self.n_baseline}; p_worse={self.p_worse:.3g}, "
            f"p_within={self.p_within:.3g})"
        )


def judge(
    baseline: Sequence[float],
    samples: Sequence[float],
    *,
    threshold: float,
    alpha: float,
    higher_is_better: bool = False,
) -> Judgement:
    """Is `samples` worse than `baseline` by more than `threshold` (a fraction, 0.05 = 5%)?"""
    if not 0 < alpha < 1:
        raise ValueError("alpha must be between 0 and 1")
    if threshold < 0:
        raise ValueError("threshold must not be negative")
    if higher_is_better:
        limit = [b * (1 - threshold) for b in baseline]
        worse, within = "less", "greater"
    else:
        limit = [b * (1 + threshold) for b in baseline]
        worse, within = "greater", "less"
    p_worse = mann_whitney_u(samples, limit, worse).p
    p_within = mann_whitney_u(samples, limit, within).p
    if p_worse < alpha:
        decision = WORSE
    elif p_within < alpha:
        decision = WITHIN
    else:
        decision = UNDECIDED
    base_median = median(baseline)
    change = median(samples) / base_median - 1 if base_median else 0.0
    return Judgement(decision, p_worse, p_within, change, len(samples), len(baseline))
