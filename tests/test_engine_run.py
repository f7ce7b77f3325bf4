"""`tritonbisect run` end to end: real git repositories, real subprocesses, real exit codes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from engine_repo import (
    BUILD,
    CRASH_TEST,
    TEST,
    C,
    journal,
    last_json,
    linear,
    make_history,
    snapshot,
    tb,
)


def _run(repo: Path, home: Path, good: str, bad: str, *extra: str, test: str = TEST, build: str = BUILD):
    return tb(
        "run", "--repo", str(repo), "--good", good, "--bad", bad, "--build", build, "--test", test,
        "--json", *extra, cwd=repo, home=home,
    )


def test_linear_history_finds_culprit_and_leaves_checkout_untouched(tmp_path: Path) -> None:
    repo, home = tmp_path / "repo", tmp_path / "home"
    shas = linear(repo, 40, culprit=23)
    (repo / "untracked.txt").write_text("mine\n")
    before = snapshot(repo)
    proc = _run(repo, home, shas[0], "main")
    assert proc.returncode == 0, proc.stderr
    out = last_json(proc.stdout)
    assert out["status"] == "found"
    assert out["culprit"] == shas[23]
    assert out["confidence"] == "high"
    recs = journal(home, out["session"])
    search = [r for r in recs if r["role"] == "search"]
    # at most ceil(log2(39)) = 6 search steps; 2 endpoints and 2 confirmations; one test each
    assert len(search) <= 6
    assert out["tests"] == len(recs) == len(search) + 4
    # the confirmation tests the builds the worker's checkouts kept: nothing is built again
    assert out["builds"] == out["tests"] - 2
    assert all(r["build"]["kept"] for r in recs[-2:])
    assert out["rounds"] == len(search)
    assert snapshot(repo) == before
    assert "refs/bisect" not in before[1] and "refs/bisect" not in snapshot(repo)[1]
    # the worker's worktree lives in the workdir, not in the user's checkout
    assert (home / "worktrees").is_dir()
    assert [r["role"] for r in recs[:2]] == ["endpoint", "endpoint"]
    assert [r["role"] for r in recs[-2:]] == ["confirm", "confirm"]
    assert all(Path(r["tests"][0]["log"]).is_file() for r in recs)


def test_merge_history_culprit_on_a_side_branch(tmp_path: Path) -> None:
    repo, home = tmp_path / "repo", tmp_path / "home"
    commits = [C("m0")]
    commits += [C(f"m{i}", (f"m{i - 1}",)) for i in range(1, 6)]
    commits += [C("s1", ("m2",)), C("s2", ("s1",)), C("s3", ("s2",), bad=True), C("s4", ("s3",), bad=True)]
    commits += [C("merge", ("m5", "s4"), bad=True)]
    commits += [C(f"n{i}", ("merge" if i == 0 else f"n{i - 1}",), bad=True) for i in range(4)]
    shas = make_history(repo, commits)
    proc = _run(repo, home, shas["m0"], "main")
    assert proc.returncode == 0, proc.stderr
    out = last_json(proc.stdout)
    assert out["culprit"] == shas["s3"]
    assert out["confidence"] == "high"


def test_build_failure_cluster_is_skipped(tmp_path: Path) -> None:
    repo, home = tmp_path / "repo", tmp_path / "home"
    shas = linear(repo, 48, culprit=30, broken=range(18, 27))
    proc = _run(repo, home, shas[0], "main", test=CRASH_TEST)
    assert proc.returncode == 0, proc.stderr
    out = last_json(proc.stdout)
    assert out["culprit"] == shas[30]
    recs = journal(home, out["session"])
    kinds = {r["commit"]: r["kind"] for r in recs}
    assert kinds[shas[30]] == "crash"  # a segfaulting test is a crash, not an exit code
    assert kinds[shas[0]] == "pass"
    skipped = [r for r in recs if r["kind"] == "build_failed"]
    assert all(r["verdict"] == "skip" for r in skipped)
    assert out["builds"] == len(recs) - 2  # the confirmation's builds were kept


def test_culprit_hidden_in_unbuildable_cluster_is_inconclusive(tmp_path: Path) -> None:
    repo, home = tmp_path / "repo", tmp_path / "home"
    shas = linear(repo, 24, culprit=12, broken=range(10, 15))
    proc = _run(repo, home, shas[0], "main")
    assert proc.returncode == 1, proc.stderr
    out = last_json(proc.stdout)
    assert out["status"] == "inconclusive"
    assert out["culprit"] is None
    assert shas[12] in out["candidates"]
    assert set(out["candidates"]) <= set(shas[10:16])


def test_two_workers(tmp_path: Path) -> None:
    repo, home = tmp_path / "repo", tmp_path / "home"
    shas = linear(repo, 60, culprit=41)
    before = snapshot(repo)
    proc = _run(repo, home, shas[0], "main", "--jobs", "2")
    assert proc.returncode == 0, proc.stderr
    out = last_json(proc.stdout)
    assert out["culprit"] == shas[41]
    recs = journal(home, out["session"])
    # two workers; the builds of the first bad and last good commits stay in their worktrees
    # for the confirmation, so other steps may take up to two more, and a step stopped early
    # (its commit no longer needed) leaves its worktree to the next one: one more on a slow machine
    workers = {r["worker"] for r in recs}
    assert len(workers) >= 2 and workers <= {0, 1, 2, 3, 4}
    assert len({r["worker"] for r in recs if r["role"] == "endpoint"}) == 2
    assert len({r["dir"] for r in recs}) == len(recs)
    assert out["rounds"] <= 5  # ceil(log3(60)) + 1
    assert snapshot(repo) == before


def test_repeat_with_a_flaky_test(tmp_path: Path) -> None:
    repo, home = tmp_path / "repo", tmp_path / "home"
    shas = linear(repo, 20, culprit=13)
    counter = tmp_path / "counter"
    counter.write_text("0")
    # on good commits every third run fails; bad commits always fail
    flaky = (
        f"n=$(($(cat {counter}) + 1)); echo $n > {counter}; "
        "grep -q bad out/state && exit 1; [ $((n % 3)) -ne 0 ]"
    )
    proc = _run(repo, home, shas[0], "main", "--repeat", "3", test=flaky)
    assert proc.returncode == 0, proc.stderr
    out = last_json(proc.stdout)
    assert out["culprit"] == shas[13]
    recs = journal(home, out["session"])
    flaky_recs = [r for r in recs if r["kind"] == "flaky"]
    assert flaky_recs, "disagreeing runs must be recorded as flaky"
    for r in flaky_recs:
        assert r["verdict"] == "good"
        assert sorted(t["kind"] for t in r["tests"]) == ["fail", "pass", "pass"]
    assert out["tests"] == 3 * len(recs)


def test_invalid_endpoints_exit_3_with_both_logs(tmp_path: Path) -> None:
    repo, home = tmp_path / "repo", tmp_path / "home"
    shas = linear(repo, 10, culprit=5)
    proc = _run(repo, home, shas[0], "main", test="echo probe-output-$(cat out/state); exit 1")
    assert proc.returncode == 3, proc.stderr
    out = last_json(proc.stdout)
    assert out["status"] == "invalid-endpoints"
    assert "probe-output-ok" in proc.stderr  # the good endpoint's log tail
    assert "probe-output-bad" in proc.stderr  # the bad endpoint's log tail
    assert out["tests"] == 3  # the good endpoint failed: run once more before giving up
    assert "never passed (2 bad)" in out["reason"]


def test_timeout_kills_the_process_group(tmp_path: Path) -> None:
    repo, home = tmp_path / "repo", tmp_path / "home"
    shas = linear(repo, 6, culprit=3)
    pidfile = tmp_path / "child.pid"
    # bad commits hang, with a grandchild that would outlive a plain kill of the shell
    test = f"grep -q ok out/state && exit 0; (sleep 300 & echo $! > {pidfile}; wait); sleep 300"
    proc = _run(repo, home, shas[0], "main", "--timeout", "1", test=test)
    assert proc.returncode == 0, proc.stderr
    out = last_json(proc.stdout)
    assert out["culprit"] == shas[3]
    recs = journal(home, out["session"])
    assert {r["kind"] for r in recs if r["verdict"] == "bad"} == {"timeout"}
    pid = int(pidfile.read_text())
    assert not Path(f"/proc/{pid}").exists() or "Z" in Path(f"/proc/{pid}/stat").read_text().split()[2]


def test_report_markdown_and_json(tmp_path: Path) -> None:
    repo, home = tmp_path / "repo", tmp_path / "home"
    shas = linear(repo, 12, culprit=7)
    proc = _run(repo, home, shas[0], "main")
    assert proc.returncode == 0, proc.stderr
    sid = last_json(proc.stdout)["session"]
    md = tb("report", sid, "--format", "md", cwd=repo, home=home)
    assert md.returncode == 0, md.stderr
    assert shas[7] in md.stdout
    assert "c7: change 7" in md.stdout  # the culprit's subject
    assert "Test Dev <dev@example.com>" in md.stdout
    assert "| # | role | commit |" in md.stdout
    assert "**Confidence:** high" in md.stdout
    assert "tritonbisect run --repo" in md.stdout  # the command that reproduces the run
    js = tb("report", "--format", "json", cwd=repo, home=home)  # latest session
    data = json.loads(js.stdout)
    assert data["culprit"] == shas[7]
    assert data["phases"][0]["culprit_info"]["subject"] == "c7: change 7"
    assert len(data["phases"][0]["steps"]) == len(journal(home, sid))
    for step in data["phases"][0]["steps"]:  # every step's subject, from one batched git call
        assert step["subject"].startswith(f"c{shas.index(step['commit'])}: ")
    status = tb("status", cwd=repo, home=home)
    assert status.returncode == 0 and "found" in status.stdout


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["--good", "c0", "--bad", "nope"], "unknown revision"),
        (["--good", "HEAD", "--bad", "HEAD"], ""),
        (["--good", "main", "--bad", "HEAD~3"], "--regress fixed"),
        (["--good", "HEAD~3", "--bad", "main", "--test", "./no_such_test.sh"], "no_such_test.sh"),
        (["--good", "HEAD~3", "--bad", "main", "--test", "true", "--repro", "x.ndjson"], "mutually exclusive"),
        (["--good", "HEAD~3", "--bad", "main", "--test", "true", "--env", "NOEQUALS"], "KEY=VALUE"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(tmp_path: Path, args: list[str], needle: str) -> None:
    repo, home = tmp_path / "repo", tmp_path / "home"
    linear(repo, 6, culprit=3)
    if "--test" not in args:
        args = [*args, "--test", "true"]
    proc = tb("run", *args, cwd=repo, home=home)
    assert proc.returncode == 2, (proc.stdout, proc.stderr)
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, proc.stderr
    assert needle in lines[0]
    assert not (home / "sessions").exists() or not any((home / "sessions").iterdir())


def test_not_a_git_repository(tmp_path: Path) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    proc = tb("run", "--repo", str(plain), "--good", "a", "--bad", "b", "--test", "true", cwd=plain, home=tmp_path / "h")
    assert proc.returncode == 2
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and "not a git repository" in lines[0]


def test_test_script_on_disk_only_gets_its_absolute_path(tmp_path: Path) -> None:
    repo, home = tmp_path / "repo", tmp_path / "home"
    shas = linear(repo, 8, culprit=5)
    script = repo / "my_test.sh"  # untracked in the user's checkout: not in the worktrees
    script.write_text("#!/bin/sh\ngrep -q ok out/state\n")
    script.chmod(0o755)
    proc = _run(repo, home, shas[0], "main", test="./my_test.sh")
    assert proc.returncode == 0, proc.stderr
    assert last_json(proc.stdout)["culprit"] == shas[5]


def test_corrupt_session_files_exit_2(tmp_path: Path) -> None:
    repo, home = tmp_path / "repo", tmp_path / "home"
    shas = linear(repo, 8, culprit=4)
    proc = _run(repo, home, shas[0], "main")
    sid = last_json(proc.stdout)["session"]
    jpath = home / "sessions" / sid / "journal.jsonl"
    lines = jpath.read_text().splitlines()
    lines[1] = lines[1][: len(lines[1]) // 2]
    jpath.write_text("\n".join(lines) + "\n")
    for cmd in (["resume", sid], ["report", sid]):
        res = tb(*cmd, cwd=repo, home=home)
        assert res.returncode == 2, res.stderr
        err = [line for line in res.stderr.splitlines() if line.strip()]
        assert len(err) == 1 and "line 2" in err[0]
    (home / "sessions" / sid / "session.json").write_text("{not json")
    res = tb("status", sid, cwd=repo, home=home)
    assert res.returncode == 2
    assert "corrupt" in res.stderr and len(res.stderr.strip().splitlines()) == 1


def test_first_parent_blames_the_merge(tmp_path: Path) -> None:
    repo, home = tmp_path / "repo", tmp_path / "home"
    commits = [C("m0"), C("m1", ("m0",)), C("s1", ("m1",)), C("s2", ("s1",), bad=True)]
    commits += [C("m2", ("m1",)), C("merge", ("m2", "s2"), bad=True), C("m3", ("merge",), bad=True)]
    shas = make_history(repo, commits)
    proc = _run(repo, home, shas["m0"], "main", "--first-parent")
    assert proc.returncode == 0, proc.stderr
    assert last_json(proc.stdout)["culprit"] == shas["merge"]


def _first_run_fails(tmp_path: Path, shas: list[str]) -> str:
    """A test under which every good commit but the endpoint fails the first time."""
    marks = tmp_path / "marks"
    marks.mkdir()
    return (
        f'grep -q bad out/state && exit 1; [ "$TRITONBISECT_COMMIT" = {shas[0]} ] && exit 0; '
        f"m={marks}/$TRITONBISECT_COMMIT; [ -e $m ] && exit 0; touch $m; exit 1"
    )


def test_confirmation_that_disagrees_gives_low_confidence_with_flaky_off(tmp_path: Path) -> None:
    repo, home = tmp_path / "repo", tmp_path / "home"
    shas = linear(repo, 16, culprit=12)
    proc = _run(repo, home, shas[0], "main", "--flaky", "off", test=_first_run_fails(tmp_path, shas))
    assert proc.returncode == 6, proc.stderr  # not 0: a script must tell it from a confirmed one
    out = last_json(proc.stdout)
    assert out["status"] == "found"
    assert out["outcome"] == "found-low-confidence" and out["exit_code"] == 6
    assert out["culprit"] != shas[12]
    assert out["confidence"] == "low"
    assert "confirmation disagrees" in out["reason"]
    status = json.loads(tb("status", out["session"], "--json", cwd=repo, home=home).stdout)
    assert status["outcome"] == "found-low-confidence" and status["exit_code"] == 6


def test_confirmation_that_disagrees_switches_to_the_flake_aware_search(tmp_path: Path) -> None:
    repo, home = tmp_path / "repo", tmp_path / "home"
    shas = linear(repo, 16, culprit=12)
    proc = _run(repo, home, shas[0], "main", test=_first_run_fails(tmp_path, shas))
    assert proc.returncode == 0, proc.stderr
    assert "switching to the flake-aware search" in proc.stderr
    out = last_json(proc.stdout)
    assert out["culprit"] == shas[12] and out["confidence"] == "high"
    post = out["posterior"]
    assert post["search"] == "flake-aware" and post["probability"] >= 0.95
    assert post["threshold"] == 0.95  # --flaky detect keeps the general default
    assert post["top"][0] == {"commit": shas[12], "probability": post["probability"]}
    assert post["p"] > 0.1  # the first-run failures were noticed as false failures


def test_contradicting_verdicts_are_retested_with_flaky_off(tmp_path: Path) -> None:
    repo, home = tmp_path / "repo", tmp_path / "home"
    shas = linear(repo, 31, culprit=25)
    out = last_json(_run(repo, home, shas[0], "main", "--flaky", "off").stdout)
    sdir = home / "sessions" / out["session"]
    # a journal where a flaky test said c10 bad but its descendant c20 good
    recs = journal(home, out["session"])[:2]
    for seq, (index, verdict) in enumerate([(10, "bad"), (20, "good")], start=3):
        recs.append({**recs[0], "seq": seq, "role": "search", "round": 1,
                     "commit": shas[index], "verdict": verdict})
    (sdir / "journal.jsonl").write_text("".join(json.dumps(r) + "\n" for r in recs))
    state = json.loads((sdir / "session.json").read_text())
    state["phases"][0].update(status="running", culprit=None, candidates=[], confidence=None)
    (sdir / "session.json").write_text(json.dumps(state))
    res = tb("resume", out["session"], "--json", cwd=repo, home=home)
    # right, but after a contradiction below the confidence asked for: its own exit code
    assert res.returncode == 6, res.stderr
    assert "contradict" in res.stderr
    assert last_json(res.stdout)["culprit"] == shas[25]
    searched = [r["commit"] for r in journal(home, out["session"]) if r["role"] == "search"]
    assert searched.count(shas[10]) == 2  # re-tested: good this time


def test_infrastructure_failure_is_retried_then_aborts_and_resume_continues(tmp_path: Path) -> None:
    repo, home = tmp_path / "repo", tmp_path / "home"
    shas = linear(repo, 10, culprit=6)
    flag = tmp_path / "disk-full"
    flag.write_text("")
    build = f"if [ -e {flag} ]; then echo 'OSError: No space left on device' >&2; exit 1; fi; {BUILD}"
    proc = _run(repo, home, shas[0], "main", build=build)
    assert proc.returncode == 4, proc.stderr
    out = last_json(proc.stdout)
    assert out["status"] == "aborted"
    assert "No space left on device" in out["reason"]
    rec = journal(home, out["session"])[0]
    assert rec["kind"] == "infra" and rec["verdict"] == "abort"
    assert len(rec["attempts"]) == 1  # retried once
    flag.unlink()
    res = tb("resume", out["session"], "--json", cwd=repo, home=home)
    assert res.returncode == 0, res.stderr
    assert last_json(res.stdout)["culprit"] == shas[6]


def test_regress_fixed_finds_the_fixing_commit(tmp_path: Path) -> None:
    repo, home = tmp_path / "repo", tmp_path / "home"
    shas = linear(repo, 12, culprit=6)
    # the test fails on old commits and passes from commit 6 on: which commit fixed it?
    proc = _run(repo, home, shas[0], "main", "--regress", "fixed", test="grep -q bad out/state")
    assert proc.returncode == 0, proc.stderr
    out = last_json(proc.stdout)
    assert out["culprit"] == shas[6] and out["confidence"] == "high"
    assert "BAD" not in proc.stderr  # a passing step is the fixed state, not "BAD pass"
    assert f"[search] {shas[6][:12]} FIXED   pass" in proc.stderr
    assert "the good commit must fail, the bad (fixed) one must pass" in proc.stderr
    plain = tb("run", "--repo", str(repo), "--good", shas[0], "--bad", "main", "--build", BUILD, "--test",
               "grep -q bad out/state", "--regress", "fixed", cwd=repo, home=tmp_path / "home2")
    assert plain.stdout.startswith(f"fixed by: {shas[6]}"), plain.stdout


def test_four_workers_stop_steps_that_no_longer_matter(tmp_path: Path) -> None:
    repo, home = tmp_path / "repo", tmp_path / "home"
    shas = linear(repo, 125, culprit=31)
    # commits 60.. hang: once a commit below them is bad, they no longer matter
    late = " ".join(shas[60:124])
    slow = f'case " {late} " in *" $TRITONBISECT_COMMIT "*) sleep 30;; esac; {TEST}'
    proc = _run(repo, home, shas[0], "main", "--jobs", "4", test=slow)
    assert proc.returncode == 0, proc.stderr
    out = last_json(proc.stdout)
    assert out["culprit"] == shas[31]
    assert out["rounds"] <= 5
    assert "stopped testing" in proc.stderr
