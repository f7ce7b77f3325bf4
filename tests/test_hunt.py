"""`tritonbisect hunt` night after night on a real repository that grows between nights:
green, green with new commits, a regression (bisected, exit 5, issue body), the same again
(known: one test), fixed, a failure that does not confirm, an untestable head, a perf
regression with noise, an environment change, and kill -9 mid-bisect then the next night.
"""

from __future__ import annotations

import json
import os
import re
import signal
import time
from pathlib import Path

import pytest

from bisectors_world import error_line, run_cli
from engine_repo import BUILD, env_for, git, popen_tb, tb
from waiting import wait_until

TEST = "grep -q ok out/state"


@pytest.fixture(autouse=True)
def _not_in_github(monkeypatch):
    """Tests that run inside GitHub Actions must not write to the real step's outputs."""
    monkeypatch.delenv("GITHUB_OUTPUT", raising=False)
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)


# --- a repository that grows night after night -------------------------------------------------


def history(repo: Path, n: int, **files: str) -> list[str]:
    """A new repository with `n` good commits; their shas, oldest first."""
    repo.mkdir(parents=True, exist_ok=True)
    git(repo, "init", "-q")
    git(repo, "symbolic-ref", "HEAD", "refs/heads/main")
    (repo / ".gitignore").write_text("out/\n")
    return add_commits(repo, n, bad_from=None, **files)


def add_commits(repo: Path, n: int, *, bad_from: int | None, broken: tuple[int, ...] = (),
                **files: str) -> list[str]:
    """Append `n` commits; from the `bad_from`-th on (0-based, None: never) the state is bad;
    commits in `broken` do not build. `files` (name -> text, or name -> "a|b" for the text
    before and from bad_from) are written at every commit."""
    shas = []
    start = int(git(repo, "rev-list", "--count", "HEAD", check=False).strip() or 0)
    for i in range(n):
        bad = bad_from is not None and i >= bad_from
        (repo / "state").write_text("bad\n" if bad else "ok\n")
        (repo / "n").write_text(f"{start + i}\n")
        for name, text in files.items():
            before, _, after = text.partition("|")
            (repo / name).write_text((after if bad and after else before) + "\n")
        if i in broken:
            (repo / "BROKEN").write_text("x\n")
        elif (repo / "BROKEN").exists():
            (repo / "BROKEN").unlink()
        git(repo, "add", "-A")
        git(repo, "commit", "-q", "-m", f"c{start + i}{' (regression)' if bad_from == i else ''}")
        shas.append(git(repo, "rev-parse", "HEAD").strip())
    return shas


def hunt_args(repo: Path, home: Path, *extra: str, test: str = TEST) -> list[str]:
    return [
        "hunt", "--state", str(home / "state.json"), "--workdir", str(home), "--repo", str(repo),
        "--build", BUILD, "--test", test, "--issue-body", str(home / "out" / "issue.md"),
        "--summary", str(home / "out" / "summary.md"), "--json", *extra,
    ]


def night(capsys, repo: Path, home: Path, *extra: str, test: str = TEST) -> tuple[int, dict, str]:
    code, out, err = run_cli(hunt_args(repo, home, *extra, test=test), capsys)
    lines = [line for line in out.splitlines() if line.startswith("{")]
    assert lines, f"no JSON (exit {code}):\n{out}\n{err[-3000:]}"
    return code, json.loads(lines[-1]), err


def state(home: Path) -> dict:
    return json.loads((home / "state.json").read_text())


def sessions(home: Path) -> list[str]:
    root = home / "sessions"
    return sorted(p.name for p in root.iterdir()) if root.is_dir() else []


# --- the nights ------------------------------------------------------------------------------


def test_a_sequence_of_nights(tmp_path: Path, capsys) -> None:
    repo, home = tmp_path / "repo", tmp_path / "home"
    shas = history(repo, 5)
    issue = home / "out" / "issue.md"

    # 1. green: the head becomes the last good; one test, no session
    code, res, _ = night(capsys, repo, home)
    assert (code, res["status"], res["tests"]) == (0, "green", 1)
    assert state(home)["last_good"] == shas[-1] and sessions(home) == []

    # 2. green with new commits: one test again
    shas += add_commits(repo, 3, bad_from=None)
    code, res, _ = night(capsys, repo, home)
    assert (code, res["status"], res["tests"], res["previous_good"]) == (0, "green", 1, shas[4])
    assert state(home)["last_good"] == shas[-1]
    good_before = shas[-1]

    # 3. a regression: confirmed, the last good re-checked, bisected in a session, reported
    shas += add_commits(repo, 9, bad_from=4)
    culprit = shas[8 + 4]
    code, res, err = night(capsys, repo, home)
    assert code == 5, err[-3000:]
    assert (res["status"], res["culprit"], res["confidence"]) == ("new", culprit, "high")
    st = state(home)
    assert st["last_good"] == good_before and st["active"] is None
    [reg] = st["regressions"]
    assert (reg["culprit"], reg["status"], reg["good"], reg["bad"], reg["kind"]) == (
        culprit, "open", good_before, shas[-1], "fail")
    roles = [r["role"] for r in _night_steps(res)]
    assert roles == ["head", "retest-head", "retest-head", "last-good"]
    body = issue.read_text()
    assert f"## Regression: `{culprit[:12]}`" in body and culprit in body
    assert f"--good {shas[11]} --bad {culprit}" in body  # one command: the culprit's parent and it
    assert res["issue"]["title"].split()[3] == culprit[:12]
    session = res["session"]
    # the night's steps are the session's endpoints: not tested twice
    journal = _journal(home, session)
    assert [r["role"] for r in journal[:2]] == ["endpoint", "endpoint"]
    assert {r["commit"] for r in journal[:2]} == {good_before, shas[-1]}
    assert sum(r["role"] == "endpoint" for r in journal) == 2
    # (the revert check a hunt runs by default is a record of its own: here its revert conflicts
    # and tests nothing)
    assert res["tests"] == 4 + sum(len(r["tests"]) for r in journal) - 2
    # resume, status and report work on the hunt's session
    code, out, _ = run_cli(["status", session, "--workdir", str(home)], capsys)
    assert code == 0 and f"culprit {culprit}" in out
    code, out, _ = run_cli(["report", session, "--workdir", str(home)], capsys)
    assert code == 0 and culprit[:12] in out and "tritonbisect run --repo" in out
    code, out, _ = run_cli(["resume", session, "--workdir", str(home), "--json"], capsys)
    assert code == 0 and json.loads(out.splitlines()[-1])["culprit"] == culprit

    # 4. the same regression again: known, one test, no bisect, no issue body
    shas += add_commits(repo, 2, bad_from=0)
    code, res, _ = night(capsys, repo, home)
    assert (code, res["status"], res["tests"], res["session"]) == (0, "known", 1, None)
    assert res["known"] == [culprit] and not issue.exists()
    assert sessions(home) == [session]
    assert state(home)["regressions"][0]["nights_seen"] == 2

    # 5. fixed: recorded as fixed, with the range the fix is in; a comment body for the issue
    shas += add_commits(repo, 2, bad_from=None)
    code, res, _ = night(capsys, repo, home)
    assert (code, res["status"], res["fixed"]) == (0, "fixed", [culprit])
    reg = state(home)["regressions"][0]
    assert reg["status"] == "fixed" and reg["fixed_between"] == [shas[-3], shas[-1]]
    assert state(home)["last_good"] == shas[-1]
    comment = home / "out" / f"issue.fixed-{culprit[:12]}.md"
    assert f"--good {shas[-3]} --bad {shas[-1]} --regress fixed" in comment.read_text()

    # 6. a failure that does not confirm: no bisect, the last good stays
    flake = tmp_path / "flake-once"
    flake.write_text("x")
    flaky_test = f"if [ -e {flake} ]; then rm {flake}; exit 1; fi; {TEST}"
    shas += add_commits(repo, 3, bad_from=None)
    code, res, _ = night(capsys, repo, home, test=flaky_test)
    assert (code, res["status"], res["tests"], res["session"]) == (0, "flaky", 2, None)
    assert "not confirmed" in res["message"]
    st = state(home)
    assert st["last_good"] == shas[-4] and st["flaky_nights"] == 1
    assert sessions(home) == [session]

    # 7. a head that does not build: nothing decided (exit 1), the last good stays
    shas += add_commits(repo, 1, bad_from=None, broken=(0,))
    code, res, _ = night(capsys, repo, home)
    assert (code, res["status"]) == (1, "untestable") and "build" in res["message"]
    assert state(home)["last_good"] == shas[-5]

    # 8. green again
    shas += add_commits(repo, 1, bad_from=None)
    code, res, _ = night(capsys, repo, home)
    assert (code, res["status"]) == (0, "green") and state(home)["last_good"] == shas[-1]
    assert [n["status"] for n in state(home)["nights"]] == [
        "green", "green", "new", "known", "fixed", "flaky", "untestable", "green"]
    code, out, _ = run_cli(["hunt", *hunt_args(repo, home)[1:-1]], capsys)  # plain output
    assert code == 0 and out.startswith("hunt: green: ")


def _night_steps(res: dict) -> list[dict]:
    path = Path(res["night_dir"]) / "night.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()]


def _journal(home: Path, session: str) -> list[dict]:
    path = home / "sessions" / session / "journal.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def test_environment_change_and_no_known_good(tmp_path: Path, capsys) -> None:
    repo, home = tmp_path / "repo", tmp_path / "home"
    history(repo, 3, extra="x")
    broken = tmp_path / "machine-broken"
    test = f"test ! -e {broken} && {TEST}"

    # the first night's head fails and the state knows no good: exit 3, say what to do
    add_commits(repo, 3, bad_from=1)
    code, res, _ = night(capsys, repo, home, test=test)
    assert (code, res["status"]) == (3, "no-good") and "--good REV" in res["message"]

    # with --good: bisected from there
    code, res, _ = night(capsys, repo, home, "--good", "HEAD~3", test=test)
    assert (code, res["status"]) == (5, "new")

    # the environment breaks: the last good fails too -> exit 3, nothing bisected
    fixed = add_commits(repo, 1, bad_from=None)
    code, res, _ = night(capsys, repo, home, test=test)
    assert (code, res["status"]) == (0, "fixed")
    add_commits(repo, 2, bad_from=0)
    broken.write_text("x")
    before = sessions(home)
    code, res, _ = night(capsys, repo, home, test=test)
    assert (code, res["status"]) == (3, "environment")
    assert f"the last good {fixed[0][:12]} no longer passes" in res["message"]
    assert [r["role"] for r in _night_steps(res)] == ["head", "retest-head", "retest-head", "last-good"]
    assert sessions(home) == before
    assert state(home)["last_good"] == fixed[0]


def test_bad_inputs_are_one_line_and_exit_2(tmp_path: Path, capsys) -> None:
    repo, other, home = tmp_path / "repo", tmp_path / "other", tmp_path / "home"
    history(repo, 2)
    history(other, 2, different="yes")
    code, _, _ = night(capsys, repo, home)
    assert code == 0
    cases = [
        (hunt_args(other, home), "belongs to another hunt"),
        ([*hunt_args(repo, home), "--regress", "fixed"], "--regress fixed is not for a hunt"),
        ([*hunt_args(repo, home), "--compat-map", str(tmp_path / "x.csv")], "--compat-map does not go with the command bisector"),
        ([*hunt_args(repo, home), "--threshold", "5%"], "--perf-threshold goes with --regress perf"),
        ([*hunt_args(repo, home), "--bad", "nope"], "unknown revision 'nope'"),
    ]
    for argv, message in cases:
        code, out, err = run_cli(argv, capsys)
        assert code == 2 and message in error_line(err), (argv, err)
    (home / "state.json").write_text('{"version": 1, "regressions": [{"bogus": 1}]')
    code, _, err = run_cli(hunt_args(repo, home), capsys)
    assert code == 2 and "hunt state file" in error_line(err) and "is corrupt" in error_line(err)
    (home / "state.json").write_text('{"version": 1, "regressions": [{"nope": 1}]}')
    code, _, err = run_cli(hunt_args(repo, home), capsys)
    assert code == 2 and "is corrupt" in error_line(err) and "move it away" in error_line(err)

    from tritonbisect.hunt.memory import StateLock

    (home / "state.json").unlink()
    with StateLock(home / "state.json"):
        code, _, err = run_cli(hunt_args(repo, home), capsys)
    assert code == 2 and "another tritonbisect hunt is using" in error_line(err)


def test_github_outputs_and_step_summary(tmp_path: Path, capsys, monkeypatch) -> None:
    repo, home = tmp_path / "repo", tmp_path / "home"
    history(repo, 3)
    outputs, summary = tmp_path / "gh-output", tmp_path / "gh-summary"
    summary.write_text("earlier step's summary\n")
    monkeypatch.setenv("GITHUB_OUTPUT", str(outputs))
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    night(capsys, repo, home)
    culprit = add_commits(repo, 5, bad_from=2)[2]
    code, res, _ = night(capsys, repo, home)
    assert code == 5
    from gha_harness import parse_output_file

    # outputs of both nights were appended; the last value wins
    out = parse_output_file(outputs)
    assert out["status"] == "new" and out["exit-code"] == "5" and out["culprit"] == culprit
    assert out["issue-key"] == culprit[:12] and culprit[:12] in out["issue-title"]
    assert Path(out["issue-body"]).read_text().startswith("## Regression")
    assert Path(out["session-dir"]).is_dir() and Path(out["night-dir"]).is_dir()
    text = summary.read_text()
    assert text.startswith("earlier step's summary\n")
    assert "## tritonbisect hunt: green" in text and "## tritonbisect hunt: new" in text
    assert (home / "out" / "summary.md").read_text().startswith("## tritonbisect hunt: new")


@pytest.mark.parametrize("design", ["paired", "unpaired"])
def test_perf_regression_with_noise(tmp_path: Path, capsys, design: str) -> None:
    """A metric 30% worse from one commit on, with 2% noise: found, reported with its numbers
    (paired: the A/B of the last green and the head, and of the culprit against its parent,
    each with its interval); new commits without a change are green (no false alarm)."""
    repo, home = tmp_path / "repo", tmp_path / "home"
    # a noisy measurement: the commit's speed times 1 + 2% x (a sum of 12 uniforms - 6)
    test = (
        "awk -v seed=$((RANDOM * 32768 + RANDOM)) -v base=$(cat speed) 'BEGIN { srand(seed); "
        "s = 0; for (i = 0; i < 12; i++) s += rand(); "
        "printf \"TRITONBISECT_METRIC=%.6f\\n\", base * (1 + 0.02 * (s - 6)) }'"
    )
    history(repo, 3, speed="1.0|1.3")
    perf = ("--regress", "perf", "--threshold", "10%", "--perf-design", design)
    reference_runs = 20 if design == "unpaired" else 5  # paired: the reference only has to pass
    code, res, err = night(capsys, repo, home, *perf, test=test)
    assert (code, res["status"], res["tests"]) == (0, "green", reference_runs), err[-2000:]
    add_commits(repo, 4, bad_from=None, speed="1.0|1.3")
    code, res, _ = night(capsys, repo, home, *perf, test=test)
    assert (code, res["status"]) == (0, "green")
    steps = _night_steps(res)
    assert [r["role"] for r in steps] == ["reference", "head"]
    assert steps[1]["perf"]["decision"] == "within" and len(steps[0]["perf"]["samples"]) == reference_runs
    if design == "paired":  # the head ran paired with the last green: an A/B of the sandwich's bounds
        assert steps[1]["perf"]["reference_commit"] == steps[0]["commit"]
        assert len(steps[1]["perf"]["samples"]) == len(steps[1]["reference_tests"]) >= 20

    shas = add_commits(repo, 12, bad_from=5, speed="1.0|1.3")
    code, res, err = night(capsys, repo, home, *perf, test=test)
    assert code == 5, err[-3000:]
    assert res["culprit"] == shas[5]
    reg = state(home)["regressions"][0]
    assert reg["kind"] == "perf" and "perf regression" in reg["reason"]
    body = (home / "out" / "issue.md").read_text()
    assert "| metric |" in body and "reference)" in body
    command = body.split("### Reproduce")[1].split("```")[1]
    assert "--regress perf" in command and "--perf-threshold 10%" in command  # the option's current name
    journal = _journal(home, res["session"])
    head = next(r for r in journal if r["role"] == "endpoint" and r["commit"] == shas[-1])
    assert head["perf"]["change"] > 0.2 and head["kind"] == "perf"
    if design == "paired":  # the figures a sheriff needs, at the top of the issue
        slow = next(line for line in body.splitlines() if line.startswith("| **Slow-down** |"))
        assert re.search(r"\+(2\d|3\d)\.\d% \[\d+\.\d, \d+\.\d\]", slow), slow
        vs_parent = next(line for line in body.splitlines() if line.startswith("| **Culprit vs parent** |"))
        assert shas[5][:12] in vs_parent and "slower beyond the threshold" in vs_parent
    else:
        assert "Slow-down" not in body

    add_commits(repo, 1, bad_from=0, speed="1.0|1.3")
    code, res, _ = night(capsys, repo, home, *perf, test=test)
    assert (code, res["status"], res["steps"]) == (0, "known", 2)


def test_kill_9_mid_bisect_then_the_next_night_resumes(tmp_path: Path) -> None:
    repo, home = tmp_path / "repo", tmp_path / "home"
    marker = tmp_path / "tested.log"
    test = f"echo $TRITONBISECT_COMMIT >> {marker}; sleep 0.3; {TEST}"
    history(repo, 3)
    args = hunt_args(repo, home, test=test)
    first = tb(*args, cwd=tmp_path, home=home, env=_env(home))
    assert first.returncode == 0, first.stderr
    shas = add_commits(repo, 40, bad_from=29)
    proc = popen_tb(*args, cwd=tmp_path, home=home, env=_env(home))
    sdir = _wait_for_session(home)
    wait_until(lambda: len(_lines(sdir / "journal.jsonl")) >= 4)  # 2 endpoints (the night's), 2 search
    os.kill(proc.pid, signal.SIGKILL)
    proc.communicate(timeout=30)
    active = state(home)["active"]
    assert active["session"] == sdir.name and active["bad"] == shas[-1]
    time.sleep(0.5)  # the orphaned test finishes
    before = [json.loads(line) for line in _lines(sdir / "journal.jsonl")]
    tested_before = marker.read_text().split()

    add_commits(repo, 1, bad_from=0)  # the next night has a new head; the bisect comes first
    res = tb(*args, cwd=tmp_path, home=home, env=_env(home))
    assert res.returncode == 5, res.stderr[-3000:]
    out = json.loads(res.stdout.strip().splitlines()[-1])
    assert (out["status"], out["resumed"], out["session"], out["culprit"]) == ("new", True, sdir.name, shas[29])
    assert sessions(home) == [sdir.name]
    assert "resuming the bisect session" in res.stderr
    after = [json.loads(line) for line in _lines(sdir / "journal.jsonl")]
    assert after[: len(before)] == before
    finished = {r["commit"] for r in before}
    rerun = [c for c in marker.read_text().split()[len(tested_before):]
             if c in finished and c not in {r["commit"] for r in after if r["role"] == "confirm"}]
    assert rerun == []
    assert state(home)["active"] is None and state(home)["regressions"][0]["culprit"] == shas[29]

    # and the night after: the new head fails the known way, one test
    res = tb(*args, cwd=tmp_path, home=home, env=_env(home))
    out = json.loads(res.stdout.strip().splitlines()[-1])
    assert (res.returncode, out["status"], out["tests"]) == (0, "known", 1)


def _env(home: Path) -> dict:
    env = env_for(home)
    env.pop("GITHUB_OUTPUT", None)
    env.pop("GITHUB_STEP_SUMMARY", None)
    return env


def _lines(path: Path) -> list[str]:
    return [line for line in path.read_text().splitlines() if line.strip()] if path.exists() else []



def _wait_for_session(home: Path) -> Path:
    wait_until(lambda: bool(sessions(home)))
    return home / "sessions" / sessions(home)[0]


def test_a_test_with_a_reference_output_records_it_once_at_a_good_commit(tmp_path: Path) -> None:
    """An oracle's golden output (`--repro`: TestSpec.record_command) is recorded at a good
    commit once; later nights compare against it in one test, and the bisect's good endpoint
    is the night's own step (the golden is not recorded again)."""
    from tritonbisect.domains.command.hunt_target import CommandTarget
    from tritonbisect.hunt.memory import HuntState
    from tritonbisect.hunt.night import Night, NightOptions
    from tritonbisect.options.bisect_options import bisect_settings
    from tritonbisect.session.observer import NullUI

    repo, home = tmp_path / "repo", tmp_path / "home"
    golden = tmp_path / "golden"
    shas = history(repo, 3)
    test = {"command": f"cmp -s out/state {golden}",
            "record_command": f"cp out/state {golden}"}
    settings = bisect_settings(test="unused", workdir=str(home))

    def one_night() -> tuple:
        target = CommandTarget(repo, BUILD, test)
        state = HuntState.load(home / "state.json")
        night = Night(target, settings, state, NightOptions(), NullUI(), hunt_dir=home / "hunt",
                      bisect_argv=lambda g, b: ["run", "--good", g, "--bad", b],
                      record_command=test["record_command"])
        return night.run(), state

    res, st = one_night()
    assert (res.status, [r["role"] for r in res.steps]) == ("green", ["reference"])
    assert res.steps[0]["record"] and golden.read_text() == "ok\n"
    assert st.reference["commit"] == shas[-1]

    shas += add_commits(repo, 2, bad_from=None)
    res, st = one_night()
    assert (res.status, [r["role"] for r in res.steps]) == ("green", ["head"])

    shas += add_commits(repo, 6, bad_from=3)
    res, st = one_night()
    assert (res.status, res.new.culprit) == ("new", shas[-3])
    assert [r["role"] for r in res.steps] == ["head", "retest-head", "retest-head", "last-good"]
    assert not any(r.get("record") for r in res.session_records)  # not recorded again
    assert golden.read_text() == "ok\n"
