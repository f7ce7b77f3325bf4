"""Unit tests of the pure search (search/classic.py) with plain lists and small DAGs."""

from __future__ import annotations

import math
import time
from enum import Enum

import pytest

from tritonbisect.search import classic as search
from tritonbisect.search.classic import (
    Candidates,
    Conflict,
    Found,
    Inconclusive,
    TestNext,
    Wait,
    next_step,
    remaining,
    steps_left,
)


def linear(n_between: int) -> tuple[list[str], Candidates]:
    """N commits strictly between good and bad, plus the bad endpoint (last)."""
    commits = [f"c{i:05d}" for i in range(n_between + 1)]
    return commits, Candidates.linear(commits)


def bisect_linear(commits, cands, culprit: int, **kw) -> tuple[object, int]:
    verdicts: dict[str, str] = {}
    tests = 0
    while True:
        action = next_step(cands, verdicts, **kw)
        if not isinstance(action, TestNext):
            return action, tests
        for c in action.commits:
            tests += 1
            verdicts[c] = "bad" if commits.index(c) >= culprit else "good"


# --- linear, one worker --------------------------------------------------------------------


@pytest.mark.parametrize("n", [0, 1, 2, 3, 4, 7, 8, 15, 31, 33, 100])
def test_linear_every_culprit_within_log2_limit(n):
    commits, cands = linear(n)
    limit = math.ceil(math.log2(n + 1)) if n else 0
    counts = []
    for culprit in range(n + 1):
        action, tests = bisect_linear(commits, cands, culprit)
        assert action == Found(commits[culprit])
        counts.append(tests)
    assert max(counts) == limit  # the worst case is the log2 limit, never more
    assert min(counts) >= math.floor(math.log2(n + 1))
    if (n + 1) & n == 0:  # N + 1 a power of two: exactly the limit for every culprit
        assert set(counts) == {limit}


def test_first_point_is_the_midpoint():
    commits, cands = linear(63)  # 64 candidates
    action = next_step(cands, {})
    assert action == TestNext(commits=(commits[31],), remaining=64, steps_left=6)


def test_only_the_bad_endpoint_is_found_at_once():
    cands = Candidates.linear(["bad"])
    assert next_step(cands, {}) == Found("bad")
    assert remaining(cands, {}) == ("bad",)


def test_remaining_narrows_with_verdicts():
    commits, cands = linear(9)
    v = {commits[2]: "good", commits[6]: "bad", commits[4]: "skip"}
    assert remaining(cands, v) == tuple(commits[3:7])


def test_verdict_enums_are_accepted_and_junk_is_refused():
    class V(str, Enum):
        GOOD = "good"
        BAD = "bad"

    commits, cands = linear(3)
    assert remaining(cands, {commits[1]: V.GOOD}) == tuple(commits[2:])
    with pytest.raises(ValueError):
        next_step(cands, {commits[1]: "abort"})


def test_verdicts_outside_the_set_are_ignored():
    commits, cands = linear(3)
    assert remaining(cands, {"the-good-endpoint": "good"}) == tuple(commits)


def test_order_must_be_topological():
    with pytest.raises(ValueError):
        next_step(Candidates(("b", "a"), {"b": ("a",)}), {})
    with pytest.raises(ValueError):
        next_step(Candidates.linear(["a", "a"]), {})


# --- k workers and in-flight commits --------------------------------------------------------


def test_k_workers_split_the_range_in_k_plus_one_parts():
    commits, cands = linear(15)  # 16 candidates
    action = next_step(cands, {}, workers=3)
    assert action.commits == (commits[3], commits[7], commits[11])  # parts of 4
    action = next_step(cands, {}, workers=2)
    weights = sorted(commits.index(c) + 1 for c in action.commits)
    parts = [weights[0], weights[1] - weights[0], 16 - weights[1]]
    assert max(parts) <= math.ceil(16 / 3)


def test_in_flight_commits_count_as_chosen_points():
    commits, cands = linear(15)
    action = next_step(cands, {}, workers=1, in_flight={commits[7]})
    assert action.commits in ((commits[3],), (commits[11],))
    # with two free workers and the midpoint in flight: the two quarter points
    action = next_step(cands, {}, workers=2, in_flight={commits[7]})
    assert sorted(action.commits) == [commits[3], commits[11]]


def test_wait_when_every_useful_point_is_in_flight():
    commits, cands = linear(2)  # c0 c1 | c2 bad
    assert next_step(cands, {}, workers=1, in_flight={commits[0], commits[1]}) == Wait()
    # in-flight commits that no longer matter do not make it wait
    v = {commits[0]: "good"}
    assert next_step(cands, v, workers=1, in_flight={commits[0]}) == TestNext(
        (commits[1],), remaining=2, steps_left=1
    )


def test_more_workers_than_points():
    commits, cands = linear(3)
    action = next_step(cands, {}, workers=8)
    assert sorted(action.commits) == commits[:3]


# --- skips ----------------------------------------------------------------------------------


def test_skipped_ideal_point_steps_away_from_it():
    commits, cands = linear(999)  # 1000 candidates, ideal point c00499
    action = next_step(cands, {commits[499]: "skip"})
    (pick,) = action.commits
    d = abs(commits.index(pick) - 499)
    assert 5 <= d <= 150  # not next door (skips cluster), not far off-centre either


def test_steps_further_away_from_a_wide_cluster_of_skips():
    commits, cands = linear(999)
    one = next_step(cands, {commits[499]: "skip"}).commits[0]
    v = {commits[i]: "skip" for i in range(470, 530, 6)}
    wide = next_step(cands, v).commits[0]
    assert not 470 <= commits.index(wide) <= 530
    assert abs(commits.index(wide) - 499) > abs(commits.index(one) - 499)


def test_a_known_buildable_commit_ends_a_skip_cluster():
    commits, cands = linear(99)
    st = search._state(cands, {commits[40]: "skip"})
    risk = search._skip_risk(st, cached=set())
    assert risk[41] > risk[45] > risk[60] > 0.0 and risk[39] == risk[41]
    blocked = search._skip_risk(st, cached={43})
    assert blocked[44] == 0.0 and blocked[42] == risk[42]
    # a cached commit next to a skipped ideal point is known to build: no risk, take it
    assert next_step(cands, {commits[49]: "skip"}, cached={commits[50]}).commits == (commits[50],)


def test_inconclusive_when_only_skips_separate_good_and_bad():
    commits, cands = linear(9)
    v = {commits[3]: "good", commits[4]: "skip", commits[5]: "skip", commits[6]: "bad"}
    assert next_step(cands, v) == Inconclusive(tuple(commits[4:7]))
    # pending results elsewhere in the set change nothing; in range they mean: wait
    assert next_step(cands, v, in_flight={commits[8]}) == Inconclusive(tuple(commits[4:7]))


def test_skips_still_find_the_culprit_when_a_path_exists():
    commits, cands = linear(20)
    skipped = {commits[i] for i in range(5, 16)}
    for culprit in range(21):
        v: dict[str, str] = {}
        while True:
            a = next_step(cands, v)
            if not isinstance(a, TestNext):
                break
            for c in a.commits:
                v[c] = (
                    "skip" if c in skipped else ("bad" if commits.index(c) >= culprit else "good")
                )
        if isinstance(a, Found):
            assert a.culprit == commits[culprit]
        else:
            assert isinstance(a, Inconclusive) and commits[culprit] in a.candidates
            # the skipped commits, and the first bad commit after them
            assert len(set(a.candidates) - skipped) == 1
            assert a.candidates[-1] not in skipped


# --- cached builds --------------------------------------------------------------------------


def test_cached_commit_near_the_ideal_point_wins():
    commits, cands = linear(69)  # 70 candidates; ideal weight 35 (c00034); range/7 = 10
    near = commits[34 + 10]
    assert next_step(cands, {}, cached={near}).commits == (near,)
    far = commits[34 + 11]
    assert next_step(cands, {}, cached={far}).commits == (commits[34],)
    # the closest of several cached commits
    assert next_step(cands, {}, cached={commits[30], commits[40]}).commits == (commits[30],)


def test_cached_preference_per_worker_point():
    commits, cands = linear(69)
    base = next_step(cands, {}, workers=2).commits
    alt = commits[commits.index(base[0]) + 3]
    assert alt in next_step(cands, {}, workers=2, cached={alt}).commits


# --- conflicts ------------------------------------------------------------------------------


def test_good_after_bad_is_a_conflict():
    commits, cands = linear(9)
    assert next_step(cands, {commits[3]: "bad", commits[6]: "good"}) == Conflict(
        (commits[3], commits[6])
    )


def test_bad_endpoint_reported_good_is_a_conflict():
    commits, cands = linear(3)
    assert next_step(cands, {commits[-1]: "good"}) == Conflict((commits[-1],))


# --- DAGs -----------------------------------------------------------------------------------


def merge_dag() -> Candidates:
    """good -> a1 -> a2 -> M -> m1 -> bad, with a side branch b1 -> b2 -> b3 merged at M.

    b1's parent (the fork point) is an ancestor of good, so it is outside the set.
    """
    order = ("a1", "b1", "a2", "b2", "b3", "M", "m1", "bad")
    parents = {
        "a1": (),
        "b1": (),
        "a2": ("a1",),
        "b2": ("b1",),
        "b3": ("b2",),
        "M": ("a2", "b3"),
        "m1": ("M",),
        "bad": ("m1",),
    }
    return Candidates(order, parents)


def ancestors(cands: Candidates, c: str) -> set[str]:
    out, todo = set(), [c]
    while todo:
        x = todo.pop()
        if x not in out:
            out.add(x)
            todo.extend(cands.parents.get(x, ()))
    return out


@pytest.mark.parametrize("culprit", list(merge_dag().order))
def test_dag_finds_every_culprit(culprit):
    cands = merge_dag()
    v: dict[str, str] = {}
    tests = 0
    while True:
        a = next_step(cands, v)
        if not isinstance(a, TestNext):
            break
        for c in a.commits:
            tests += 1
            v[c] = "bad" if culprit in ancestors(cands, c) else "good"
    assert a == Found(culprit)
    assert tests <= 4  # 8 candidates: at most one more than log2 on this unbalanced DAG


def test_dag_first_point_has_the_best_bisect_all_weight():
    cands = merge_dag()
    # weights |anc(x)|: a1 1, b1 1, a2 2, b2 2, b3 3, M 6, m1 7 -> b3 splits 8 best (3/5)
    assert next_step(cands, {}).commits == ("b3",)


def test_dag_good_on_branch_removes_its_ancestors():
    cands = merge_dag()
    assert remaining(cands, {"b2": "good"}) == ("a1", "a2", "b3", "M", "m1", "bad")
    assert remaining(cands, {"M": "bad", "a2": "good"}) == ("b1", "b2", "b3", "M")


def test_dag_conflict_good_descendant_of_bad():
    cands = merge_dag()
    assert next_step(cands, {"b2": "bad", "m1": "good"}) == Conflict(("b2", "m1"))


def test_dag_two_incomparable_bads_without_a_common_culprit_do_not_crash():
    # a regression cherry-picked onto both branches: no single culprit explains it
    cands = merge_dag()
    v = {"a1": "good", "b1": "good", "a2": "bad", "b3": "bad"}
    a = next_step(cands, v)
    assert isinstance(a, Found | TestNext)


# --- steps_left and speed -------------------------------------------------------------------


def test_steps_left():
    assert steps_left(1, 1) == 0
    assert steps_left(2, 1) == 1
    assert steps_left(1001, 1) == 10
    assert steps_left(1001, 4) == math.ceil(math.log(1001, 5))
    assert steps_left(9, 2) == 2
    assert steps_left(10, 0) == 4  # at least one worker


def test_large_linear_range_is_fast():
    commits, cands = linear(20000)
    t0 = time.perf_counter()
    v: dict[str, str] = {}
    for _ in range(3):
        a = next_step(cands, v, workers=4)
        v[a.commits[0]] = "skip"
    assert time.perf_counter() - t0 < 2.0
