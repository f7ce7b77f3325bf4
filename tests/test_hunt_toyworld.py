"""`hunt` with the Triton bisector on the toy world: real LLVM and Triton builds with gcc,
cached from one night to the next."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bisectors_world import run_json
from testing.toyworld.world import make_world

pytestmark = pytest.mark.slow


@pytest.fixture(autouse=True)
def _not_in_github(monkeypatch):
    monkeypatch.delenv("GITHUB_OUTPUT", raising=False)
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)


def test_triton_hunt_reuses_the_builds_of_earlier_nights(tmp_path: Path, capsys) -> None:
    world = make_world(tmp_path / "world", llvm_commits=20, triton_commits=20)
    t = world.truth
    good, bad = t["triton_regression_range"]
    home = tmp_path / "home"
    argv = [
        "hunt", "--state", str(home / "state.json"), "--workdir", str(home),
        "--triton-dir", str(world.triton), "--llvm-dir", str(world.llvm),
        "--test", t["triton_test"], "--issue-body", str(home / "issue.md"),
    ]

    code, res, err = run_json([*argv, "--bad", good], capsys)
    assert (code, res["status"], res["tests"], res["builds"]) == (0, "green", 1, 1), err[-3000:]

    code, res, err = run_json([*argv, "--bad", bad], capsys)
    assert code == 5, err[-3000:]
    assert res["culprit"] == t["triton_regression"]
    steps = [json.loads(line) for line in (Path(res["night_dir"]) / "night.jsonl").read_text().splitlines()]
    last_good = next(r for r in steps if r["role"] == "last-good")
    assert last_good["build"]["cached"]  # built on the first night
    retests = [r for r in steps if r["role"] == "retest-head"]
    assert retests and all(r["build"]["cached"] for r in retests)
    journal = [json.loads(line) for line in (Path(res["session_dir"]) / "journal.jsonl").read_text().splitlines()]
    searched = {r["commit"] for r in journal if r["role"] == "search" and (r["build"] or {}).get("performed")}
    # the head, then each commit the search built once, then the bad commit with the culprit
    # reverted (the revert check a hunt runs by default: a build of its own)
    reverted = [r for r in journal if r["role"] == "revert"]
    assert len(reverted) == 1 and reverted[0]["build"]["performed"]
    assert reverted[0]["verdict"] == "good"  # the toy Triton's culprit reverted: the test passes
    assert res["builds"] == 1 + len(searched) + 1
    assert t["triton_regression"][:12] in (home / "issue.md").read_text()

    code, res, _ = run_json([*argv, "--bad", bad], capsys)
    assert (code, res["status"], res["tests"], res["builds"], res["cached_builds"]) == (0, "known", 1, 0, 1)
