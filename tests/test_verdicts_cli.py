"""Flaky tests, corrections and replays end to end: real git, real subprocesses, the real CLI.

`mark`, `undo`, `log` and `replay`; `--flaky auto`, `--flake-rate`, the test budget; and the
posterior in the JSON and the report.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from engine_repo import BUILD, TEST, env_for, git, journal, last_json, linear, tb


def _run(repo: Path, home: Path, good: str, *extra: str, test: str = TEST):
    return tb("run", "--repo", str(repo), "--good", good, "--bad", "main", "--build", BUILD,
              "--test", test, "--json", *extra, cwd=repo, home=home)


def flaky_test(tmp_path: Path, *, p: float, q: float = 0.0, seed: int = 1) -> str:
    """A test that lies at random (seeded: the n-th run of commit i always says the same)."""
    script = tmp_path / "flaky.sh"
    counts = tmp_path / "runs"
    counts.mkdir(exist_ok=True)
    script.write_text(
        f"""c=$TRITONBISECT_COMMIT; f={counts}/$c
n=$(( $(cat "$f" 2>/dev/null || echo 0) + 1 )); echo "$n" > "$f"
r=$(printf '%s' "{seed}-$c-$n" | cksum | cut -d' ' -f1); r=$(( r % 1000 ))
if grep -q bad out/state; then [ $r -lt {int(q * 1000)} ] && exit 0; exit 1
else [ $r -lt {int(p * 1000)} ] && exit 1; exit 0; fi
"""
    )
    return f"bash {script}"


def _one_line(proc: subprocess.CompletedProcess[str]) -> str:
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, proc.stderr
    return lines[0]


# --- the flake-aware search ---------------------------------------------------------------------


def test_flaky_auto_finds_the_culprit_and_reports_its_posterior(tmp_path: Path) -> None:
    repo, home = tmp_path / "repo", tmp_path / "home"
    shas = linear(repo, 40, culprit=27)
    proc = _run(repo, home, shas[0], "--flaky", "auto", test=flaky_test(tmp_path, p=0.2, seed=1))
    assert proc.returncode == 0, proc.stderr
    out = last_json(proc.stdout)
    assert out["culprit"] == shas[27] and out["confidence"] == "high"
    post = out["posterior"]
    assert post["search"] == "flake-aware" and post["flaky"] == "auto"
    assert post["threshold"] == 0.99  # a test declared flaky gets the stricter default
    assert post["probability"] >= 0.99 and post["top"][0]["commit"] == shas[27]
    recs = journal(home, out["session"])
    ends = [r["commit"] for r in recs if r["role"] == "endpoint"]
    assert sorted(ends) == sorted([shas[0]] * 3 + [shas[39]] * 3)  # each endpoint run 3 times
    assert not [r for r in recs if r["role"] == "confirm"]  # the posterior is the confirmation
    searched = [r["commit"] for r in recs if r["role"] == "search"]
    assert len(searched) > len(set(searched)), "re-tests are part of the flake-aware search"
    md = tb("report", out["session"], cwd=repo, home=home).stdout
    assert "**Posterior:** P = " in md and "flake-aware search" in md
    status = tb("status", out["session"], "--json", cwd=repo, home=home)
    assert json.loads(status.stdout)["posterior"]["main"]["probability"] == post["probability"]


def test_flake_rate_given_searches_by_probability_from_the_start(tmp_path: Path) -> None:
    repo, home = tmp_path / "repo", tmp_path / "home"
    shas = linear(repo, 30, culprit=9)
    proc = _run(repo, home, shas[0], "--flake-rate", "0.1,0.02", "--confidence", "0.99")
    assert proc.returncode == 0, proc.stderr
    out = last_json(proc.stdout)
    assert out["culprit"] == shas[9]
    post = out["posterior"]
    assert post["rates"] == "fixed" and post["p"] == 0.1 and post["q"] == 0.02
    assert post["probability"] >= 0.99
    recs = journal(home, out["session"])
    assert len([r for r in recs if r["role"] == "endpoint"]) == 2  # the rates are known


def test_a_spent_test_budget_ends_inconclusive_with_the_likeliest_commits(tmp_path: Path) -> None:
    repo, home = tmp_path / "repo", tmp_path / "home"
    shas = linear(repo, 60, culprit=31)
    proc = _run(repo, home, shas[0], "--flaky", "auto", "--max-tests", "3",
                test=flaky_test(tmp_path, p=0.2, seed=5))
    assert proc.returncode == 1, proc.stderr
    out = last_json(proc.stdout)
    assert out["status"] == "inconclusive" and out["candidates"]
    assert "test budget (3 search tests) was spent" in out["reason"]
    assert "raise it with --max-tests" in proc.stderr
    recs = journal(home, out["session"])
    assert len([r for r in recs if r["role"] == "search"]) == 3


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["--flake-rate", "0.7"], "below 0.5"),
        (["--flake-rate", "often"], "expects numbers"),
        (["--flake-rate", "0.1,0.1,0.1"], "P or P,Q"),
        (["--confidence", "1.5"], "--confidence"),
        (["--max-tests", "0"], "--max-tests"),
    ],
)
def test_bad_flaky_options_are_one_line_and_exit_2(tmp_path: Path, args: list[str], needle: str) -> None:
    repo, home = tmp_path / "repo", tmp_path / "home"
    shas = linear(repo, 6, culprit=3)
    proc = _run(repo, home, shas[0], *args)
    assert proc.returncode == 2
    assert needle in _one_line(proc)
    assert not (home / "sessions").exists()


# --- mark, undo, log ----------------------------------------------------------------------------


def test_mark_corrects_a_verdict_resume_follows_and_undo_takes_it_back(tmp_path: Path) -> None:
    repo, home = tmp_path / "repo", tmp_path / "home"
    shas = linear(repo, 20, culprit=13)
    out = last_json(_run(repo, home, shas[0]).stdout)
    sid = out["session"]
    assert out["culprit"] == shas[13]
    before = journal(home, sid)
    # the person knows better: 13 is good (say, the test was wrong there)
    mark = tb("mark", sid, shas[13][:10], "good", "--why", "the test misfires on c13", cwd=repo, home=home)
    assert mark.returncode == 0, mark.stderr
    assert f"marked {shas[13][:12]} good (was bad)" in mark.stdout and f"tritonbisect resume {sid}" in mark.stdout
    status = tb("status", sid, cwd=repo, home=home).stdout
    assert "pending" in status and "reopened" in status and "resume with" in status
    res = tb("resume", sid, "--json", cwd=repo, home=home)
    # the mark contradicts a test verdict, so the test may be wrong elsewhere too: the answer
    # holds below the confidence asked for, and says so with its own exit code
    assert res.returncode == 6, res.stderr
    again = last_json(res.stdout)
    assert again["culprit"] == shas[14] and again["outcome"] == "found-low-confidence"
    after = journal(home, sid)
    assert after[: len(before)] == before  # nothing rewritten
    marks = [r for r in after if r["role"] == "mark"]
    assert [(m["commit"], m["verdict"], m["reason"]) for m in marks] == [(shas[13], "good", "the test misfires on c13")]
    assert shas[13] not in [r["commit"] for r in after[len(before):] if r["role"] != "mark"]  # not re-tested
    log = tb("log", sid, cwd=repo, home=home).stdout
    assert f"git bisect good {shas[13]}" in log and "the test misfires on c13" in log
    assert f"# first bad commit: [{shas[14]}]" in log
    # take the mark back: the tests' verdict stands again
    undo = tb("undo", sid, "--seq", str(marks[0]["seq"]), cwd=repo, home=home)
    assert undo.returncode == 0, undo.stderr
    res = tb("resume", sid, "--json", cwd=repo, home=home)
    assert last_json(res.stdout)["culprit"] == shas[13]
    # the session's log replays in real git to the same culprit
    path = tmp_path / "session.log"
    path.write_text(tb("log", sid, cwd=repo, home=home).stdout)
    assert f"{shas[13]} is the first bad commit" in git(repo, "bisect", "replay", str(path))
    git(repo, "bisect", "reset")


def test_a_mark_after_a_session_gives_one_corrected_culprit(tmp_path: Path) -> None:
    # The mark contradicts the tests (137..149 failed), so the search turns flake-aware; a
    # marked commit is known, not untestable: the answer is its neighbour alone, not the pair.
    repo, home = tmp_path / "repo", tmp_path / "home"
    shas = linear(repo, 200, culprit=137)
    sid = last_json(_run(repo, home, shas[0]).stdout)["session"]
    assert tb("mark", sid, shas[150], "good", cwd=repo, home=home).returncode == 0
    res = tb("resume", sid, "--json", cwd=repo, home=home, timeout=300)
    assert res.returncode in (0, 6), res.stderr
    out = last_json(res.stdout)
    assert out["status"] == "found" and out["culprit"] == shas[151], out
    assert "candidates" not in out or out["candidates"] in ([], [shas[151]], None)
    # the mark taken back: the tests' answer; the undo taken back: the mark's answer again
    mark_seq = [r for r in journal(home, sid) if r["role"] == "mark"][-1]["seq"]
    assert tb("undo", sid, "--seq", str(mark_seq), cwd=repo, home=home).returncode == 0
    back = last_json(tb("resume", sid, "--json", cwd=repo, home=home, timeout=300).stdout)
    assert back["culprit"] == shas[137], back
    undo_seq = [r for r in journal(home, sid) if r["role"] == "undo"][-1]["seq"]
    assert tb("undo", sid, "--seq", str(undo_seq), cwd=repo, home=home).returncode == 0
    again = tb("resume", sid, "--json", cwd=repo, home=home, timeout=300)
    assert again.returncode in (0, 6), again.stderr
    out = last_json(again.stdout)
    assert out["status"] == "found" and out["culprit"] == shas[151], out


def test_mark_and_undo_errors_are_one_line(tmp_path: Path) -> None:
    repo, home = tmp_path / "repo", tmp_path / "home"
    shas = linear(repo, 12, culprit=6)
    sid = last_json(_run(repo, home, shas[0]).stdout)["session"]
    n = len(journal(home, sid))
    for args, needle in [
        ([sid, "nosuchrev", "good"], "unknown commit"),
        ([sid, shas[0], "bad"], "good endpoint"),
        ([sid, shas[3], "maybe"], "good, bad, skip"),
        ([shas[3]], "usage"),
    ]:
        proc = tb("mark", *args, cwd=repo, home=home)
        assert proc.returncode == 2, (args, proc.stderr)
        assert needle in _one_line(proc)
    assert tb("mark", sid, shas[8], "bad", cwd=repo, home=home).returncode == 0
    proc = tb("mark", sid, shas[9], "good", cwd=repo, home=home)
    assert proc.returncode == 2 and "contradicts" in _one_line(proc)
    proc = tb("undo", sid, "--seq", "999", cwd=repo, home=home)
    assert proc.returncode == 2 and "#999" in _one_line(proc)
    assert len(journal(home, sid)) == n + 1  # only the one good mark was written


# --- replay -------------------------------------------------------------------------------------


def test_replay_a_real_git_bisect_log_goes_on_from_its_verdicts(tmp_path: Path) -> None:
    repo, home = tmp_path / "repo", tmp_path / "home"
    shas = linear(repo, 64, culprit=41)
    # an interrupted manual git bisect: four verdicts given, then the user gave up
    for args in (["start"], ["bad", shas[63]], ["good", shas[0]], ["good", shas[32]],
                 ["bad", shas[48]], ["skip", shas[44]], ["good", shas[36]]):
        git(repo, "bisect", *args)
    logfile = tmp_path / "my-bisect.log"
    logfile.write_text(git(repo, "bisect", "log"))
    git(repo, "bisect", "reset")
    proc = tb("replay", str(logfile), "--repo", str(repo), "--build", BUILD, "--test", TEST,
              "--json", cwd=repo, home=home)
    assert proc.returncode == 0, proc.stderr
    assert "4 verdicts from" in proc.stderr
    out = last_json(proc.stdout)
    assert out["culprit"] == shas[41] and out["confidence"] == "high"
    recs = journal(home, out["session"])
    given = [(r["commit"], r["verdict"]) for r in recs if r["kind"] == "manual"]
    assert given == [(shas[0], "good"), (shas[63], "bad"), (shas[32], "good"), (shas[48], "bad"),
                     (shas[44], "skip"), (shas[36], "good")]
    tested = [r for r in recs if r["role"] == "search" and r["tests"]]
    assert len(tested) <= 4  # 11 candidates left between 36 and 48, one skipped
    assert all(37 <= shas.index(r["commit"]) <= 47 for r in tested)


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        (None, "does not exist"),
        ("git bisect start\ngit bisect bad {bad}\n", "names no good commit"),
        ("git bisect start\ngit bisect bad {bad}\ngit bisect good nosuch\n", "line 3: unknown revision"),
        ("not a log\n", "not a usable git bisect log"),
    ],
)
def test_replay_bad_logs_are_one_line_and_exit_2(tmp_path: Path, text: str | None, needle: str) -> None:
    repo, home = tmp_path / "repo", tmp_path / "home"
    shas = linear(repo, 6, culprit=3)
    logfile = tmp_path / "bisect.log"
    if text is not None:
        logfile.write_text(text.format(bad=shas[5]))
    proc = tb("replay", str(logfile), "--repo", str(repo), "--test", TEST, cwd=repo, home=home)
    assert proc.returncode == 2
    assert needle in _one_line(proc)


# --- judging by hand needs a terminal -------------------------------------------------------------


def test_without_test_and_without_a_terminal_the_run_is_refused(tmp_path: Path) -> None:
    repo, home = tmp_path / "repo", tmp_path / "home"
    shas = linear(repo, 6, culprit=3)
    cmd = [sys.executable, "-m", "tritonbisect.cli", "run", "--repo", str(repo), "--good", shas[0],
           "--bad", "main", "--build", BUILD]
    proc = subprocess.run(cmd, cwd=repo, env=env_for(home), stdin=subprocess.DEVNULL,
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2
    assert "stdin is not a terminal" in _one_line(proc)
    both = tb("run", "--repo", str(repo), "--good", shas[0], "--bad", "main", "--manual",
              "--test", TEST, cwd=repo, home=home)
    assert both.returncode == 2 and "mutually exclusive" in _one_line(both)
    assert not (home / "sessions").exists()


def test_a_mark_in_an_earlier_phase_supersedes_the_later_ones(tmp_path: Path) -> None:
    from tritonbisect.builds.recipes import TestSpec
    from tritonbisect.domains.command.recipe import CommandRecipe
    from tritonbisect.options.bisect_options import bisect_settings
    from tritonbisect.session.session import PhaseSpec, Session, drive

    home = tmp_path / "home"
    first, second = tmp_path / "first", tmp_path / "second"
    a = linear(first, 12, culprit=5)
    b = linear(second, 12, culprit=8)
    recipe = CommandRecipe(BUILD, TestSpec(TEST))
    phases = [PhaseSpec(name, repo, shas[0], shas[-1], recipe.name, recipe.config())
              for name, repo, shas in (("one", first, a), ("two", second, b))]
    settings = bisect_settings(workdir=str(home), test=TEST)
    session = Session.create(home, settings, phases)
    drive(session)
    drive(session)  # no workflow: one phase per run
    assert [p.culprit for p in session.phases()] == [a[5], b[8]]
    proc = tb("mark", session.id, a[5], "good", cwd=first, home=home)
    assert proc.returncode == 0, proc.stderr
    status = tb("status", session.id, cwd=first, home=home).stdout
    assert "phase one: pending" in status and "phase two: superseded" in status
    res = tb("resume", session.id, "--json", cwd=first, home=home)
    assert res.returncode == 6, res.stderr  # low confidence: the mark contradicts a test verdict
    out = last_json(res.stdout)
    assert out["phase"] == "one" and out["culprit"] == a[6]
    assert [p["status"] for p in out["phases"]] == ["found", "superseded"]
