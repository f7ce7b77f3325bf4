"""Several cases in one session, end to end: real git histories (testing/toyworld/cases_repo.py),
the real `tritonbisect run` in a subprocess, real builds and tests. Each test run reports a
case per "kernel"; the session finds each regressed case's own culprit, building each commit
once for all of them."""

from __future__ import annotations

import json
import os
import signal
import time
from collections import Counter
from pathlib import Path

from engine_repo import env_for, journal, last_json, popen_tb, tb
from testing.toyworld.cases_repo import CasesWorld, make_cases_world
from waiting import wait_until


def _run(world: CasesWorld, home: Path, *extra: str, test: str | None = None, good: str | None = None):
    return tb("run", "--repo", str(world.repo), "--good", good or world.shas[0], "--bad", "main",
              "--build", world.build, "--test", test or world.test, "--json", *extra,
              cwd=world.repo, home=home, timeout=300, env=env_for(home, **world.env()))


def _built(recs: list[dict]) -> Counter[str]:
    return Counter(r["commit"] for r in recs if (r.get("build") or {}).get("performed"))


def test_each_regressed_case_gets_its_own_culprit(tmp_path: Path) -> None:
    # gemm, then softmax and layernorm together (one culprit, two cases), then attn; embed
    # broke inside a cluster that does not build; old already fails at the good commit; fine
    # never breaks
    world = make_cases_world(tmp_path, 80, {"gemm": 12, "softmax": 50, "layernorm": 50, "attn": 65,
                                            "embed": 33, "old": 0, "fine": 999}, broken=range(30, 37))
    home = tmp_path / "home"
    proc = _run(world, home)
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = last_json(proc.stdout)
    # the top-level answer is the earliest culprit, and the exit code follows it
    assert out["culprit"] == world.culprit("gemm") and out["status"] == "found" and out["confidence"] == "high"
    cases = out["cases"]
    for case in ("gemm", "softmax", "layernorm", "attn"):
        assert (cases[case]["culprit"], cases[case]["status"], cases[case]["confidence"]) == (
            world.culprit(case), "found", "high"), case
        assert cases[case]["tests"] >= 5
    assert cases["embed"]["status"] == "inconclusive" and cases["embed"]["culprit"] is None
    assert world.culprit("embed") in cases["embed"]["candidates"]
    assert cases["old"] == {"culprit": None, "status": "invalid-endpoints", "tests": 2,
                            "reason": "already mismatch at the good commit"}
    assert out["cases_not_regressed"] == ["fine"]
    recs = journal(home, out["session"])
    # each commit built once, its result serving every case still open
    assert max(_built(recs).values()) == 1
    assert world.counts()["builds"] == sum(_built(recs).values())
    searched = [r["commit"] for r in recs if r["role"] == "search"]
    assert len(searched) == len(set(searched))
    # three culprits, each confirmed with its parent (on the builds the checkouts kept)
    confirmed = {r["commit"] for r in recs if r["role"] == "confirm"}
    assert {world.culprit(c) for c in ("gemm", "softmax", "attn")} <= confirmed
    assert f"tritonbisect:   {world.culprit('attn')[:12]}: attn" in proc.stderr  # the answer, per culprit
    assert "open: " in proc.stderr  # the live display names the open cases

    report = tb("report", out["session"], cwd=world.repo, home=home)
    assert report.returncode == 0, report.stderr
    md = report.stdout
    assert md.startswith(f"## Bisected: 4 cases at 3 culprits, the earliest `{world.culprit('gemm')[:12]}` c12")
    assert "### Cases" in md
    assert f"- **2 cases regressed at `{world.culprit('softmax')[:12]}` c50:** softmax, layernorm" in md \
        or f"- **2 cases regressed at `{world.culprit('softmax')[:12]}` c50:** layernorm, softmax" in md
    assert f"| gemm | `{world.culprit('gemm')[:12]}` | found | high |" in md
    assert "| old | already mismatch at the good commit | invalid-endpoints |" in md
    assert "**Earliest culprit:**" in md
    status = tb("status", out["session"], cwd=world.repo, home=home).stdout
    assert f"    {world.culprit('softmax')[:12]}: 2 cases (layernorm, softmax)" in status \
        or f"    {world.culprit('softmax')[:12]}: 2 cases (softmax, layernorm)" in status
    plain = tb("resume", out["session"], cwd=world.repo, home=home)  # a finished session: its summary
    assert plain.returncode == 0, plain.stderr
    assert "cases: 4 regressed at 3 commits" in plain.stdout
    assert f"{world.culprit('attn')[:12]} c65: 1 case (attn)" in plain.stdout


def test_parallel_steps_serve_every_case(tmp_path: Path) -> None:
    world = make_cases_world(tmp_path, 60, {"a": 7, "b": 29, "c": 29, "d": 51})
    home = tmp_path / "home"
    proc = _run(world, home, "--jobs", "2")
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = last_json(proc.stdout)
    assert {c: e["culprit"] for c, e in out["cases"].items()} == {c: world.culprit(c) for c in "abcd"}
    recs = journal(home, out["session"])
    workers = {r["worker"] for r in recs if r["role"] == "search"}
    assert len(workers) >= 2
    assert max(_built(recs).values()) == 1


def test_no_regressed_case_is_one_line_and_exit_3(tmp_path: Path) -> None:
    # the test fails at both endpoints, for a case that failed already at the good commit
    world = make_cases_world(tmp_path, 12, {"old": 0, "fine": 99})
    home = tmp_path / "home"
    proc = _run(world, home)
    assert proc.returncode == 3, proc.stderr
    out = last_json(proc.stdout)
    assert out["status"] == "invalid-endpoints"
    assert out["reason"] == "no case regressed between the endpoints: 1 pass at the bad commit, " \
                            "1 fail at the good commit too (old)"
    assert out["cases"]["old"]["status"] == "invalid-endpoints"
    assert "Traceback" not in proc.stderr


def test_a_test_without_cases_is_bisected_as_before(tmp_path: Path) -> None:
    world = make_cases_world(tmp_path, 20, {"a": 8})
    home = tmp_path / "home"
    # the same history, judged by a test that writes no cases
    proc = _run(world, home, test="grep -q ok out/cases/a")
    assert proc.returncode == 0, proc.stderr
    out = last_json(proc.stdout)
    assert out["culprit"] == world.culprit("a") and "cases" not in out


def test_a_mark_applies_to_every_case(tmp_path: Path) -> None:
    world = make_cases_world(tmp_path, 24, {"a": 10, "b": 10, "c": 18})
    home = tmp_path / "home"
    proc = _run(world, home)
    assert proc.returncode == 0, proc.stderr
    out = last_json(proc.stdout)
    assert {c: e["culprit"] for c, e in out["cases"].items()} == {c: world.culprit(c) for c in "abc"}
    # a person says the culprit of a and b does not count (skip): both cases lose it at once
    mark = tb("mark", out["session"], world.culprit("a"), "skip", "--why", "not this one", cwd=world.repo, home=home)
    assert mark.returncode == 0, mark.stderr
    again = tb("resume", out["session"], "--json", cwd=world.repo, home=home, env=env_for(home, **world.env()))
    res = last_json(again.stdout)
    for case in ("a", "b"):
        assert res["cases"][case]["status"] == "inconclusive", res["cases"][case]
        assert set(res["cases"][case]["candidates"]) == {world.culprit("a"), world.shas[11]}
    assert res["cases"]["c"]["culprit"] == world.culprit("c")
    assert res["culprit"] == world.culprit("c") and again.returncode == 0


def _slow(world: CasesWorld, marker: Path) -> str:
    return f"echo $TRITONBISECT_COMMIT >> {marker}; sleep 0.3; {world.test}"



def _records(sdir: Path) -> int:
    path = sdir / "journal.jsonl"
    return path.read_text().count("\n") if path.exists() else 0


def test_resume_after_kill_9_mid_search_rebuilds_every_case_from_the_journal(tmp_path: Path) -> None:
    world = make_cases_world(tmp_path, 64, {"a": 9, "b": 40, "c": 40, "d": 55})
    home = tmp_path / "home"
    marker = tmp_path / "tested"
    proc = popen_tb("run", "--repo", str(world.repo), "--good", world.shas[0], "--bad", "main", "--build",
                    world.build, "--test", _slow(world, marker), "--json", cwd=world.repo, home=home,
                    env=env_for(home, **world.env()))
    wait_until(lambda: (home / "sessions").is_dir() and any((home / "sessions").iterdir()))
    sdir = next((home / "sessions").iterdir())
    wait_until(lambda: _records(sdir) >= 6)
    n = _records(sdir)
    wait_until(lambda: marker.exists() and len(marker.read_text().split()) > n)  # mid-step
    os.kill(proc.pid, signal.SIGKILL)
    proc.communicate(timeout=30)
    before = journal(home, sdir.name)
    time.sleep(0.6)  # the orphaned test finishes on its own
    res = tb("resume", sdir.name, "--json", cwd=world.repo, home=home, env=env_for(home, **world.env()), timeout=300)
    assert res.returncode == 0, res.stderr[-3000:]
    out = last_json(res.stdout)
    assert {c: e["culprit"] for c, e in out["cases"].items()} == {c: world.culprit(c) for c in "abcd"}
    after = journal(home, sdir.name)
    assert after[: len(before)] == before
    searched = [r["commit"] for r in after if r["role"] == "search"]
    assert len(searched) == len(set(searched)), "a finished step was run again"
    assert "finished steps replayed from the journal" in res.stderr


def test_ctrl_c_with_two_workers_then_resume(tmp_path: Path) -> None:
    world = make_cases_world(tmp_path, 48, {"a": 5, "b": 30, "c": 41})
    home = tmp_path / "home"
    marker = tmp_path / "tested"
    proc = popen_tb("run", "--repo", str(world.repo), "--good", world.shas[0], "--bad", "main", "--build",
                    world.build, "--test", _slow(world, marker), "--jobs", "2", "--json", cwd=world.repo,
                    home=home, env=env_for(home, **world.env()))
    wait_until(lambda: (home / "sessions").is_dir() and any((home / "sessions").iterdir()))
    sdir = next((home / "sessions").iterdir())
    wait_until(lambda: _records(sdir) >= 5)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    status = tb("status", sdir.name, "--json", cwd=world.repo, home=home)
    assert json.loads(status.stdout)["phases"][0]["status"] == "running"
    res = tb("resume", sdir.name, "--json", cwd=world.repo, home=home, env=env_for(home, **world.env()), timeout=300)
    assert res.returncode == 0, res.stderr[-3000:]
    out = last_json(res.stdout)
    assert {c: e["culprit"] for c, e in out["cases"].items()} == {c: world.culprit(c) for c in "abc"}
    assert out["culprit"] == world.culprit("a")


def test_verify_revert_gives_each_case_the_verdict_of_its_own_culprit(tmp_path: Path) -> None:
    # ln breaks twice (its culprit's revert still fails), softmax shares ln's culprit (fixed by
    # its revert), attn's line is edited again later (its revert conflicts), gemm's revert fixes it
    world = make_cases_world(tmp_path, 40, {"gemm": 10, "softmax": 25, "ln": 25, "attn": 30},
                             second={"ln": 33}, edited={"attn": 35})
    home = tmp_path / "home"
    proc = _run(world, home, "--verify-revert")
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = last_json(proc.stdout)
    cases = out["cases"]
    assert {c: (e["culprit"], e["revert"]) for c, e in cases.items()} == {
        "gemm": (world.culprit("gemm"), "fixes"), "softmax": (world.culprit("softmax"), "fixes"),
        "ln": (world.culprit("ln"), "still-fails"), "attn": (world.culprit("attn"), "conflict"),
    }
    # the case broken twice is bisected again, alone, with its first culprit reverted at every
    # step: its chain holds both culprits, the second one's revert (with the first) fixes it
    second = world.shas[33]
    assert [(c["culprit"], c["revert"]) for c in cases["ln"]["culprits"]] == [
        (world.culprit("ln"), "still-fails"), (second, "fixes")]
    assert [(c["culprit"], c["revert"]) for c in cases["softmax"]["culprits"]] == [(world.culprit("softmax"), "fixes")]
    assert [p["name"] for p in out["phases"]] == ["main", "main-after-1"]
    follow = out["phases"][1]
    assert follow["culprit"] == second and list(follow["cases"]["cases"]) == ["ln"]
    # one revert step per distinct culprit, whatever the number of its cases; a conflict builds nothing
    recs = journal(home, out["session"])
    reverts = [r for r in recs if r["role"] == "revert"]
    assert [r["reverted"] for r in reverts] == [[world.culprit(c)] for c in ("gemm", "softmax", "attn")] + [
        [second, world.culprit("ln")]]
    assert [bool(r["build"]["performed"]) for r in reverts] == [True, True, False, True]
    # every step of the second search tested its commit with the first culprit reverted
    tested = [r for r in recs if r["phase"] == "main-after-1" and r["role"] != "revert" and r.get("tests")]
    assert tested and all(Path(r["dir"], "revert.json").is_file() for r in tested)
    assert out["revert"] == "fixes"  # the top-level culprit's
    assert [(c["culprit"], c["revert"]) for c in out["culprits"]] == [
        (world.culprit("gemm"), "fixes"), (world.culprit("ln"), "still-fails"), (world.culprit("attn"), "conflict"),
        (second, "fixes")]
    assert "looking for the next culprit of ln" in proc.stderr
    # each revert step's line says what the revert did: a conflict, or each case's verdict
    revert_lines = [line for line in proc.stderr.splitlines() if line.strip().startswith("[revert]")]
    assert len(revert_lines) == 4 and " conflict (" in revert_lines[2] and "build_failed" not in revert_lines[2]
    assert "softmax good" in revert_lines[1] and "ln bad" in revert_lines[1] and "ln good" in revert_lines[3]
    md = tb("report", out["session"], cwd=world.repo, home=home).stdout
    assert "| revert |" in md and f"| ln | `{world.culprit('ln')[:12]}` | found | high | " in md
    assert f"revert of {world.culprit('ln')[:12]} at the bad commit: fixes softmax; ln still fails" in md
    assert f"revert of {second[:12]} at the bad commit (with {world.culprit('ln')[:12]} reverted too): fixes ln" in md


def test_repeated_runs_are_combined_per_case(tmp_path: Path) -> None:
    world = make_cases_world(tmp_path, 16, {"a": 4, "b": 11})
    home = tmp_path / "home"
    proc = _run(world, home, "--repeat", "2")
    assert proc.returncode == 0, proc.stderr
    out = last_json(proc.stdout)
    assert {c: e["culprit"] for c, e in out["cases"].items()} == {"a": world.culprit("a"), "b": world.culprit("b")}
    step = next(r for r in journal(home, out["session"]) if r["role"] == "search")
    assert len(step["tests"]) == 2 and all(set(t["cases"]) == {"a", "b"} for t in step["tests"])
    assert all(v["kind"] in ("pass", "mismatch") for v in step["cases"].values())  # both runs agree
