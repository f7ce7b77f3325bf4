"""A deterministic test's answer is never low-confidence, whatever the history's size and --jobs.

The confidence of a classic answer was the posterior under a small prior that the test is
flaky. With --jobs, the steps above a newly bad commit are stopped as useless, so when the
culprit is one of the first batch's points, thousands of commits above it rest on its own
two verdicts: P fell below the threshold (exit 6) on a test that never lied. A confirmed
answer no verdict contradicts is high (session/flakiness.py confirmed_confidence).
"""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engine_repo import BUILD, TEST, last_json, linear, tb
from tritonbisect.search import classic as search
from tritonbisect.search.bayes import FlakeModel, posterior
from tritonbisect.session.flakiness import CLASSIC_TRUST, Flakiness, SearchSettings


def _session(n: int, culprit: int, jobs: int, rnd: random.Random) -> tuple[str, dict[str, tuple[int, int]]]:
    """The session's classic search over c1..c(n-1) with `jobs` workers finishing in random
    order, useless steps stopped, then the confirmation: (answer, verdict counts)."""
    order = [f"c{i}" for i in range(1, n)]
    cands = search.Candidates.linear(order)
    counts = {"c0": (1, 0), order[-1]: (0, 1)}
    verdicts = {order[-1]: "bad"}
    flying: list[str] = []

    def test(commit: str) -> str:
        verdict = "bad" if int(commit[1:]) >= culprit else "good"
        g, b = counts.get(commit, (0, 0))
        counts[commit] = (g + (verdict == "good"), b + (verdict == "bad"))
        return verdict

    while True:
        free = jobs - len(flying)
        act = (search.next_step(cands, verdicts, workers=free, in_flight=frozenset(flying))
               if free > 0 else search.Wait())
        if isinstance(act, search.TestNext):
            flying += act.commits
            continue
        if isinstance(act, search.Found):
            break
        commit = flying.pop(rnd.randrange(len(flying)))
        verdicts[commit] = test(commit)
        implied = search.implied(cands, verdicts) or frozenset()
        flying = [c for c in flying if c not in implied]
    answer = act.culprit
    test(answer)
    test(f"c{int(answer[1:]) - 1}")
    return answer, counts


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(n=st.integers(20, 3000), jobs=st.integers(1, 8), data=st.data())
def test_a_confirmed_answer_no_verdict_contradicts_is_high(n, jobs, data):
    # the culprit at one of the first batch's points (where P fell lowest), or anywhere
    split = max(2, n * data.draw(st.integers(1, jobs)) // (jobs + 1))
    culprit = data.draw(st.sampled_from([split, data.draw(st.integers(2, n - 1))]))
    answer, counts = _session(n, culprit, jobs, random.Random(data.draw(st.integers(0, 2**16))))
    assert answer == f"c{culprit}"
    cands = search.Candidates.linear([f"c{i}" for i in range(1, n)])
    post = posterior(cands, counts, model=FlakeModel(trust=CLASSIC_TRUST))
    assert post.wrong_verdicts(answer) == 0
    high, said = Flakiness(SearchSettings(), None, None).confirmed_confidence(post, answer)
    assert high, said


def test_a_contradicted_answer_below_the_threshold_stays_low():
    order = [f"c{i}" for i in range(1, 40)]
    cands = search.Candidates.linear(order)
    # c20 tested bad, then good: whichever is the culprit, a verdict contradicts it
    counts = {"c0": (1, 0), "c20": (1, 1), "c21": (0, 2), "c19": (2, 0), order[-1]: (0, 1)}
    post = posterior(cands, counts, model=FlakeModel(trust=CLASSIC_TRUST))
    assert post.wrong_verdicts("c21") == 1
    high, said = Flakiness(SearchSettings(), None, None).confirmed_confidence(post, "c21")
    assert not high and "below 0.95" in said


@pytest.mark.parametrize(("n", "culprit", "jobs"), [(1000, 200, 4), (1200, 400, 2), (900, 225, 3),
                                                    (1000, 111, 8), (700, 350, 1)])
def test_run_with_jobs_and_a_deterministic_test_exits_0_with_high_confidence(tmp_path: Path, n: int,
                                                                               culprit: int, jobs: int) -> None:
    repo, home = tmp_path / "repo", tmp_path / "home"
    shas = linear(repo, n, culprit=culprit)
    proc = tb("run", "--repo", str(repo), "--good", shas[0], "--bad", "main", "--build", BUILD,
              "--test", TEST, "--jobs", str(jobs), "--json", cwd=repo, home=home, timeout=600)
    assert proc.returncode == 0, proc.stderr[-2000:]
    out = last_json(proc.stdout)
    assert out["culprit"] == shas[culprit] and out["confidence"] == "high", out["reason"]
    if out["posterior"]["probability"] < out["posterior"]["threshold"]:
        assert "no verdict contradicts it" in out["reason"]
