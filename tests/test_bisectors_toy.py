"""The domain bisectors end to end on the toy world: real LLVM and Triton builds with gcc.

One world and one workdir (so one artifact cache) for the module: later tests re-use what
earlier ones built, as a user's second session would.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from bisectors_world import run_cli, run_json, write_toy_map
from testing.toyworld.world import make_world
from tritonbisect.core.history import History
from tritonbisect.domains.llvm.bisector import llvm_order
from tritonbisect.domains.llvm.pairs import max_pairs_tested

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    return make_world(
        tmp_path_factory.mktemp("world"), llvm_commits=20, triton_commits=20, with_torch=True
    )


@pytest.fixture(scope="module")
def home(tmp_path_factory):
    return tmp_path_factory.mktemp("home")


def _triton(world, home, good: str, bad: str, *extra: str, test: str | None = None) -> list[str]:
    return [
        "triton", "--triton-dir", str(world.triton), "--llvm-dir", str(world.llvm),
        "--good", good, "--bad", bad, "--test", test or world.truth["triton_test"],
        "--workdir", str(home), *extra,
    ]


def _journal(result: dict) -> list[dict]:
    path = Path(result["session_dir"]) / "journal.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def _around(order: list[str], commit: str, before: int = 2, after: int = 2) -> tuple[str, str]:
    """A short range around `commit` (fewer steps: each one is a real build)."""
    i = order.index(commit)
    return order[i - before], order[min(i + after, len(order) - 1)]


def test_pairs_search_tests_at_most_log2_pairs(world, home, tmp_path, capsys):
    # First in the module: with nothing cached the search is a plain binary search (later, a
    # cached pair near the midpoint may be preferred to an uncached one: cheaper, not fewer).
    t = world.truth
    order = llvm_order(History(world.llvm), t["old_llvm"], t["new_llvm"])
    inside = order[1 : order.index(t["llvm_last_compatible"][0]) + 1]
    rows = [(t["bump_parent"], c) for c in inside if c not in t["llvm_broken"]]
    cmap = write_toy_map(world, tmp_path / "commits.csv", rows)
    code, res, err = run_json(
        ["pairs", "--compat-map", str(cmap), "--triton-dir", str(world.triton),
         "--llvm-dir", str(world.llvm), "--test", t["triton_test"], "--workdir", str(home)],
        capsys,
    )
    assert code == 0, err[-3000:]
    candidates = [ll for _, ll in rows] + [t["new_llvm"]]
    regression_at = order.index(t["llvm_regression"])
    first_bad = next(c for c in candidates if order.index(c) >= regression_at)
    assert res["culprit"] == first_bad
    assert f"first bad pair: triton {t['bump_parent'][:12]} + llvm {first_bad[:12]}" in err
    tested = {r["commit"] for r in _journal(res) if r["role"] in ("endpoint", "search")}
    tested.discard(t["old_llvm"])
    assert len(tested) <= max_pairs_tested(len(candidates)) < len(candidates)


def test_pairs_bisect_the_first_bad_pairs_llvm_range_to_the_culprit(world, home, tmp_path, capsys):
    # A sparse map (two pairs around the regression): the first bad pair's LLVM commit ends a
    # range of several commits; it is not the culprit, and the session goes on to find it.
    t = world.truth
    order = llvm_order(History(world.llvm), t["old_llvm"], t["new_llvm"])
    regression = order.index(t["llvm_regression"])
    inside = order[1 : order.index(t["llvm_last_compatible"][0]) + 1]
    sparse = [inside[0], inside[-1]]
    ends = [inside[-1]]
    assert order.index(inside[0]) < regression < order.index(inside[-1])
    cmap = write_toy_map(world, tmp_path / "commits.csv", [(t["bump_parent"], c) for c in sparse])
    code, res, err = run_json(
        ["pairs", "--compat-map", str(cmap), "--triton-dir", str(world.triton),
         "--llvm-dir", str(world.llvm), "--test", t["triton_test"], "--workdir", str(home)],
        capsys,
    )
    assert code == 0, err[-3000:]
    assert res["culprit"] == t["llvm_regression"] and res["phase"] == "llvm"
    pairs, llvm = res["phases"]
    assert pairs["name"] == "pairs" and llvm["name"] == "llvm"
    assert f"first bad pair: triton {t['bump_parent'][:12]} + llvm {ends[0][:12]}" in err
    assert "bisecting them" in err and f"phase pairs: first bad pair at llvm {ends[0][:12]}" in err
    assert "one of the 5 LLVM commits" in pairs["reason"] and ends[0][:12] in pairs["reason"]
    code, md, _ = run_cli(["report", res["session"], "--workdir", str(home)], capsys)
    assert code == 0 and t["llvm_regression"][:12] in md


def test_llvm_regression_is_found_as_the_bump_then_descended_into(world, home, tmp_path, capsys):
    t = world.truth
    good, bad = _around(t["triton_order"], t["bump"])
    cmap = write_toy_map(world, tmp_path / "commits.csv")
    code, res, err = run_json(
        _triton(world, home, good, bad, "--compat-map", str(cmap)), capsys
    )
    assert code == 0, err[-3000:]
    phases = {p["name"]: p for p in res["phases"]}
    assert phases["triton"]["culprit"] == t["bump"]
    assert phases["llvm"]["culprit"] == t["llvm_regression"]
    assert res["culprit"] == t["llvm_regression"]
    assert "is an LLVM bump" in err and "descending into llvm-project" in err
    journal = _journal(res)
    # with the map, the API break is built with the bump: it is tested, not skipped
    assert not any(r["verdict"] == "skip" and r["commit"] == t["llvm_api_breaks"][0]["commit"]
                   for r in journal)
    # the descent's endpoints are the Triton phase's culprit and its parent: no new build
    assert all(not r["build"]["performed"] for r in journal
               if r["phase"] == "llvm" and r["role"] == "endpoint")
    # the report shows both culprits
    code, md, _ = run_cli(["report", res["session"], "--workdir", str(home)], capsys)
    assert code == 0 and t["bump"][:12] in md and t["llvm_regression"][:12] in md


def test_resume_continues_the_llvm_phase(world, home, capsys):
    """As if killed in the middle of the descent: resume goes on with the LLVM phase, re-using
    the steps already journaled."""
    t = world.truth
    done = sorted((home / "sessions").iterdir())
    src = next(d for d in reversed(done)
               if [p["name"] for p in json.loads((d / "session.json").read_text())["phases"]]
               == ["triton", "llvm"])
    dst = src.parent / f"{src.name}-killed"
    shutil.copytree(src, dst, ignore=shutil.ignore_patterns("*.lock", "lock"))
    data = json.loads((dst / "session.json").read_text())
    data["id"] = dst.name
    data["phases"][1].update(status="running", culprit=None, candidates=[], confidence=None)
    data["current_phase"] = 1
    (dst / "session.json").write_text(json.dumps(data))
    lines = (dst / "journal.jsonl").read_text().splitlines()
    keep = [ln for ln in lines if json.loads(ln)["phase"] == "triton"]
    keep += [ln for ln in lines if json.loads(ln)["phase"] == "llvm"][:3]
    (dst / "journal.jsonl").write_text("\n".join(keep) + "\n")
    code, res, err = run_json(["resume", dst.name, "--workdir", str(home)], capsys)
    assert code == 0, err[-3000:]
    assert [p["culprit"] for p in res["phases"]] == [t["bump"], t["llvm_regression"]]
    records = _journal(res)
    assert sum(r["phase"] == "llvm" and r["role"] == "endpoint" for r in records) == 2
    new = records[len(keep):]
    assert new and all(r["phase"] == "llvm" for r in new)
    assert not any(r["build"]["performed"] for r in new)  # all in the cache


def _regression_argv(world, home):
    t = world.truth
    good, bad = _around(t["triton_order"], t["triton_regression"])
    # the common options reach the domain bisectors too
    return _triton(world, home, good, bad, "--repeat", "2", "--timeout", "300", "--env", "TOY=1")


def test_triton_regression_is_found(world, home, capsys):
    t = world.truth
    code, res, _ = run_json(_regression_argv(world, home), capsys)
    assert code == 0
    assert res["culprit"] == t["triton_regression"]
    assert [p["name"] for p in res["phases"]] == ["triton"]  # not a bump: no descent
    assert all(len(r["tests"]) == 2 for r in _journal(res) if r["kind"] in ("pass", "fail"))


def test_second_identical_run_builds_nothing(world, home, capsys):
    t = world.truth
    code, res, _ = run_json(_regression_argv(world, home), capsys)
    assert code == 0
    assert res["culprit"] == t["triton_regression"]
    assert res["builds"] == 0 and res["cached_builds"] > 0
    assert all(not r["build"]["performed"] for r in _journal(res))


def test_triton_on_ray_builds_on_a_builder_and_tests_on_a_tester(world, home, capsys):
    pytest.importorskip("ray")
    t = world.truth
    good, bad = _around(t["triton_order"], t["triton_regression"])
    argv = _triton(world, home, good, bad, "--jobs", "2", "--executor", "ray",
                   "--ray-address", "local", "--build-resources", "builder=1",
                   "--test-resources", "tester=1")
    code, res, err = run_json(argv, capsys)
    assert code == 0, err[-3000:]
    assert res["culprit"] == t["triton_regression"]
    tested = [r for r in _journal(res) if r["tests"]]
    assert tested
    for rec in tested:  # the tester installed the wheel the builder put in the cache
        assert rec["build"].get("install", {}).get("node") == rec["node"], rec
        assert "wheel taken from the cache" in rec["build"]["install"]["reason"]
    assert "building on {builder: 1} and testing on {tester: 1}" in err


def test_infra_failure_aborts_with_its_reason(world, home, capsys):
    t = world.truth
    test = "echo 'write: No space left on device' >&2; exit 1"
    good, bad = _around(t["triton_order"], t["triton_regression"])
    code, res, _ = run_json(_triton(world, home, good, bad, test=test), capsys)
    assert code == 4
    assert res["status"] == "aborted" and "No space left on device" in res["reason"]


def test_torch_regression_is_found(world, home, capsys):
    t = world.truth
    good, bad = _around(t["torch_order"], t["torch_regression"])
    code, res, err = run_json(
        ["torch", "--torch-dir", str(world.torch), "--good", good, "--bad", bad,
         "--triton-dir", str(world.triton), "--test", t["torch_test"],
         "--llvm-dir", str(world.llvm), "--jobs", "2", "--workdir", str(home)],
        capsys,
    )
    assert code == 0, err[-3000:]
    assert res["culprit"] == t["torch_regression"]
