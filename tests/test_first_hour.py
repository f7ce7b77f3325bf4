"""A new user's first hour: the headline command from any directory, valid bash as --test,
answers a script can tell apart, and endpoints that a flaky test contradicts once."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from engine_repo import BUILD, TEST, journal, linear, tb
from tritonbisect.core.errors import InputError
from tritonbisect.core.history import History
from tritonbisect.core.step_args import check_test_command

CHECK = "#!/bin/bash\n" + TEST + "\n"


def repo_with_check(tmp_path: Path, n: int = 40, culprit: int = 27) -> tuple[Path, list[str]]:
    repo = tmp_path / "r"
    shas = linear(repo, n, culprit=culprit, files={"check.sh": CHECK})
    return repo, shas


@pytest.mark.parametrize(
    "test", ["./check.sh", "check.sh", "bash check.sh", "bash ./check.sh", "./check.sh --fast"]
)
def test_a_tracked_script_is_found_from_any_directory(tmp_path: Path, test: str) -> None:
    repo, shas = repo_with_check(tmp_path)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    got = check_test_command(test, repo=repo, bad=shas[-1], history=History(repo), cwd=elsewhere)
    assert got.replace("./check.sh", "check.sh").replace("check.sh", "./check.sh").startswith(
        ("./check.sh", "bash ./check.sh")
    )
    assert str(elsewhere) not in got  # runs from the checkout, not from where it was typed


def test_a_script_from_a_subdirectory_is_rewritten_from_the_top(tmp_path: Path) -> None:
    repo = tmp_path / "r"
    shas = linear(repo, 5, culprit=3, files={"tools/check.sh": CHECK})
    got = check_test_command("./check.sh", repo=repo, bad=shas[-1], history=History(repo), cwd=repo / "tools")
    assert got == "./tools/check.sh"


@pytest.mark.parametrize(
    "test",
    ["./check.sh >/dev/null", "(./check.sh)", "./check.sh|cat", "./check.sh; true",
     "./check.sh && true", "FOO=1 ./check.sh", "./check.sh 2>&1", "if ./check.sh; then :; fi",
     "./check.sh $HOME", "{ ./check.sh; }"],
)
def test_valid_bash_is_never_refused(tmp_path: Path, test: str) -> None:
    repo, shas = repo_with_check(tmp_path)
    got = check_test_command(test, repo=repo, bad=shas[-1], history=History(repo), cwd=tmp_path)
    assert got == test


def test_a_script_found_nowhere_is_still_one_line(tmp_path: Path) -> None:
    repo, shas = repo_with_check(tmp_path)
    with pytest.raises(InputError, match="nope.sh not found") as err:
        check_test_command("./nope.sh", repo=repo, bad=shas[-1], history=History(repo), cwd=tmp_path)
    assert "\n" not in err.value.message


@pytest.mark.parametrize("test", ["./check.sh", "check.sh", "bash check.sh", "./check.sh >/dev/null"])
def test_the_headline_command_works_from_another_directory(tmp_path: Path, test: str) -> None:
    repo, shas = repo_with_check(tmp_path)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    proc = tb("run", "--repo", str(repo), "--good", shas[0], "--bad", "main", "--test", test,
              "--build", BUILD, "--json", cwd=elsewhere, home=tmp_path / "home")
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["culprit"] == shas[27]


def _good_fails_first(tmp_path: Path, good: str) -> str:
    marks = tmp_path / "marks"
    marks.mkdir()
    return (f'if [ "$TRITONBISECT_COMMIT" = {good} ] && [ ! -e {marks}/once ]; then '
            f"touch {marks}/once; exit 1; fi; {TEST}")


def test_an_endpoint_that_contradicts_once_is_run_again_and_the_search_goes_on(tmp_path: Path) -> None:
    repo = tmp_path / "r"
    shas = linear(repo, 40, culprit=27)
    proc = tb("run", "--repo", str(repo), "--good", shas[0], "--bad", "main", "--build", BUILD,
              "--test", _good_fails_first(tmp_path, shas[0]), "--json", cwd=repo, home=tmp_path / "home")
    assert proc.returncode in (0, 6), proc.stderr
    assert "running it again before giving up" in proc.stderr
    assert "the test looks flaky" in proc.stderr and "--flaky auto" in proc.stderr
    out = json.loads(proc.stdout)
    assert out["culprit"] == shas[27]
    assert out["posterior"]["search"] == "flake-aware"


def test_an_endpoint_that_contradicts_twice_is_invalid(tmp_path: Path) -> None:
    repo = tmp_path / "r"
    shas = linear(repo, 10, culprit=3)
    proc = tb("run", "--repo", str(repo), "--good", shas[4], "--bad", "main", "--build", BUILD,
              "--test", TEST, "--json", cwd=repo, home=tmp_path / "home")
    assert proc.returncode == 3, proc.stderr
    assert "running it again before giving up" in proc.stderr
    assert f"the good commit {shas[4][:12]} never passed (2 bad)" in proc.stderr


def test_with_flaky_off_an_endpoint_is_run_once(tmp_path: Path) -> None:
    repo = tmp_path / "r"
    shas = linear(repo, 10, culprit=3)
    proc = tb("run", "--repo", str(repo), "--good", shas[4], "--bad", "main", "--build", BUILD,
              "--test", TEST, "--flaky", "off", cwd=repo, home=tmp_path / "home")
    assert proc.returncode == 3, proc.stderr
    assert "running it again" not in proc.stderr
    assert "--flaky" in proc.stderr  # the options for a flaky test are named


CHATTY = ("head -c 2000000 /dev/zero | tr '\\0' 'x' | fold -w 100; echo; echo 'the last words of the test'; "
          + TEST)


def test_step_logs_are_bounded_head_and_tail_kept(tmp_path: Path) -> None:
    repo, home = tmp_path / "r", tmp_path / "home"
    shas = linear(repo, 12, culprit=7)
    proc = tb("run", "--repo", str(repo), "--good", shas[0], "--bad", "main", "--build", BUILD,
              "--test", CHATTY, "--log-limit", "256k", "--json", cwd=repo, home=home, timeout=120)
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out["culprit"] == shas[7]  # the verdicts do not depend on what was cut
    logs = list((home / "sessions" / out["session"] / "steps").glob("*/test-*.log"))
    assert logs
    for log in logs:
        data = log.read_bytes()
        assert len(data) < 256 * 1024 + 4096, (log, len(data))
        text = data.decode()
        assert text.startswith("$ ")  # the command line, then the first part of the output
        assert "of output cut here; the log keeps the first and the last 128.0 KiB" in text
        assert text.rstrip().endswith("the last words of the test")
    total = sum(p.stat().st_size for p in (home / "sessions").rglob("*") if p.is_file())
    assert total < len(logs) * 300 * 1024


def test_log_limit_zero_keeps_everything_and_bad_sizes_are_one_line(tmp_path: Path) -> None:
    from tritonbisect.core.loglimit import DEFAULT_LOG_LIMIT, log_limit, parse_size

    assert parse_size("16M") == DEFAULT_LOG_LIMIT and parse_size("0") == 0 and parse_size("500k") == 512000
    assert log_limit({"TRITONBISECT_LOG_LIMIT": "1m"}) == 1 << 20
    repo, home = tmp_path / "r", tmp_path / "home"
    shas = linear(repo, 4, culprit=2)
    proc = tb("run", "--repo", str(repo), "--good", shas[0], "--bad", "main", "--test", TEST,
              "--log-limit", "lots", cwd=repo, home=home)
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1 and "--log-limit" in proc.stderr
    proc = tb("run", "--repo", str(repo), "--good", shas[0], "--bad", "main", "--build", BUILD,
              "--test", CHATTY, "--log-limit", "0", "--json", cwd=repo, home=home, timeout=120)
    assert proc.returncode == 0, proc.stderr
    log = next((home / "sessions" / json.loads(proc.stdout)["session"] / "steps").glob("*/test-*.log"))
    assert log.stat().st_size > 2_000_000 and "cut here" not in log.read_text()


def test_an_inconclusive_answer_says_which_candidates_were_tested(tmp_path: Path) -> None:
    repo, home = tmp_path / "r", tmp_path / "home"
    shas = linear(repo, 40, culprit=20, broken=range(13, 20))
    proc = tb("run", "--repo", str(repo), "--good", shas[0], "--bad", "main", "--build", BUILD,
              "--test", TEST, cwd=repo, home=home)
    assert proc.returncode == 1, proc.stderr
    assert "could not be tested" not in proc.stdout
    assert "the culprit is one of 8 commits (7 do not build, 1 tested bad):" in proc.stdout
    assert f"  {shas[20]}  tested bad" in proc.stdout
    assert f"  {shas[13]}  does not build" in proc.stdout


def test_contradicting_marks_do_not_say_that_buildable_commits_do_not_build(tmp_path: Path) -> None:
    repo, home = tmp_path / "r", tmp_path / "home"
    shas = linear(repo, 40, culprit=20)
    sid = json.loads(tb("run", "--repo", str(repo), "--good", shas[0], "--bad", "main", "--build", BUILD,
                        "--test", TEST, "--json", cwd=repo, home=home).stdout)["session"]
    assert tb("mark", sid, shas[5], "bad", cwd=repo, home=home).returncode == 0  # wrong, by hand
    proc = tb("resume", sid, "--json", cwd=repo, home=home)
    out = json.loads(proc.stdout)
    # the mark is a hard constraint (the culprit is at or below it) and is never tested again:
    # the commits below it pass, so the marked commit is the answer, alone (its child, which
    # the mark excludes, is no candidate)
    assert out["status"] == "found" and out["culprit"] == shas[5], out
    assert "do not build" not in out["reason"] and "does not build" not in out["reason"]
    records = journal(home, sid)
    marked_at = max(r["seq"] for r in records if r.get("role") == "mark")
    resumed = [r for r in records if r.get("role") == "search" and r["seq"] > marked_at]
    assert resumed and all(r["commit"] in shas[1:5] and r["verdict"] == "good" for r in resumed)
    # with the commit below it marked untestable, nothing can tell the two apart: the answer
    # says what is known of each (both marked), not that they do not build
    assert tb("mark", sid, shas[4], "skip", cwd=repo, home=home).returncode == 0
    out = json.loads(tb("resume", sid, "--json", cwd=repo, home=home).stdout)
    assert out["status"] == "inconclusive" and out["candidates"] == [shas[4], shas[5]], out
    assert "do not build" not in out["reason"] and "does not build" not in out["reason"]
    assert "1 marked skip, 1 marked bad" in out["reason"]


def test_status_names_what_it_shows_and_ctrl_c_says_resume_once(tmp_path: Path) -> None:
    import signal
    import time

    from engine_repo import popen_tb

    repo, home = tmp_path / "r", tmp_path / "home"
    shas = linear(repo, 40, culprit=27)
    started = tmp_path / "started"
    slow = f"touch {started}; sleep 30; {TEST}"
    proc = popen_tb("run", "--repo", str(repo), "--good", shas[0], "--bad", "main", "--build", BUILD,
                    "--test", slow, cwd=repo, home=home)
    deadline = time.monotonic() + 60
    while not started.exists() and time.monotonic() < deadline:
        time.sleep(0.1)
    proc.send_signal(signal.SIGINT)
    _out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    assert err.count("tritonbisect resume") == 1, err
    sid = next((home / "sessions").iterdir()).name
    # a finished session with a correction: status says how many records it shows, and the undo
    done = tb("run", "--repo", str(repo), "--good", shas[0], "--bad", "main", "--build", BUILD,
              "--test", TEST, "--json", cwd=repo, home=home)
    sid = json.loads(done.stdout)["session"]
    assert tb("mark", sid, shas[27], "good", cwd=repo, home=home).returncode == 0
    assert tb("undo", sid, cwd=repo, home=home).returncode == 0
    status = tb("status", sid, cwd=repo, home=home).stdout
    assert "last 8 of " in status and "journal records" in status
    assert "None" not in status
    assert "[main/undo]" in status and "takes back #" in status
    assert "[main/mark]" in status and "marked good" in status


def test_the_markdown_report_is_ready_to_paste(tmp_path: Path) -> None:
    import platform
    import subprocess

    from tritonbisect import __version__

    repo, home = tmp_path / "r", tmp_path / "home"
    shas = linear(repo, 30, culprit=17, files={"check.sh": "#!/bin/bash\necho checking the kernel\n"
                                                "grep -q ok out/state || { echo 'AssertionError: max abs diff 0.37'; exit 1; }\n"})
    proc = tb("run", "--repo", "r", "--good", shas[0], "--bad", "main", "--build", BUILD, "--test", "./check.sh",
              "--json", cwd=tmp_path, home=home)
    assert proc.returncode == 0, proc.stderr
    sid = json.loads(proc.stdout)["session"]
    md = tb("report", sid, cwd=repo, home=home).stdout
    # the failing test's own words, from the culprit's log
    assert "Failing test output" in md and "AssertionError: max abs diff 0.37" in md
    # what it ran with
    git_version = subprocess.run(["git", "--version"], capture_output=True, text=True).stdout.split()[-1]
    assert f"tritonbisect {__version__}" in md and f"Python {platform.python_version()}" in md
    assert f"git {git_version}" in md and platform.system() in md
    # nothing of this machine's layout
    assert str(tmp_path) not in md and str(home) not in md
    assert "tritonbisect run --repo r --good" in md and "&lt;workdir&gt;/sessions/" in md
    # a clean run: no estimated error rates, which would be noise
    assert "error rates" not in md and "no verdict contradicted another" in md


def test_a_script_beside_the_user_wins_over_one_in_the_repository(tmp_path: Path) -> None:
    repo, shas = repo_with_check(tmp_path)
    mine = tmp_path / "check.sh"
    mine.write_text("#!/bin/bash\ntrue\n")
    got = check_test_command("./check.sh", repo=repo, bad=shas[-1], history=History(repo), cwd=tmp_path)
    assert got == str(mine)  # as the shell would read ./check.sh where it was typed
