"""`--regress perf`: the Mann-Whitney U test, the judgement of a step's samples, the metric a
test reports, the options, and `run --regress perf` end to end."""

from __future__ import annotations

import json
import math
import random
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bisectors_world import error_line, run_cli, run_json
from engine_repo import BUILD, C, make_history
from tritonbisect.core.outcome import Kind, Policy, Verdict, combine_runs
from tritonbisect.core.perf import PerfSettings, judge_step, metric_of, parse_threshold
from tritonbisect.search.perfstats import _exact_counts, judge, mann_whitney_u, median

# --- the statistics ---------------------------------------------------------------------------


def test_exact_null_distribution_counts_every_ordering() -> None:
    for m, n in [(1, 1), (3, 4), (5, 5), (7, 12), (20, 20)]:
        counts = _exact_counts(m, n)
        assert len(counts) == m * n + 1 and sum(counts) == math.comb(m + n, m)
        assert counts == counts[::-1]  # U is symmetric about mn/2
        assert all(c > 0 for c in counts)


def test_complete_separation_has_the_smallest_p_value() -> None:
    slow, fast = [6, 7, 8, 9, 10], [1, 2, 3, 4, 5]
    r = mann_whitney_u(slow, fast, "greater")
    assert (r.u, r.method) == (25, "exact") and r.p == pytest.approx(1 / 252)
    assert mann_whitney_u(slow, fast, "less").p == 1.0


def test_against_scipy_when_installed() -> None:
    scipy_stats = pytest.importorskip("scipy.stats")
    rng = random.Random(7)
    for _ in range(200):
        m, n = rng.randint(1, 25), rng.randint(1, 40)
        x = [rng.gauss(0, 1) for _ in range(m)]
        y = [rng.gauss(0.4, 1) for _ in range(n)]
        if rng.random() < 0.3:  # ties: the normal approximation with the tie correction
            x, y = [round(v, 1) for v in x], [round(v, 1) for v in y]
        for alternative in ("greater", "less"):
            ours = mann_whitney_u(x, y, alternative)
            method = "exact" if ours.method == "exact" else "asymptotic"
            ref = scipy_stats.mannwhitneyu(x, y, alternative=alternative, method=method)
            assert ours.u == pytest.approx(ref.statistic)
            assert ours.p == pytest.approx(ref.pvalue, abs=1e-12)


def test_normal_approximation_is_close_to_exact_for_moderate_samples() -> None:
    rng = random.Random(3)
    x = [rng.gauss(0.3, 1) for _ in range(30)]
    y = [rng.gauss(0, 1) for _ in range(30)]
    exact = mann_whitney_u(x, y, "greater")
    assert exact.method == "exact"
    from tritonbisect.search import perfstats

    old = perfstats.EXACT_MAX_TOTAL
    perfstats.EXACT_MAX_TOTAL = 0
    try:
        normal = mann_whitney_u(x, y, "greater")
    finally:
        perfstats.EXACT_MAX_TOTAL = old
    assert normal.method == "normal" and abs(normal.p - exact.p) < 0.01


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.floats(0.1, 10, allow_nan=False), min_size=1, max_size=12),
    st.lists(st.floats(0.1, 10, allow_nan=False), min_size=1, max_size=12),
)
def test_p_values_are_probabilities_and_symmetric(x, y) -> None:
    greater, less = mann_whitney_u(x, y, "greater"), mann_whitney_u(y, x, "less")
    assert 0 <= greater.p <= 1
    assert greater.p == pytest.approx(less.p)
    assert greater.u + mann_whitney_u(y, x, "greater").u == pytest.approx(len(x) * len(y))


def test_judge_worse_within_undecided_and_rates() -> None:
    base = [1.0, 1.01, 0.99, 1.02, 0.98, 1.0, 1.005, 0.995, 1.01, 0.99]
    slow = [1.3, 1.31, 1.29, 1.32, 1.3]
    same = [1.0, 0.99, 1.01, 1.0, 1.005]
    edge = [1.04, 1.06, 1.05, 1.03, 1.07]  # right at the 5% threshold
    assert judge(base, slow, threshold=0.05, alpha=0.01).decision == "worse"
    assert judge(base, same, threshold=0.05, alpha=0.01).decision == "within"
    assert judge(base, edge, threshold=0.05, alpha=0.01).decision == "undecided"
    j = judge(base, slow, threshold=0.05, alpha=0.01)
    assert j.change == pytest.approx(1.3 / median(base) - 1)
    # a rate: lower is worse
    rate = [1 / v for v in slow]
    assert judge([1 / v for v in base], rate, threshold=0.05, alpha=0.01, higher_is_better=True).decision == "worse"
    assert judge([1 / v for v in base], rate, threshold=0.05, alpha=0.01).decision == "within"


# --- a step's samples -------------------------------------------------------------------------

PERF = PerfSettings(samples=5, max_samples=15, threshold=0.05, significance=0.01)
POLICY = Policy(regress="perf", perf=PERF)


def _tests(values, kind="pass"):
    return [{"metric": v, "reason": f"test {kind}", "kind": kind} for v in values]


def _judge(values, baseline, kinds=None):
    kinds = kinds or [Kind.PASS] * len(values)
    return judge_step(PERF, POLICY, kinds, _tests(values), baseline, combine_runs)


def test_the_reference_takes_every_sample_and_is_good() -> None:
    assert PERF.first_batch(None) == 15 and PERF.first_batch((1.0,)) == 5
    d = _judge([1.0] * 15, None)
    assert (d.kind, d.verdict, d.more) == (Kind.PASS, Verdict.GOOD, 0)
    assert d.record["reference"] and len(d.record["samples"]) == 15


def test_undecided_asks_for_more_then_is_flaky_at_the_bound() -> None:
    base = tuple(1.0 + 0.02 * math.sin(i) for i in range(15))
    edge = [1.05 + 0.02 * math.cos(i) for i in range(5)]
    d = _judge(edge, base)
    assert (d.kind, d.verdict, d.more) == (Kind.FLAKY, Verdict.SKIP, 5)
    d = _judge(edge * 3, base)
    assert (d.kind, d.verdict, d.more) == (Kind.FLAKY, Verdict.SKIP, 0)
    assert "undecided after 15 samples" in d.reason and len(d.record["samples"]) == 15


def test_a_slow_step_is_perf_and_bad() -> None:
    base = tuple(1.0 + 0.01 * math.sin(i) for i in range(15))
    d = _judge([1.3, 1.31, 1.29, 1.3, 1.32], base)
    assert (d.kind, d.verdict) == (Kind.PERF, Verdict.BAD)
    assert d.record["decision"] == "worse" and d.record["change"] > 0.25
    assert "perf regression" in d.reason


def test_failures_and_missing_metrics() -> None:
    base = (1.0,) * 15
    d = _judge([1.0, None, 1.0, 1.0, 1.0], base)
    assert (d.kind, d.verdict) == (Kind.INFRA, Verdict.ABORT)
    assert "TRITONBISECT_METRIC=" in d.reason and "run 2 of 5" in d.reason
    d = _judge([None] * 5, base, kinds=[Kind.CRASH] * 5)
    assert (d.kind, d.verdict) == (Kind.CRASH, Verdict.SKIP)  # only perf is the regression
    d = _judge([1.0, 0.0, 1.0, 1.0, 1.0], base)
    assert d.kind is Kind.INFRA and "<= 0" in d.reason


def test_metric_of_a_run() -> None:
    out = "warming up\nTRITONBISECT_METRIC=0.5\nmore\nTRITONBISECT_METRIC= 1.25e-3 \n"
    assert metric_of(out, None) == 1.25e-3
    assert metric_of(out, {"status": "pass", "metric": 7}) == 7.0
    assert metric_of("TRITONBISECT_METRIC=nan\n", None) is None
    assert metric_of("TRITONBISECT_METRIC=fast\n", None) is None
    assert metric_of("no metric here", {"metric": True}) is None
    assert metric_of("xTRITONBISECT_METRIC=1\n", None) is None


def test_the_policy_carries_the_perf_settings_to_the_steps() -> None:
    assert Policy(regress="perf", perf=PERF).verdict(Kind.PERF) is Verdict.BAD
    assert Policy(regress="perf", perf=PERF).verdict(Kind.FAIL) is Verdict.SKIP
    with pytest.raises(ValueError):
        Policy(regress="perf")
    with pytest.raises(ValueError):
        Policy(regress="fail", perf=PERF)


def test_threshold_and_settings_validation() -> None:
    assert parse_threshold("5%") == pytest.approx(0.05)
    assert parse_threshold("0.1") == pytest.approx(0.1)
    assert parse_threshold(" 12.5 % ") == pytest.approx(0.125)
    for bad in ("-1%", "100%", "five", "nan"):
        with pytest.raises(ValueError):
            parse_threshold(bad)
    with pytest.raises(ValueError):
        PerfSettings(samples=1)
    with pytest.raises(ValueError):
        PerfSettings(samples=5, max_samples=3)


# --- `run --regress perf` ----------------------------------------------------------------------

# the metric goes to the JSON result: 1 + 2% noise, the commit's "speed" factor
JSON_METRIC_TEST = (
    "awk -v seed=$((RANDOM * 32768 + RANDOM)) -v base=$(cat speed) 'BEGIN { srand(seed); "
    "s = 0; for (i = 0; i < 12; i++) s += rand(); "
    "printf \"{\\\"status\\\": \\\"pass\\\", \\\"metric\\\": %.6f}\", base * (1 + 0.02 * (s - 6)) }' "
    "> \"$TRITONBISECT_RESULT\""
)


def _perf_repo(repo: Path, n: int, culprit: int) -> list[str]:
    commits = [
        C(f"c{i}", (f"c{i - 1}",) if i else (), files={"speed": "1.3\n" if i >= culprit else "1.0\n"})
        for i in range(n)
    ]
    shas = make_history(repo, commits)
    return [shas[f"c{i}"] for i in range(n)]


@pytest.mark.parametrize("design", ["paired", "unpaired"])
def test_run_regress_perf_finds_a_30_percent_slowdown(tmp_path: Path, capsys, design: str) -> None:
    repo = tmp_path / "repo"
    shas = _perf_repo(repo, 24, culprit=15)
    code, res, err = run_json(
        ["run", "--repo", str(repo), "--good", shas[0], "--bad", shas[-1], "--build", BUILD,
         "--test", JSON_METRIC_TEST, "--regress", "perf", "--perf-design", design,
         "--workdir", str(tmp_path / "w")],
        capsys,
    )
    assert code == 0, err[-3000:]
    assert (res["culprit"], res["confidence"]) == (shas[15], "high")
    journal = [json.loads(line) for line in (Path(res["session_dir"]) / "journal.jsonl").read_text().splitlines()]
    # unpaired: the good endpoint is the yardstick, measured once; paired: it only has to pass
    assert journal[0]["perf"]["reference"] and len(journal[0]["tests"]) == (20 if design == "unpaired" else 5)
    assert all(len(r["perf"]["samples"]) >= 5 for r in journal)
    assert all(t["metric"] is not None for r in journal for t in [*r["tests"], *r.get("reference_tests", [])])
    assert all(bool(r.get("reference_tests")) == (design == "paired" and i > 0) for i, r in enumerate(journal))
    code, md, _ = run_cli(["report", res["session"], "--workdir", str(tmp_path / "w")], capsys)
    assert "| metric |" in md and "reference)" in md


def test_run_regress_perf_on_ray_judges_steps_on_the_nodes(tmp_path: Path, capsys) -> None:
    """The policy travels whole to a Ray node: with --regress perf it carries the perf settings."""
    pytest.importorskip("ray")
    repo = tmp_path / "repo"
    shas = _perf_repo(repo, 12, culprit=7)
    code, res, err = run_json(
        ["run", "--repo", str(repo), "--good", shas[0], "--bad", shas[-1], "--build", BUILD,
         "--test", JSON_METRIC_TEST, "--regress", "perf", "--executor", "ray", "--ray-address", "local",
         "--workdir", str(tmp_path / "w")],
        capsys,
    )
    assert code == 0, err[-3000:]
    assert res["culprit"] == shas[7]


def test_run_regress_perf_without_a_metric_aborts_with_the_reason(tmp_path: Path, capsys) -> None:
    repo = tmp_path / "repo"
    shas = _perf_repo(repo, 4, culprit=2)
    code, res, _ = run_json(
        ["run", "--repo", str(repo), "--good", shas[0], "--bad", shas[-1], "--test", "true",
         "--regress", "perf", "--repeat", "2", "--workdir", str(tmp_path / "w")],
        capsys,
    )
    assert code == 4 and "TRITONBISECT_METRIC=<float>" in res["reason"]


def test_perf_option_errors(tmp_path: Path, capsys) -> None:
    repo = tmp_path / "repo"
    shas = _perf_repo(repo, 3, culprit=1)
    base = ["run", "--repo", str(repo), "--good", shas[0], "--bad", shas[-1], "--test", "true"]
    for extra, message in [
        (["--threshold", "5%"], "--perf-threshold goes with --regress perf"),
        (["--higher-is-better"], "--higher-is-better goes with --regress perf"),
        (["--regress", "perf", "--repeat", "1"], "at least 2 samples"),
        (["--regress", "perf", "--threshold", "lots"], "expected a percentage"),
        (["--regress", "perf", "--max-samples", "3"], "--max-samples must be at least --repeat"),
    ]:
        code, _, err = run_cli([*base, *extra], capsys)
        assert code == 2 and message in error_line(err), (extra, err)
