"""Interruptions: Ctrl-C, kill -9 and a second process on the same session."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

from engine_repo import BUILD, journal, last_json, linear, popen_tb, snapshot, tb
from waiting import wait_until


def _slow_test(marker: Path, seconds: float = 0.4) -> str:
    # records each test execution, then takes a while
    return f"echo $TRITONBISECT_COMMIT >> {marker}; sleep {seconds}; grep -q ok out/state"



def _session_dir(home: Path) -> Path:
    wait_until(lambda: (home / "sessions").is_dir() and any((home / "sessions").iterdir()))
    return next((home / "sessions").iterdir())


def _n_records(sdir: Path) -> int:
    path = sdir / "journal.jsonl"
    return path.read_text().count("\n") if path.exists() else 0


def _start(repo: Path, home: Path, good: str, marker: Path):
    return popen_tb(
        "run", "--repo", str(repo), "--good", good, "--bad", "main", "--build", BUILD,
        "--test", _slow_test(marker), "--json", cwd=repo, home=home,
    )


def test_ctrl_c_saves_state_prints_resume_command_and_resume_finishes(tmp_path: Path) -> None:
    repo, home = tmp_path / "repo", tmp_path / "home"
    shas = linear(repo, 30, culprit=19)
    before = snapshot(repo)
    marker = tmp_path / "tests.log"
    proc = _start(repo, home, shas[0], marker)
    sdir = _session_dir(home)
    wait_until(lambda: _n_records(sdir) >= 3)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == 130, err
    assert f"tritonbisect resume {sdir.name}" in err
    done_before = journal(home, sdir.name)
    res = tb("resume", sdir.name, "--json", cwd=repo, home=home)
    assert res.returncode == 0, res.stderr
    assert last_json(res.stdout)["culprit"] == shas[19]
    after = journal(home, sdir.name)
    assert after[: len(done_before)] == done_before
    searched = [r["commit"] for r in after if r["role"] == "search"]
    assert len(searched) == len(set(searched)), "a finished step was run again"
    assert snapshot(repo) == before


def test_kill_9_mid_step_then_resume_does_not_rerun_finished_steps(tmp_path: Path) -> None:
    repo, home = tmp_path / "repo", tmp_path / "home"
    shas = linear(repo, 30, culprit=11)
    marker = tmp_path / "tests.log"
    proc = _start(repo, home, shas[0], marker)
    sdir = _session_dir(home)
    wait_until(lambda: _n_records(sdir) >= 3)
    # wait until the next step's test has started, then kill -9 mid-step
    n_tests = len(journal(home, sdir.name))
    wait_until(lambda: marker.exists() and len(marker.read_text().split()) > n_tests)
    os.kill(proc.pid, signal.SIGKILL)
    proc.communicate(timeout=30)
    done_before = journal(home, sdir.name)
    time.sleep(0.5)  # the orphaned test finishes on its own
    tested_before = marker.read_text().split()
    res = tb("resume", "--json", cwd=repo, home=home)  # the latest session
    assert res.returncode == 0, res.stderr
    assert last_json(res.stdout)["culprit"] == shas[11]
    after = journal(home, sdir.name)
    assert after[: len(done_before)] == done_before
    # steps finished before the kill were not run again (only the confirmations re-test)
    tested_after = marker.read_text().split()[len(tested_before):]
    finished = {r["commit"] for r in done_before if r["role"] in ("endpoint", "search")}
    confirm = [r["commit"] for r in after if r["role"] == "confirm"]
    rerun = [c for c in tested_after if c in finished and c not in confirm]
    assert rerun == []
    assert [r["seq"] for r in after] == list(range(1, len(after) + 1))


def test_second_process_on_a_running_session_is_refused(tmp_path: Path) -> None:
    repo, home = tmp_path / "repo", tmp_path / "home"
    shas = linear(repo, 12, culprit=6)
    marker = tmp_path / "tests.log"
    proc = _start(repo, home, shas[0], marker)
    try:
        sdir = _session_dir(home)
        wait_until(lambda: marker.exists())
        res = tb("resume", sdir.name, cwd=repo, home=home)
        assert res.returncode == 2
        lines = [line for line in res.stderr.splitlines() if line.strip()]
        assert len(lines) == 1 and "another tritonbisect process" in lines[0]
        status = tb("status", sdir.name, cwd=repo, home=home)
        assert "running now" in status.stdout
    finally:
        out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    assert last_json(out)["culprit"] == shas[6]
