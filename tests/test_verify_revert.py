"""--verify-revert end to end: real git histories, the real `tritonbisect run`, real builds and
tests; the culprit reverted at the bad commit, a revert that conflicts, a case broken twice."""

from __future__ import annotations

from pathlib import Path

import pytest

from engine_repo import BUILD, TEST, C, git, journal, last_json, linear, make_history, snapshot, tb

# two things the test checks: `state` (as everywhere) and `b`, each broken by its own commit
BUILD2 = "if [ -e BROKEN ]; then echo 'error: does not build' >&2; exit 1; fi; mkdir -p out; cp state b out/"
TEST2 = "grep -q ok out/state && grep -q ok out/b"


def _run(repo: Path, home: Path, good: str, *extra: str, build: str = BUILD, test: str = TEST):
    return tb(
        "run", "--repo", str(repo), "--good", good, "--bad", "main", "--build", build, "--test", test,
        "--json", *extra, cwd=repo, home=home, timeout=120,
    )


def _reverts(recs: list[dict]) -> list[dict]:
    return [r for r in recs if r["role"] == "revert"]


def test_the_revert_of_the_culprit_fixes_the_bad_commit(tmp_path: Path) -> None:
    repo, home = tmp_path / "repo", tmp_path / "home"
    # an unbuildable cluster before the culprit: skipped by the search, not by the revert
    shas = linear(repo, 20, culprit=9, broken=range(3, 6))
    before = snapshot(repo)
    proc = _run(repo, home, shas[0], "--verify-revert", "--artifact", "out")
    assert proc.returncode == 0, proc.stderr
    out = last_json(proc.stdout)
    assert out["culprit"] == shas[9]
    assert out["revert"] == "fixes"
    assert [c["culprit"] for c in out["culprits"]] == [shas[9]]
    assert out["culprits"][0]["revert"] == "fixes"
    recs = journal(home, out["session"])
    (rec,) = _reverts(recs)
    assert rec["commit"] == shas[-1] and rec["reverted"] == [shas[9]]
    assert rec["verdict"] == "good" and rec["kind"] == "pass"
    # the reverted tree is a commit of its own on top of the bad commit, built as its own artifact
    reverted = rec["revert_tree"]["commit"]
    assert reverted not in shas
    assert git(repo, "rev-parse", f"{reverted}^").strip() == shas[-1]
    assert git(repo, "show", f"{reverted}:state") == "ok\n"
    assert rec["build"]["performed"] and not rec["build"]["cached"]  # not the bad commit's artifact
    assert out["builds"] == sum(1 for r in recs if r["build"]["performed"])
    assert "revert of" in proc.stderr and "fixes the test" in proc.stderr
    # the user's checkout: no ref, no checkout, nothing written
    assert snapshot(repo) == before
    md = tb("report", out["session"], "--format", "md", cwd=repo, home=home)
    assert md.returncode == 0, md.stderr
    assert f"revert of {shas[9][:12]} at the bad commit: fixes the test" in md.stdout
    # a second session reuses the reverted tree's cached artifact: the same revert is the same sha
    again = _run(repo, home, shas[0], "--verify-revert", "--artifact", "out")
    assert again.returncode == 0, again.stderr
    (rec2,) = _reverts(journal(home, last_json(again.stdout)["session"]))
    assert rec2["revert_tree"]["commit"] == reverted
    assert rec2["build"]["cached"] is True


def test_without_the_option_nothing_is_reverted(tmp_path: Path) -> None:
    repo, home = tmp_path / "repo", tmp_path / "home"
    shas = linear(repo, 8, culprit=4)
    proc = _run(repo, home, shas[0])
    assert proc.returncode == 0, proc.stderr
    out = last_json(proc.stdout)
    assert "revert" not in out and "culprits" not in out
    assert not _reverts(journal(home, out["session"]))


def test_a_revert_that_conflicts_at_the_bad_commit(tmp_path: Path) -> None:
    repo, home = tmp_path / "repo", tmp_path / "home"
    commits = [C(f"c{i}", (f"c{i - 1}",) if i else (), bad=i >= 5) for i in range(12)]
    for i in range(8, 12):  # a later commit edits the lines the culprit changed
        commits[i].files["state"] = "bad, and more\n"
    shas = make_history(repo, commits)
    proc = _run(repo, home, shas["c0"], "--verify-revert")
    assert proc.returncode == 0, proc.stderr
    out = last_json(proc.stdout)
    assert out["culprit"] == shas["c5"]
    assert out["revert"] == "conflict"
    assert out["revert_files"] == ["state"]
    assert out["culprits"][0]["files"] == ["state"]
    assert len(out["phases"]) == 1  # no second search after a conflict
    (rec,) = _reverts(journal(home, out["session"]))
    assert rec["kind"] == "build_failed" and rec["revert_tree"]["conflict"] == ["state"]
    assert rec["tests"] == []  # nothing was built or tested
    assert not rec["build"]["performed"]
    assert "conflict in state" in proc.stderr


def test_a_case_broken_twice_gives_two_culprits(tmp_path: Path) -> None:
    repo, home = tmp_path / "repo", tmp_path / "home"
    commits = []
    for i in range(16):
        c = C(f"c{i}", (f"c{i - 1}",) if i else (), bad=i >= 5, broken=i in (11, 12))
        c.files["b"] = "bad\n" if i >= 9 else "ok\n"
        commits.append(c)
    # at c7 the culprit's revert does not apply (it edits the same line): skipped in the
    # second search, as an unbuildable commit is
    commits[7].files["state"] = "bad too\n"
    shas = make_history(repo, commits)
    proc = _run(repo, home, shas["c0"], "--verify-revert", build=BUILD2, test=TEST2)
    assert proc.returncode == 0, proc.stderr
    out = last_json(proc.stdout)
    assert out["culprit"] == shas["c5"]  # the top-level answer stays the first culprit
    assert out["phase"] == "main"
    assert out["revert"] == "still-fails"
    assert [(c["culprit"], c["revert"]) for c in out["culprits"]] == [
        (shas["c5"], "still-fails"), (shas["c9"], "fixes"),
    ]
    assert out["culprits"][1]["reverted"] == [shas["c9"], shas["c5"]]
    names = [p["name"] for p in out["phases"]]
    assert names == ["main", "main-after-1"]
    second = out["phases"][1]
    assert second["culprit"] == shas["c9"] and second["status"] == "found"
    recs = journal(home, out["session"])
    steps = [r for r in recs if r["phase"] == "main-after-1"]
    by_commit = {r["commit"]: r for r in steps if r["role"] != "revert"}
    if shas["c7"] in by_commit:
        assert by_commit[shas["c7"]]["verdict"] == "skip"
        assert "does not apply" in by_commit[shas["c7"]]["reason"]
    # every step of the second search tested its commit with the first culprit reverted
    tested = [r for r in steps if r["role"] != "revert" and r.get("tests")]
    assert tested and all(Path(r["dir"], "revert.json").is_file() for r in tested)
    assert len(_reverts(recs)) == 2
    summary = tb("report", out["session"], "--format", "md", cwd=repo, home=home).stdout
    assert summary.startswith(f"## Bisected: `{shas['c5'][:12]}`")  # the first culprit is the answer
    assert "still fails (another commit broke it too)" in summary
    assert f"`{shas['c9'][:12]}`; revert of {shas['c9'][:12]}" in summary


def test_the_conflicting_step_of_the_second_search_is_skipped(tmp_path: Path) -> None:
    """The second search over (culprit, bad] where the culprit's revert does not apply at the
    commit it must test first."""
    repo, home = tmp_path / "repo", tmp_path / "home"
    commits = []
    for i in range(8):
        c = C(f"c{i}", (f"c{i - 1}",) if i else (), bad=i >= 2)
        c.files["b"] = "bad\n" if i >= 6 else "ok\n"
        commits.append(c)
    for i in (3, 4):
        commits[i].files["state"] = "bad too\n"
    shas = make_history(repo, commits)
    proc = _run(repo, home, shas["c0"], "--verify-revert", build=BUILD2, test=TEST2)
    assert proc.returncode == 0, proc.stderr
    out = last_json(proc.stdout)
    assert [(c["culprit"], c["revert"]) for c in out["culprits"]] == [
        (shas["c2"], "still-fails"), (shas["c6"], "fixes"),
    ]
    recs = [r for r in journal(home, out["session"]) if r["phase"] == "main-after-1"]
    skipped = [r for r in recs if r["verdict"] == "skip"]
    assert skipped and all("does not apply" in r["reason"] for r in skipped)
    assert {r["commit"] for r in skipped} <= {shas["c3"], shas["c4"]}


def test_a_merge_culprit_is_reverted_against_its_first_parent(tmp_path: Path) -> None:
    repo, home = tmp_path / "repo", tmp_path / "home"
    commits = [C("m0"), C("m1", ("m0",)), C("s1", ("m1",)), C("s2", ("s1",), bad=True)]
    commits += [C("m2", ("m1",)), C("merge", ("m2", "s2"), bad=True), C("m3", ("merge",), bad=True)]
    shas = make_history(repo, commits)
    proc = _run(repo, home, shas["m0"], "--first-parent", "--verify-revert")
    assert proc.returncode == 0, proc.stderr
    out = last_json(proc.stdout)
    assert out["culprit"] == shas["merge"]
    assert out["revert"] == "fixes"


def test_verify_revert_bad_inputs_are_one_line(tmp_path: Path) -> None:
    repo, home = tmp_path / "repo", tmp_path / "home"
    shas = linear(repo, 6, culprit=3)
    proc = tb("run", "--repo", str(repo), "--good", "main", "--bad", shas[0], "--test", TEST,
              "--regress", "fixed", "--verify-revert", cwd=repo, home=home)
    assert proc.returncode == 2
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and "--verify-revert" in lines[0] and "Traceback" not in proc.stderr


def test_resume_after_an_interrupted_revert_check_runs_it_once(tmp_path: Path) -> None:
    import signal
    import time

    from engine_repo import popen_tb

    repo, home = tmp_path / "repo", tmp_path / "home"
    shas = linear(repo, 10, culprit=6)
    mark = tmp_path / "reverted-tree-tested"
    # the first test of a reverted tree (committed by tritonbisect) hangs until interrupted
    test = (f'if [ "$(git log -1 --format=%an)" = tritonbisect ] && [ ! -e {mark} ]; then '
            f"touch {mark}; sleep 60; fi; {TEST}")
    proc = popen_tb("run", "--repo", str(repo), "--good", shas[0], "--bad", "main", "--build", BUILD,
                    "--test", test, "--verify-revert", "--json", cwd=repo, home=home)
    deadline = time.monotonic() + 60
    while not mark.exists() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert mark.exists(), proc.stderr.read() if proc.poll() is not None else "the revert check never ran"
    proc.send_signal(signal.SIGTERM)
    _out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    sid = next(p.name for p in (home / "sessions").iterdir())
    assert not _reverts(journal(home, sid))
    resumed = tb("resume", sid, "--json", cwd=repo, home=home, timeout=120)
    assert resumed.returncode == 0, resumed.stderr
    out = last_json(resumed.stdout)
    assert out["culprit"] == shas[6] and out["revert"] == "fixes"
    recs = journal(home, sid)
    assert len(_reverts(recs)) == 1
    # the search and its confirmation were replayed, not run again
    assert sum(1 for r in recs if r["role"] == "confirm") == 2


def test_hunt_verifies_by_revert_by_default(tmp_path: Path, capsys, monkeypatch) -> None:
    import json

    from bisectors_world import run_cli
    from test_hunt import add_commits, history, hunt_args

    monkeypatch.delenv("GITHUB_OUTPUT", raising=False)
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    repo, home = tmp_path / "repo", tmp_path / "home"
    history(repo, 3)
    assert run_cli(hunt_args(repo, home), capsys)[0] == 0  # green
    new = add_commits(repo, 6, bad_from=2)
    code, out, _err = run_cli(hunt_args(repo, home), capsys)
    assert code == 5, out
    res = json.loads([line for line in out.splitlines() if line.startswith("{")][-1])
    assert res["culprit"] == new[2]
    sid = next(p.name for p in (home / "sessions").iterdir())
    (rec,) = _reverts(journal(home, sid))
    # every commit of this history rewrites the file `n`: the culprit's revert cannot apply
    assert rec["revert_tree"]["conflict"] == ["n"]
    issue = (home / "out" / "issue.md").read_text()
    assert f"revert of {new[2][:12]} at the bad commit: conflict in n" in issue
    # --no-verify-revert: not checked
    repo2, home2 = tmp_path / "repo2", tmp_path / "home2"
    history(repo2, 3)
    assert run_cli(hunt_args(repo2, home2, "--no-verify-revert"), capsys)[0] == 0
    add_commits(repo2, 6, bad_from=2)
    assert run_cli(hunt_args(repo2, home2, "--no-verify-revert"), capsys)[0] == 5
    sid2 = next(p.name for p in (home2 / "sessions").iterdir())
    assert not _reverts(journal(home2, sid2))


def _twice(repo: Path, n: int = 16) -> dict[str, str]:
    """A case broken twice: `state` at c5, `b` at c9."""
    commits = []
    for i in range(n):
        c = C(f"c{i}", (f"c{i - 1}",) if i else (), bad=i >= 5)
        c.files["b"] = "bad\n" if i >= 9 else "ok\n"
        commits.append(c)
    return make_history(repo, commits)


def test_resume_in_the_middle_of_the_second_search(tmp_path: Path) -> None:
    import signal
    import time

    from engine_repo import popen_tb

    repo, home = tmp_path / "repo", tmp_path / "home"
    shas = _twice(repo)
    mark = tmp_path / "second-search-started"
    # the first test of the second search's bad endpoint (a reverted tree with an endpoint
    # role, in a step folder of the phase main-after-1) hangs until interrupted
    test = (f'case "$TRITONBISECT_RESULT" in *main-after-1-endpoint*) if [ ! -e {mark} ]; then '
            f"touch {mark}; sleep 60; fi;; esac; {TEST2}")
    proc = popen_tb("run", "--repo", str(repo), "--good", shas["c0"], "--bad", "main", "--build", BUILD2,
                    "--test", test, "--verify-revert", "--json", cwd=repo, home=home)
    deadline = time.monotonic() + 90
    while not mark.exists() and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.1)
    assert mark.exists(), proc.communicate()[1][-3000:]
    proc.send_signal(signal.SIGTERM)
    _out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    sid = next(p.name for p in (home / "sessions").iterdir())
    done = journal(home, sid)
    resumed = tb("resume", sid, "--json", cwd=repo, home=home, timeout=120)
    assert resumed.returncode == 0, resumed.stderr
    out = last_json(resumed.stdout)
    assert out["culprit"] == shas["c5"]
    assert [(c["culprit"], c["revert"]) for c in out["culprits"]] == [
        (shas["c5"], "still-fails"), (shas["c9"], "fixes"),
    ]
    recs = journal(home, sid)
    assert recs[: len(done)] == done  # nothing journaled is changed or run again
    assert len(_reverts(recs)) == 2
    assert [p["name"] for p in out["phases"]] == ["main", "main-after-1"]


@pytest.mark.slow
def test_verify_revert_on_ray(tmp_path: Path) -> None:
    """A Ray worker rebuilds the step's recipe from the spec it is given: the revert's."""
    repo, home = tmp_path / "repo", tmp_path / "home"
    shas = linear(repo, 10, culprit=6)
    proc = tb("run", "--repo", str(repo), "--good", shas[0], "--bad", "main", "--build", BUILD,
              "--test", TEST, "--verify-revert", "--executor", "ray", "--ray-address", "local", "--json",
              cwd=repo, home=home, timeout=280)
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = last_json(proc.stdout)
    assert out["culprit"] == shas[6] and out["revert"] == "fixes"
