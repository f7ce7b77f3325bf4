"""--verify-revert on the toy world's Triton and LLVM: real builds with gcc, through the
Triton and LLVM recipes and their caches."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bisectors_world import run_json, write_toy_map
from testing.toyworld.world import make_world

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    return make_world(tmp_path_factory.mktemp("world"), llvm_commits=20, triton_commits=20)


def _journal(result: dict) -> list[dict]:
    path = Path(result["session_dir"]) / "journal.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def test_triton_culprit_and_llvm_descent_are_verified_by_revert(world, tmp_path, capsys):
    t = world.truth
    order = t["triton_order"]
    i = order.index(t["bump"])
    good, bad = order[i - 2], order[min(i + 2, len(order) - 1)]
    cmap = write_toy_map(world, tmp_path / "commits.csv")
    code, res, err = run_json([
        "triton", "--triton-dir", str(world.triton), "--llvm-dir", str(world.llvm),
        "--good", good, "--bad", bad, "--test", t["triton_test"], "--workdir", str(tmp_path / "home"),
        "--compat-map", str(cmap), "--verify-revert",
    ], capsys)
    assert code == 0, err[-3000:]
    phases = {p["name"]: p for p in res["phases"]}
    assert phases["triton"]["culprit"] == t["bump"]
    assert phases["llvm"]["culprit"] == t["llvm_regression"]
    reverts = {r["phase"]: r for r in _journal(res) if r["role"] == "revert"}
    assert set(reverts) == {"triton", "llvm"}
    # the bump reverted in Triton (the old pin), and the LLVM culprit reverted in llvm-project at
    # the new pin, built with its Triton: both fix the test, each a build of its own
    for phase, rec in reverts.items():
        assert rec["verdict"] == "good", (phase, rec["reason"])
        assert rec["build"]["performed"] and not rec["build"]["cached"]
        assert rec["revert_tree"]["commit"] not in (phases[phase]["culprit"], rec["commit"])
    assert res["revert"] == "fixes"
    assert [c["culprit"] for c in res["culprits"]] == [t["llvm_regression"]]
