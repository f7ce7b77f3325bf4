"""core.pairstats: paired comparisons that a shared, drifting machine cannot fool -- the
signed-rank test and its interval, the floors' randomization test, the check that says when
the floors do not stand for the arms, and the decision, on real samples from a shared H200
(tests/data/perf_samples) and on simulated interference."""

from __future__ import annotations

import json
import math
import random
import statistics
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tritonbisect.core.pairstats import (
    FLIPS,
    FLOOR,
    PAIRED,
    UNDECIDED,
    WITHIN,
    WORSE,
    FloorTest,
    Interval,
    _signed_rank_counts,
    compare,
    floor_check,
    hodges_lehmann,
    interval_of,
    quantile,
    signed_rank_p,
)

SAMPLES = Path(__file__).parent / "data" / "perf_samples"


def real_pairs(name: str) -> tuple[list[float], list[float]]:
    rows = json.loads((SAMPLES / name).read_text())
    pairs: dict[int, dict[str, float]] = {}
    for row in rows:
        if row["ms"]:
            pairs.setdefault(row["i"], {})[row["kind"]] = row["ms"]
    both = [p for _, p in sorted(pairs.items()) if "ref" in p and "cand" in p]
    return [p["ref"] for p in both], [p["cand"] for p in both]


def windows(change: float, n: int, seed: int, *, every: int, slow: float = 0.12,
            noise: float = 0.01) -> tuple[list[float], list[float]]:
    """Pairs from a machine `slow` slower in alternating windows of `every` runs, with
    `noise` (relative, normal), each pair in a random order."""
    rng = random.Random(seed)
    run = rng.randrange(1000)
    ref, cand = [], []
    for _ in range(n):
        got = {}
        for arm in rng.sample((0, 1), 2):
            factor = 1 + slow if (run // every) % 2 else 1.0
            run += 1
            got[arm] = (1 + change * arm) * factor * (1 + noise * rng.gauss(0, 1))
        ref.append(got[0])
        cand.append(got[1])
    return ref, cand


# --- the pieces ----------------------------------------------------------------------------------


def test_quantile_is_type_7() -> None:
    assert quantile([3, 1, 2, 4], 0.5) == 2.5
    assert quantile([5], 0.05) == 5
    assert quantile(list(range(21)), 0.05) == pytest.approx(1.0)
    with pytest.raises(ValueError):
        quantile([], 0.5)


def test_signed_rank_counts_every_sign_pattern() -> None:
    for n in (1, 5, 12):
        counts = _signed_rank_counts(n)
        assert sum(counts) == 2**n and counts == counts[::-1]
    assert signed_rank_p([0.1, 0.2, 0.3, 0.4, 0.5]) == (pytest.approx(1 / 32), 1.0)
    assert signed_rank_p([0.0, 0.0]) == (1.0, 1.0)


def test_signed_rank_against_scipy_when_installed() -> None:
    stats = pytest.importorskip("scipy.stats")
    rng = random.Random(5)
    for _ in range(100):
        n = rng.randint(3, 45)
        d = [rng.gauss(0.3, 1) for _ in range(n)]
        if rng.random() < 0.3:
            d = [round(x, 1) for x in d]
        ours = signed_rank_p(d)
        if all(x != 0 for x in d):
            exact = n <= 30 and len(set(map(abs, d))) == n
            ref = stats.wilcoxon(d, alternative="greater", method="exact" if exact else "approx",
                                 correction=True)
            assert ours[0] == pytest.approx(ref.pvalue, abs=1e-9)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.floats(-1, 1, allow_nan=False), min_size=1, max_size=25, unique=True),
       st.floats(-0.5, 0.5), st.sampled_from([0.01, 0.05]))
def test_the_signed_rank_interval_is_its_test_inverted(diffs, theta, alpha) -> None:
    centre, lo, hi = hodges_lehmann(diffs, alpha)
    assert lo <= centre <= hi
    shifted = [d - theta for d in diffs]
    if any(s == 0 for s in shifted) or len({abs(s) for s in shifted}) < len(shifted):
        return  # ties: the exact duality is for distinct differences
    above, below = signed_rank_p(shifted)
    assert (lo > theta) == (above <= alpha)
    assert (hi < theta) == (below <= alpha)


def test_too_few_pairs_leave_the_signed_rank_interval_open() -> None:
    _, lo, hi = hodges_lehmann([0.1, 0.2, 0.3, 0.4, 0.5], 0.01)  # 1/32 > 0.01: no bound
    assert (lo, hi) == (-math.inf, math.inf)


def test_the_floor_test_swaps_every_pattern_of_few_pairs_and_is_monotone() -> None:
    ref, cand = windows(0.05, 10, 1, every=3)
    test = FloorTest(ref, cand)
    assert len(test.flips) == 2**10 <= FLIPS and test.flips[0] == (False,) * 10
    larger = [test.p_values(s)[0] for s in (-0.2, -0.05, 0.0, 0.04, 0.1, 0.3)]
    assert larger == sorted(larger) and larger[0] == pytest.approx(1 / 1024)
    many = FloorTest(*windows(0.05, 20, 1, every=3))
    assert len(many.flips) == FLIPS and many.flips[0] == (False,) * 20


def test_the_same_samples_give_the_same_answer() -> None:
    ref, cand = windows(0.05, 20, 3, every=1)
    a = compare(ref, cand, threshold=0.03, alpha=0.01)
    b = compare(list(ref), list(cand), threshold=0.03, alpha=0.01)
    assert a == b


def test_the_floor_check_catches_a_candidate_slow_in_some_of_its_own_runs() -> None:
    rng = random.Random(2)
    ref = [1 + 0.003 * rng.gauss(0, 1) for _ in range(20)]
    # half of the candidate's runs take another path (an autotuner's pick): its floor stays
    cand = [(1.0 if i % 2 else 1.06) * (1 + 0.003 * rng.gauss(0, 1)) for i in range(20)]
    check = floor_check(ref, cand)
    assert not check.applies and "its own time varies" in check.reason
    c = compare(ref, cand, threshold=0.01, alpha=0.01)
    assert c.method == PAIRED and abs(c.floor.change) < 0.01
    assert floor_check(ref, [v * 1.06 for v in ref[::-1]]).applies  # a plain shift: it applies


def test_few_pairs_are_judged_paired() -> None:
    c = compare([1.0, 1.01, 0.99], [1.2, 1.21, 1.19], threshold=0.05, alpha=0.01)
    assert c.method == PAIRED and c.decision == UNDECIDED and "too few" in c.check.reason
    with pytest.raises(ValueError, match="at least 10 pairs"):
        compare([1.0] * 3, [1.0] * 3, threshold=0.05, alpha=0.01, method=FLOOR)


def test_input_errors() -> None:
    for ref, cand, kw, msg in [
        ([1.0], [1.0, 2.0], {}, "same number"),
        ([], [], {}, "no pairs"),
        ([1.0], [0.0], {}, "positive"),
        ([1.0], [1.0], {"alpha": 0.7}, "alpha"),
        ([1.0], [1.0], {"threshold": 1.5}, "threshold"),
        ([1.0], [1.0], {"method": "median"}, "method"),
    ]:
        args = {"threshold": 0.05, "alpha": 0.01, **kw}
        with pytest.raises(ValueError, match=msg):
            compare(ref, cand, **args)


def test_a_rate_is_compared_as_its_inverse() -> None:
    ref, cand = windows(0.10, 20, 4, every=5)
    as_time = compare(ref, cand, threshold=0.03, alpha=0.01)
    as_rate = compare([1 / v for v in ref], [1 / v for v in cand], threshold=0.03, alpha=0.01,
                      higher_is_better=True)
    assert as_time.decision == as_rate.decision == WORSE
    assert as_rate.estimate.change == pytest.approx(1 / (1 + as_time.estimate.change) - 1)
    assert as_rate.estimate.high < -0.03  # a rate that fell


def test_text_and_json_of_a_comparison() -> None:
    assert Interval(0.061, 0.049, 0.072).text() == "+6.1% [4.9, 7.2]"
    assert Interval(-0.004, -math.inf, 0.01).text() == "-0.4% [-inf, 1.0]"
    c = compare([1.0, 1.01, 0.99, 1.0], [1.1, 1.12, 1.09, 1.1], threshold=0.05, alpha=0.01)
    data = json.loads(json.dumps(c.to_dict(), allow_nan=False))  # open sides are null
    assert data["estimate"]["low"] is None and interval_of(data["estimate"]) == c.estimate
    assert interval_of(None) is None and interval_of({"change": "x"}) is None


# --- real samples: an H200 with a co-tenant in bursts ---------------------------------------------


def test_real_bursty_samples_give_the_quiet_gpus_answer() -> None:
    quiet = compare(*real_pairs("h200-quiet.json"), threshold=0.05, alpha=0.01)
    ref, cand = real_pairs("h200-bursty-cotenant.json")
    bursty = compare(ref, cand, threshold=0.05, alpha=0.01)
    assert quiet.decision == bursty.decision == WORSE and bursty.method == FLOOR
    assert quiet.estimate.change == pytest.approx(0.212, abs=0.002)
    assert bursty.estimate.change == pytest.approx(quiet.estimate.change, abs=0.006)
    assert bursty.estimate.low < quiet.estimate.change < bursty.estimate.high
    assert bursty.check.applies and bursty.check.slowed_candidate > 0.4  # interference was there
    # what the paired ratios and the medians say on the same samples
    ratios = sorted(c / r for r, c in zip(ref, cand, strict=True))
    assert quantile(ratios, 0.25) < 0.5 and quantile(ratios, 0.75) > 3
    assert statistics.median(cand) / statistics.median(ref) > 1.6
    assert bursty.paired.high - bursty.paired.low > 0.5  # the paired interval is wide


@pytest.mark.parametrize("threshold, want", [(0.10, WORSE), (0.15, WORSE), (0.30, WITHIN)])
def test_real_bursty_samples_at_20_pairs(threshold: float, want: str) -> None:
    """Every 20 consecutive pairs of the bursty run: never the wrong side of the threshold,
    and mostly decided."""
    ref, cand = real_pairs("h200-bursty-cotenant.json")
    got = [compare(ref[s:s + 20], cand[s:s + 20], threshold=threshold, alpha=0.01, interval=False).decision
           for s in range(len(ref) - 19)]
    assert set(got) <= {want, UNDECIDED} and got.count(want) >= len(got) * 0.6, got


def test_real_bursty_samples_against_themselves_are_within() -> None:
    """One arm against itself (its runs 10 s apart as the pairs): no change."""
    for arm in real_pairs("h200-bursty-cotenant.json"):
        a, b = arm[0::2], arm[1::2]
        n = min(len(a), len(b))
        assert compare(a[:n], b[:n], threshold=0.03, alpha=0.01, interval=False).decision != WORSE


# --- simulated interference: windows of a slow machine ---------------------------------------------


@pytest.mark.parametrize("every, found", [(1, 15), (3, 20), (10, 24)])
def test_a_6_percent_slowdown_in_12_percent_windows_is_found(every: int, found: int) -> None:
    """At 20 pairs; windows of one run (a pair's runs always on either side) are the hardest."""
    decided = [compare(*windows(0.06, 20, seed, every=every), threshold=0.03, alpha=0.01,
                       interval=False).decision for seed in range(30)]
    assert WITHIN not in decided and decided.count(WORSE) >= found, decided


@pytest.mark.parametrize("every, within", [(1, 36), (10, 48)])
def test_no_change_is_not_called_worse(every: int, within: int) -> None:
    decided = [compare(*windows(0.0, 20, seed, every=every), threshold=0.03, alpha=0.01,
                       interval=False).decision for seed in range(60)]
    assert WORSE not in decided and decided.count(WITHIN) >= within, decided


def test_at_the_threshold_either_verdict_is_rare() -> None:
    """A change exactly at the threshold: each side's error stays near alpha."""
    wrong = 0
    trials = 120
    for seed in range(trials):
        c = compare(*windows(0.03, 20, 1000 + seed, every=3), threshold=0.03, alpha=0.01, interval=False)
        wrong += c.decision != UNDECIDED
    assert wrong <= 0.02 * 2 * trials + 2
