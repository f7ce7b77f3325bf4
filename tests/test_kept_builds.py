"""Builds kept in the workers' checkouts: with a plain `--build` (no artifact cache) the
confirmation re-tests the culprit and its parent on builds the session already has."""

from __future__ import annotations

from pathlib import Path

from engine_repo import BUILD, TEST, journal, last_json, linear, tb
from tritonbisect.builds.recipes import TestSpec as Spec
from tritonbisect.core.outcome import Policy
from tritonbisect.domains.command.recipe import CommandRecipe
from tritonbisect.executors.local_pool import WorkerPool
from tritonbisect.executors.pool_settings import ExecutorSettings
from tritonbisect.executors.runner import Reuse, StepRequest


def _run(repo: Path, home: Path, good: str, build: str, test: str, *extra: str) -> dict:
    proc = tb("run", "--repo", str(repo), "--good", good, "--bad", "main", "--build", build,
              "--test", test, "--json", *extra, cwd=repo, home=home)
    assert proc.returncode == 0, proc.stderr
    return last_json(proc.stdout)


def test_the_confirmation_builds_nothing_again(tmp_path: Path) -> None:
    repo, home, log = tmp_path / "repo", tmp_path / "home", tmp_path / "builds.log"
    shas = linear(repo, 80, culprit=53, broken=[*range(30, 38), *range(60, 66)])
    out = _run(repo, home, shas[0], f"echo built >> {log}; {BUILD}", TEST)
    assert out["culprit"] == shas[53] and out["confidence"] == "high"
    recs = journal(home, out["session"])
    confirm = [r for r in recs if r["role"] == "confirm"]
    assert {r["commit"] for r in confirm} == {shas[52], shas[53]}
    assert all(r["build"]["kept"] and not r["build"]["performed"] for r in confirm)
    # every build the scripts saw was an endpoint's or a search step's, each its commit's first
    built = len(log.read_text().splitlines())
    assert built == out["builds"] == len(recs) - len(confirm)
    assert out["cached_builds"] == len(confirm)
    # one worker, and at most the two kept builds besides it
    assert {r["worker"] for r in recs} <= {0, 1, 2}


def test_a_build_that_installs_is_reused_only_while_it_is_the_latest(tmp_path: Path) -> None:
    """`install` puts the state outside the checkout, where the test reads it: a checkout no
    longer stands for its build once another build ran, so only the latest one is reused."""
    repo, home, prefix = tmp_path / "repo", tmp_path / "home", tmp_path / "prefix"
    prefix.mkdir()
    shas = linear(repo, 40, culprit=17)
    build = f"{BUILD}; install -m 644 state {prefix}/state"
    out = _run(repo, home, shas[0], build, f"grep -q ok {prefix}/state")
    # a wrong reuse would have tested the other commit's install: a disagreeing confirmation
    assert out["culprit"] == shas[17] and out["confidence"] == "high"
    recs = journal(home, out["session"])
    confirm = [r for r in recs if r["role"] == "confirm"]
    assert [bool(r["build"].get("kept")) for r in confirm] == [True, False]
    assert out["builds"] == len(recs) - 1
    assert {r["worker"] for r in recs} == {0}  # nothing kept: the one worktree does it all


def test_the_pool_keeps_builds_and_routes_a_reuse_to_the_checkout_that_holds_it(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    shas = linear(repo, 6, culprit=4)
    recipe = CommandRecipe(BUILD, Spec(TEST))
    pool = WorkerPool(ExecutorSettings(jobs=1), repo, tmp_path / "work", "kept-test", recipe, Policy())
    steps = iter(range(100))

    def step(commit: str, reuse: Reuse = Reuse.NO):
        request = StepRequest(commit=commit, log_dir=tmp_path / "steps" / str(next(steps)), reuse=reuse)
        return pool.submit(request).result()

    try:
        first = step(shas[1])
        pool.keep_builds([shas[1]])
        other = step(shas[5])
        assert other.worker != first.worker and other.verdict == "bad"
        again = step(shas[1], Reuse.KEPT)
        assert again.worker == first.worker and again.build is not None and again.build["kept"]
        assert again.verdict == "good"  # tested on the build its checkout kept
        # another build started after it: a build that installs elsewhere is not reused
        rebuilt = step(shas[1], Reuse.LATEST)
        assert rebuilt.build is not None and rebuilt.build["performed"] and not rebuilt.build.get("kept")
        latest = step(shas[1], Reuse.LATEST)
        assert latest.build is not None and latest.build["kept"]
        pool.keep_builds([])
        assert step(shas[3]).worker == first.worker  # nothing kept: the first worktree again
    finally:
        pool.close()
