"""The flake-aware search (search/bayes.py): properties with hypothesis, plus a few cases.

The oracle: a commit is bad iff the culprit is one of its ancestors-or-self; its verdict is
wrong with probability p (good commit) or q (bad commit), from a seeded generator.
"""

from __future__ import annotations

import math
import random

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from test_search_properties import ancestor_sets, dag_history, skip_clusters
from tritonbisect.search import bayes
from tritonbisect.search.bayes import FlakeModel, posterior
from tritonbisect.search.bayes_step import next_step
from tritonbisect.search.classic import Candidates, Found, Inconclusive, TestNext, Wait

SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


class FlakyOracle:
    def __init__(self, cands: Candidates, culprit: str, p: float, q: float, seed: int,
                 skipped: frozenset[str] = frozenset()) -> None:
        self.anc = ancestor_sets(cands)
        self.culprit, self.p, self.q = culprit, p, q
        self.rnd = random.Random(seed)
        self.skipped = skipped
        self.tests = 0

    def truly_bad(self, commit: str) -> bool:
        return self.culprit in self.anc[commit]

    def __call__(self, commit: str) -> str:
        self.tests += 1
        bad = self.truly_bad(commit)
        lies = self.rnd.random() < (self.q if bad else self.p)
        return "bad" if bad != lies else "good"


def add(counts: dict, commit: str, verdict: str) -> None:
    g, b = counts.get(commit, (0, 0))
    counts[commit] = (g + (verdict == "good"), b + (verdict == "bad"))


def run_search(cands, oracle, *, model=None, workers=1, confidence=0.95, budget=None,
               skipped=frozenset(), endpoint_runs=3):
    """Synchronous rounds; returns (final action, counts)."""
    counts: dict[str, tuple[int, int]] = {}
    for _ in range(endpoint_runs):  # the good endpoint ("good", outside) and the bad one
        add(counts, "good", "bad" if oracle.rnd.random() < oracle.p else "good")
        add(counts, cands.bad, oracle(cands.bad))
    spent = 0
    while True:
        left = None if budget is None else budget - spent
        action = next_step(cands, counts, model=model, workers=workers, skipped=skipped,
                           confidence=confidence, tests_left=left)
        if not isinstance(action, TestNext):
            assert not isinstance(action, Wait)  # nothing in flight: never wait
            return action, counts
        assert 1 <= len(action.commits) <= workers
        assert len(set(action.commits)) == len(action.commits)
        assert not set(action.commits) & set(skipped)
        for commit in action.commits:
            add(counts, commit, oracle(commit))
            spent += 1
        assert spent <= 2000


# --- the posterior ---------------------------------------------------------------------------


@SETTINGS
@given(n=st.integers(1, 150), data=st.data())
def test_posterior_is_a_distribution_and_badness_grows_along_the_range(n, data):
    commits = [f"c{i}" for i in range(n)]
    cands = Candidates.linear(commits)
    counts = {}
    for _ in range(data.draw(st.integers(0, 30))):
        add(counts, commits[data.draw(st.integers(0, n - 1))], data.draw(st.sampled_from(["good", "bad"])))
    fixed = data.draw(st.booleans())
    model = FlakeModel(p=0.1, q=0.05) if fixed else FlakeModel(trust=data.draw(st.sampled_from([0.0, 0.9])))
    post = posterior(cands, counts, model=model)
    assert all(w >= 0.0 for w in post.w)
    assert math.isclose(sum(post.w), 1.0, rel_tol=1e-9)
    bads = [post.p_bad(c) for c in commits]
    assert all(a <= b + 1e-12 for a, b in zip(bads, bads[1:], strict=False))
    assert math.isclose(bads[-1], 1.0, rel_tol=1e-9)  # the bad endpoint is bad everywhere
    p, q = post.rates()
    assert 0.0 < p < 1.0 and 0.0 < q < 1.0


@SETTINGS
@given(cands=dag_history(), data=st.data())
def test_marks_are_constraints(cands, data):
    anc = ancestor_sets(cands)
    commit = data.draw(st.sampled_from(cands.order[:-1]))
    verdict = data.draw(st.sampled_from(["good", "bad"]))
    post = posterior(cands, {}, marks={commit: verdict})
    for c in cands.order:
        excluded = (c in anc[commit]) if verdict == "good" else (c not in anc[commit])
        if excluded:
            assert post.prob(c) == 0.0
    assert math.isclose(sum(post.w), 1.0, rel_tol=1e-9)


def test_contradicting_marks_are_refused():
    commits = [f"c{i}" for i in range(10)]
    with pytest.raises(ValueError, match="contradict"):
        posterior(Candidates.linear(commits), {}, marks={"c3": "bad", "c6": "good"})


@SETTINGS
@given(n=st.integers(6, 160), data=st.data())
def test_a_marked_commit_bounds_the_answer_it_is_not_grouped_with_its_neighbour(n, data):
    """A person marks a commit good above the tests' culprit: the answer is its child alone
    (a marked commit is known, never tested again, and never part of the answer)."""
    commits = [f"c{i}" for i in range(n)]
    cands = Candidates.linear(commits)
    # at least one good commit in the range: when every verdict of the range failed, nothing
    # tells the test's false failures apart from the mark's claim, and no answer is certain
    truth = data.draw(st.integers(1, n - 3))
    mark = data.draw(st.integers(truth, n - 2))
    oracle = FlakyOracle(cands, commits[truth], 0.0, 0.0, seed=n)
    counts: dict[str, tuple[int, int]] = {}
    for _ in range(3):
        add(counts, "good", "good")
    add(counts, cands.bad, oracle(cands.bad))
    lo, hi = -1, n - 1  # the first session: a plain bisection, which the mark contradicts
    while hi - lo > 1:
        mid = (lo + hi) // 2
        verdict = oracle(commits[mid])
        add(counts, commits[mid], verdict)
        lo, hi = (mid, hi) if verdict == "good" else (lo, mid)
    workers = data.draw(st.integers(1, 4))
    for _ in range(100):
        action = next_step(cands, counts, model=FlakeModel(trust=0.9), marks={commits[mark]: "good"},
                           workers=workers)
        if not isinstance(action, TestNext):
            break
        assert commits[mark] not in action.commits
        for c in action.commits:
            add(counts, c, oracle(c))
    assert action == Found(commits[mark + 1])


def test_a_verdict_outside_the_set_only_informs_the_false_failure_rate():
    commits = [f"c{i}" for i in range(8)]
    cands = Candidates.linear(commits)
    quiet = posterior(cands, {"good": (5, 0)})
    noisy = posterior(cands, {"good": (3, 2)})
    assert noisy.rates()[0] > quiet.rates()[0]
    assert quiet.w == pytest.approx([1 / 8] * 8) and noisy.w == pytest.approx([1 / 8] * 8)


# --- searching --------------------------------------------------------------------------------


@pytest.mark.parametrize(("n", "k", "culprit"), [(223, 2, 0), (300, 2, 1), (100, 2, 3)])
def test_two_workers_split_the_range_in_thirds(n, k, culprit):
    """Greedy batches alone took the middle, then a quarter point: 1.5 bits a round, 14 tests
    where 12 suffice at n = 223 (found by the property test below)."""
    commits = [f"c{i}" for i in range(n + 1)]
    cands = Candidates.linear(commits)
    oracle = FlakyOracle(cands, commits[culprit], 0.0, 0.0, 0)
    action, _ = run_search(cands, oracle, model=FlakeModel(p=0.0, q=0.0), workers=k, endpoint_runs=1)
    assert action == Found(commits[culprit])
    assert oracle.tests - 1 <= k * (math.ceil(math.log(n + 1, k + 1) - 1e-9) + 1)


@SETTINGS
@given(n=st.integers(0, 300), k=st.integers(1, 3), data=st.data())
def test_noiseless_with_known_rates_finds_the_culprit_near_the_log2_limit(n, k, data):
    commits = [f"c{i}" for i in range(n + 1)]
    cands = Candidates.linear(commits)
    culprit = commits[data.draw(st.integers(0, n))]
    oracle = FlakyOracle(cands, culprit, 0.0, 0.0, 0)
    action, counts = run_search(cands, oracle, model=FlakeModel(p=0.0, q=0.0), workers=k,
                                endpoint_runs=1)
    assert action == Found(culprit)
    search_tests = oracle.tests - 1
    assert search_tests <= k * (math.ceil(math.log(n + 1, k + 1) - 1e-9) + 1) if n else search_tests == 0


@SETTINGS
@given(
    n=st.integers(1, 120),
    p=st.sampled_from([0.05, 0.1, 0.2]),
    q=st.sampled_from([0.0, 0.05]),
    k=st.integers(1, 3),
    seed=st.integers(0, 10_000),
    data=st.data(),
)
def test_flaky_search_answers_with_the_stated_probability_or_spends_its_budget(n, p, q, k, seed, data):
    commits = [f"c{i}" for i in range(n + 1)]
    cands = Candidates.linear(commits)
    culprit = commits[data.draw(st.integers(0, n))]
    skipped = frozenset(data.draw(skip_clusters(commits)) - {culprit})
    oracle = FlakyOracle(cands, culprit, p, q, seed)
    budget = 6 * math.ceil(math.log2(n + 2)) + 10
    action, counts = run_search(cands, oracle, workers=k, budget=budget, skipped=skipped)
    post = posterior(cands, counts)
    assert oracle.tests - 6 <= budget + k
    if isinstance(action, Found):
        assert post.prob(action.culprit) >= 0.95 or oracle.tests - 6 >= budget
    else:
        assert isinstance(action, Inconclusive)
        held = sum(post.prob(c) for c in action.candidates)
        # an untestable cluster that holds the culprit, or the budget spent
        assert held >= 0.95 or oracle.tests - 6 >= budget
    assert not set(counts) & skipped


@SETTINGS
@given(cands=dag_history(), seed=st.integers(0, 10_000), data=st.data())
def test_dags_noiseless_and_flaky(cands, seed, data):
    culprit = data.draw(st.sampled_from(cands.order))
    exact, _ = run_search(cands, FlakyOracle(cands, culprit, 0.0, 0.0, seed),
                          model=FlakeModel(p=0.0, q=0.0), endpoint_runs=1)
    assert exact == Found(culprit)
    flaky = FlakyOracle(cands, culprit, 0.1, 0.0, seed)
    action, counts = run_search(cands, flaky, budget=60, workers=data.draw(st.integers(1, 3)))
    if isinstance(action, Found) and flaky.tests - 6 < 60:
        assert posterior(cands, counts).prob(action.culprit) >= 0.95


def test_a_culprit_inside_an_untestable_cluster_is_inconclusive_with_the_cluster():
    commits = [f"c{i}" for i in range(40)]
    cands = Candidates.linear(commits)
    cluster = frozenset(commits[18:24])
    oracle = FlakyOracle(cands, "c20", 0.05, 0.0, 7)
    action, _ = run_search(cands, oracle, skipped=cluster)
    assert isinstance(action, Inconclusive)
    assert "c20" in action.candidates
    assert set(action.candidates) <= cluster | {"c24"}


def test_retesting_is_chosen_when_a_lone_verdict_carries_the_answer():
    commits = [f"c{i}" for i in range(4)]
    cands = Candidates.linear(commits)
    # c1 failed once, c0 passed: c1 is the culprit unless that failure was a lie
    counts = {"good": (3, 0), "c0": (1, 0), "c1": (0, 1), "c2": (0, 1), "c3": (0, 3)}
    action = next_step(cands, counts, model=FlakeModel(p=0.2, q=0.0))
    assert isinstance(action, TestNext) and action.commits[0] in ("c0", "c1")


def test_a_cached_build_near_the_best_point_is_preferred():
    commits = [f"c{i:03d}" for i in range(200)]
    cands = Candidates.linear(commits)
    counts = {"good": (3, 0), commits[-1]: (0, 3)}
    first = next_step(cands, counts)
    assert isinstance(first, TestNext)
    best = commits.index(first.commits[0])
    near = commits[best + 4]
    again = next_step(cands, counts, cached={near})
    assert again.commits == (near,)
    far = commits[best + 60]
    assert next_step(cands, counts, cached={far}).commits == first.commits


def test_in_flight_commits_are_not_chosen_again_and_the_batch_spreads_out():
    commits = [f"c{i:03d}" for i in range(255)]
    cands = Candidates.linear(commits)
    counts = {"good": (3, 0), commits[-1]: (0, 3)}
    action = next_step(cands, counts, workers=3)
    assert isinstance(action, TestNext) and len(action.commits) == 3
    positions = sorted(commits.index(c) for c in action.commits)
    assert positions[0] < 100 < positions[1] < 155 < positions[2]  # quartiles, roughly
    more = next_step(cands, counts, workers=1, in_flight=set(action.commits))
    assert isinstance(more, TestNext) and not set(more.commits) & set(action.commits)


def test_flake_rates_out_of_range_are_refused():
    with pytest.raises(ValueError):
        FlakeModel(p=0.5)
    with pytest.raises(ValueError):
        next_step(Candidates.linear(["a"]), {}, confidence=1.0)


def test_answers_given_at_095_are_right_at_least_that_often():
    """Calibration, seeded: of the culprits the search states with P >= 0.95, >= 95% right."""
    commits = [f"c{i}" for i in range(48)]
    cands = Candidates.linear(commits)
    stated = right = 0
    for seed in range(120):
        rnd = random.Random(seed)
        culprit = commits[rnd.randrange(len(commits))]
        oracle = FlakyOracle(cands, culprit, 0.15, 0.05, seed)
        action, counts = run_search(cands, oracle, budget=60)
        if isinstance(action, Found) and posterior(cands, counts).prob(action.culprit) >= 0.95:
            stated += 1
            right += action.culprit == culprit
    assert stated >= 110
    assert right / stated >= 0.95


def test_the_summary_is_json_ready():
    commits = [f"c{i}" for i in range(10)]
    post = posterior(Candidates.linear(commits), {"c4": (0, 2), "c3": (2, 0)})
    summary = post.summary(3)
    assert [t["commit"] for t in summary["top"]][0] == "c4"
    assert summary["rates"] == "learned" and summary["verdicts"] == 4
    assert bayes.posterior(Candidates.linear(commits), {}, model=FlakeModel(p=0.1)).summary()["rates"] == "fixed"
