"""Property tests of the pure search: random histories, culprits, skip sets and worker counts.

The oracle: a commit is bad iff the true culprit is one of its ancestors-or-self; a skipped
commit answers "skip". The loop is simulated in synchronous rounds (all points of a round
finish together) and asynchronously (one in-flight commit finishes at a time).
"""

from __future__ import annotations

import math

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tritonbisect.search.classic import (
    Candidates,
    Found,
    Inconclusive,
    TestNext,
    Wait,
    next_step,
)

SETTINGS = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def ancestor_sets(cands: Candidates) -> dict[str, frozenset[str]]:
    anc: dict[str, frozenset[str]] = {}
    for c in cands.order:
        s = {c}
        for p in cands.parents.get(c, ()):
            s |= anc[p]
        anc[c] = frozenset(s)
    return anc


class Oracle:
    def __init__(self, cands: Candidates, culprit: str, skipped: set[str]):
        self.anc = ancestor_sets(cands)
        self.culprit = culprit
        self.skipped = skipped
        self.tests = 0  # every step run, skipped or not

    def __call__(self, c: str) -> str:
        self.tests += 1
        if c in self.skipped:
            return "skip"
        return "bad" if self.culprit in self.anc[c] else "good"


def check_result(action, culprit: str, skipped: set[str]) -> None:
    if isinstance(action, Found):
        assert action.culprit == culprit
    else:
        assert isinstance(action, Inconclusive), action
        assert culprit in action.candidates
        assert skipped, "inconclusive without any skipped commit"


def run_rounds(cands: Candidates, oracle: Oracle, k: int) -> tuple[object, int]:
    """Synchronous rounds of k points; returns (final action, rounds)."""
    verdicts: dict[str, str] = {}
    rounds = 0
    while True:
        action = next_step(cands, verdicts, workers=k)
        assert not isinstance(action, Wait)  # nothing in flight: never wait
        if not isinstance(action, TestNext):
            return action, rounds
        assert 1 <= len(action.commits) <= k
        assert len(set(action.commits)) == len(action.commits)
        assert not set(action.commits) & set(verdicts)
        rounds += 1
        assert rounds <= len(cands.order)
        for c in action.commits:
            verdicts[c] = oracle(c)


def run_async(cands: Candidates, oracle: Oracle, k: int, order_seed: list[int]) -> object:
    """k workers: fill the free ones, then one in-flight commit (picked by order_seed) finishes."""
    verdicts: dict[str, str] = {}
    flying: list[str] = []
    steps = 0
    while True:
        free = k - len(flying)
        action = next_step(cands, verdicts, workers=free, in_flight=frozenset(flying))
        if isinstance(action, TestNext):
            assert len(action.commits) <= free
            assert not set(action.commits) & (set(verdicts) | set(flying))
            flying.extend(action.commits)
        elif isinstance(action, Wait):
            assert flying, "Wait with nothing in flight"
        else:
            return action
        if not flying:
            continue
        steps += 1
        assert steps <= 3 * len(cands.order) + 3
        j = order_seed[steps % len(order_seed)] % len(flying)
        done = flying.pop(j)
        verdicts[done] = oracle(done)


def linear_history(n_between: int) -> tuple[list[str], Candidates]:
    commits = [f"c{i}" for i in range(n_between + 1)]
    return commits, Candidates.linear(commits)


@st.composite
def skip_clusters(draw, commits: list[str]) -> set[str]:
    """Clusters of skipped commits (never the bad endpoint, which is known to build)."""
    n = len(commits) - 1
    skipped: set[str] = set()
    if n == 0:
        return skipped
    for _ in range(draw(st.integers(0, 4))):
        start = draw(st.integers(0, n - 1))
        length = draw(st.integers(1, max(1, n // 4)))
        skipped.update(commits[start : min(n, start + length)])
    return skipped


@st.composite
def dag_history(draw) -> Candidates:
    """A random DAG of commits in (good, bad]: merges, side branches forked before good."""
    n = draw(st.integers(1, 40))
    order = [f"d{i}" for i in range(n)]
    parents: dict[str, tuple[str, ...]] = {}
    for i, c in enumerate(order):
        ps: list[str] = []
        if i and draw(st.integers(0, 9)) < 8:  # mostly continue some earlier line
            ps.append(order[draw(st.integers(max(0, i - 5), i - 1))])
        if i > 1 and draw(st.integers(0, 9)) < 2:  # a merge
            ps.append(order[draw(st.integers(0, i - 1))])
        parents[c] = tuple(dict.fromkeys(ps))
    # the bad endpoint merges every head, so the whole set is its ancestry
    has_child = {p for ps in parents.values() for p in ps}
    heads = tuple(c for c in order if c not in has_child)
    order.append("bad")
    parents["bad"] = heads
    return Candidates(tuple(order), parents)


# --- linear ---------------------------------------------------------------------------------


@SETTINGS
@given(n=st.integers(0, 600), data=st.data())
def test_linear_clean_one_worker_at_the_log2_limit(n, data):
    commits, cands = linear_history(n)
    culprit = commits[data.draw(st.integers(0, n))]
    oracle = Oracle(cands, culprit, set())
    action, rounds = run_rounds(cands, oracle, 1)
    check_result(action, culprit, set())
    limit = math.ceil(math.log2(n + 1))
    assert oracle.tests <= limit
    assert oracle.tests >= math.floor(math.log2(n + 1))
    if (n + 1) & n == 0:
        assert oracle.tests == limit


@SETTINGS
@given(n=st.integers(0, 1200), k=st.integers(1, 4), data=st.data())
def test_linear_clean_k_workers_rounds(n, k, data):
    commits, cands = linear_history(n)
    culprit = commits[data.draw(st.integers(0, n))]
    action, rounds = run_rounds(cands, Oracle(cands, culprit, set()), k)
    check_result(action, culprit, set())
    bound = math.ceil(math.log(n + 1, k + 1) - 1e-9) if n else 0
    assert rounds <= bound  # k points split the range in k + 1 parts: the tight bound
    assert rounds <= bound + 1  # the promised bound


@SETTINGS
@given(n=st.integers(0, 300), k=st.integers(1, 4), data=st.data())
def test_linear_with_skips(n, k, data):
    commits, cands = linear_history(n)
    culprit = commits[data.draw(st.integers(0, n))]
    skipped = data.draw(skip_clusters(commits))
    oracle = Oracle(cands, culprit, skipped)
    action, _ = run_rounds(cands, oracle, k)
    check_result(action, culprit, skipped)
    if isinstance(action, Inconclusive):
        # cornered: everything between the last good and the first bad was skipped
        inner = set(action.candidates[:-1])
        assert inner <= skipped and action.candidates[-1] not in skipped


@SETTINGS
@given(n=st.integers(0, 200), k=st.integers(1, 4), data=st.data())
def test_linear_async_workers(n, k, data):
    commits, cands = linear_history(n)
    culprit = commits[data.draw(st.integers(0, n))]
    skipped = data.draw(skip_clusters(commits))
    seed = data.draw(st.lists(st.integers(0, 7), min_size=1, max_size=8))
    action = run_async(cands, Oracle(cands, culprit, skipped), k, seed)
    check_result(action, culprit, skipped)


# --- DAGs -----------------------------------------------------------------------------------


@SETTINGS
@given(cands=dag_history(), k=st.integers(1, 4), data=st.data())
def test_dag_with_skips(cands, k, data):
    culprit = data.draw(st.sampled_from(cands.order))
    skipped = set(data.draw(st.sets(st.sampled_from(cands.order[:-1]), max_size=8)))
    if data.draw(st.booleans()):
        skipped = set()
    oracle = Oracle(cands, culprit, skipped)
    action, rounds = run_rounds(cands, oracle, k)
    check_result(action, culprit, skipped)
    assert oracle.tests <= len(cands.order) - 1


@SETTINGS
@given(cands=dag_history(), k=st.integers(1, 4), data=st.data())
def test_dag_async_workers(cands, k, data):
    culprit = data.draw(st.sampled_from(cands.order))
    skipped = set(data.draw(st.sets(st.sampled_from(cands.order[:-1]), max_size=5)))
    seed = data.draw(st.lists(st.integers(0, 7), min_size=1, max_size=8))
    action = run_async(cands, Oracle(cands, culprit, skipped), k, seed)
    check_result(action, culprit, skipped)
