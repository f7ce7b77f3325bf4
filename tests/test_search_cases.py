"""search/cases.py: several cases in one search, each with its own culprit, on plain lists."""

from __future__ import annotations

import math

from hypothesis import given, settings
from hypothesis import strategies as st

from tritonbisect.search import classic
from tritonbisect.search.cases import next_step_cases
from tritonbisect.search.classic import Candidates, Found, Inconclusive


def _linear(n: int) -> Candidates:
    return Candidates.linear([f"c{i:04d}" for i in range(n)])


def _verdict(truth: int | None, i: int) -> str:
    return "bad" if truth is not None and i >= truth else "good"


def run_cases(n: int, culprits: dict[str, int], *, workers: int = 1, unbuildable: frozenset[int] = frozenset()):
    """Drive the search to the end; (answers, commits tested)."""
    cands = _linear(n)
    pos = {c: i for i, c in enumerate(cands.order)}
    verdicts: dict[str, dict[str, str]] = {case: {} for case in culprits}
    tested = 0
    for _ in range(10 * n):
        step = next_step_cases(cands, verdicts, workers=workers)
        assert not step.conflicts
        if step.done:
            return dict(step.settled), tested
        assert step.commits, "open cases but nothing to test"
        for commit in step.commits:
            tested += 1
            for case, truth in culprits.items():
                i = pos[commit]
                verdicts[case][commit] = "skip" if i in unbuildable else _verdict(truth, i)
    raise AssertionError("the search did not end")


def run_classic(n: int, culprit: int, *, unbuildable: frozenset[int] = frozenset()) -> int:
    cands = _linear(n)
    verdicts: dict[str, str] = {}
    for tests in range(10 * n):
        action = classic.next_step(cands, verdicts)
        if isinstance(action, (Found, Inconclusive)):
            return tests
        commit = action.commits[0]
        i = cands.order.index(commit)
        verdicts[commit] = "skip" if i in unbuildable else _verdict(culprit, i)
    raise AssertionError("the classic search did not end")


def test_one_case_is_the_classic_search() -> None:
    for n in (2, 16, 100, 257):
        for culprit in (1, n // 3, n - 1):
            answers, tested = run_cases(n, {"k": culprit})
            assert answers["k"] == Found(f"c{culprit:04d}")
            assert tested <= math.ceil(math.log2(n)), (n, culprit, tested)
            assert tested == run_classic(n, culprit)


def test_three_culprits_in_300_commits_cost_fewer_tests_than_three_searches() -> None:
    culprits = {"gemm": 40, "softmax": 150, "layernorm": 260}
    answers, together = run_cases(300, culprits)
    assert {case: a.culprit for case, a in answers.items()} == {c: f"c{i:04d}" for c, i in culprits.items()}
    separate = sum(run_classic(300, i) for i in culprits.values())
    assert together < separate, (together, separate)


def test_cases_sharing_a_culprit_cost_one_search() -> None:
    answers, tested = run_cases(128, {"a": 77, "b": 77, "c": 77})
    assert {a.culprit for a in answers.values()} == {"c0077"}
    assert tested <= math.ceil(math.log2(128))


def test_an_unbuildable_cluster_leaves_each_case_its_candidates() -> None:
    unbuildable = frozenset(range(50, 60))
    answers, _ = run_cases(100, {"inside": 55, "outside": 80}, unbuildable=unbuildable)
    assert answers["outside"] == Found("c0080")
    inside = answers["inside"]
    assert isinstance(inside, Inconclusive) and "c0055" in inside.candidates


def test_parallel_workers_get_distinct_commits_and_every_case_is_answered() -> None:
    culprits = {"x": 10, "y": 500, "z": 900}
    answers, tested = run_cases(1000, culprits, workers=4)
    assert {case: a.culprit for case, a in answers.items()} == {c: f"c{i:04d}" for c, i in culprits.items()}
    step = next_step_cases(_linear(1000), {c: {} for c in culprits}, workers=4)
    assert len(set(step.commits)) == 4


def test_a_contradiction_is_reported_for_its_case_only() -> None:
    cands = _linear(10)
    verdicts = {"flaky": {"c0003": "bad", "c0006": "good"}, "steady": {"c0003": "good", "c0006": "good"}}
    step = next_step_cases(cands, verdicts)
    assert set(step.conflicts) == {"flaky"}
    assert "steady" in step.remaining and step.commits


def test_a_cached_build_near_the_best_point_is_preferred() -> None:
    cands = _linear(101)
    plain = next_step_cases(cands, {"a": {}})
    near = cands.order[cands.order.index(plain.commits[0]) + 3]
    assert next_step_cases(cands, {"a": {}}, cached={near}).commits == (near,)


@settings(max_examples=150, deadline=None)
@given(n=st.integers(min_value=2, max_value=200), data=st.data())
def test_every_case_gets_its_own_culprit(n: int, data: st.DataObject) -> None:
    k = data.draw(st.integers(min_value=1, max_value=4))
    culprits = {f"case{j}": data.draw(st.integers(min_value=1, max_value=n - 1)) for j in range(k)}
    workers = data.draw(st.integers(min_value=1, max_value=3))
    answers, tested = run_cases(n, culprits, workers=workers)
    for case, truth in culprits.items():
        assert answers[case] == Found(f"c{truth:04d}")
    # never worse than searching each case on its own, one commit at a time
    bound = sum(math.ceil(math.log2(n)) for _ in culprits)
    assert tested <= bound * workers + workers
