"""The keeper (core/keeper.py) reports the command's own status: a command killed by a signal
is that command's crash, while a keeper killed before the command ended (the command killed
its parent, say) is no outcome of the command at all: a harness failure, retried, then an
abort. Real processes throughout."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

import pytest

from engine_repo import linear, tb
from tritonbisect.core.process import CancelToken, CommandLost, run_logged


def _run(cmd: str, tmp_path: Path, **kwargs):
    log = tmp_path / "cmd.log"
    return run_logged(cmd, cwd=tmp_path, env=dict(os.environ), log=log, **kwargs), log


def test_a_command_killed_by_sigkill_is_its_own_outcome(tmp_path):
    res, log = _run("kill -9 $$", tmp_path, timeout=30)
    assert res.returncode == -9 and not res.timed_out
    assert "Traceback" not in log.read_text()
    res, _ = _run("kill -SEGV $$", tmp_path, timeout=30)
    assert res.returncode == -11
    res, _ = _run("exit 3", tmp_path, timeout=30)
    assert res.returncode == 3


def test_a_killed_keeper_is_no_outcome_of_the_command(tmp_path):
    marker = tmp_path / "still-running"
    start = time.monotonic()
    with pytest.raises(CommandLost, match="its keeper.*killed by signal 9"):
        _run(f"kill -9 $PPID; sleep 2; touch {marker}", tmp_path, timeout=60)
    assert time.monotonic() - start < 30
    time.sleep(3)
    assert not marker.exists()  # what the command left running was ended with it
    assert "its outcome is unknown" in (tmp_path / "cmd.log").read_text()


def test_the_command_cannot_write_the_keepers_report(tmp_path):
    res, log = _run("ls /proc/$$/fd; true", tmp_path, timeout=30)  # the shell's own descriptors
    assert res.returncode == 0
    fds = set(log.read_text().splitlines()[2:])
    assert fds <= {"0", "1", "2", "255"}, fds


def test_a_cancelled_command_ends_without_a_traceback(tmp_path):
    token = CancelToken()
    threading.Timer(0.5, token.cancel).start()
    res, log = _run("sleep 30", tmp_path, timeout=60, token=token)
    assert res.cancelled and res.seconds < 20
    assert "Traceback" not in log.read_text()


def test_a_step_whose_test_kills_its_keeper_is_an_infrastructure_failure(tmp_path):
    repo, workdir = tmp_path / "repo", tmp_path / "workdir"
    linear(repo, 2, culprit=1)
    killer = tb("step", "--test", "kill -9 $PPID", "--workdir", str(workdir), cwd=repo, home=workdir, timeout=120)
    assert killer.returncode == 128, killer.stderr  # abort: git bisect run stops
    assert "infra -> abort" in killer.stderr and "infrastructure failure, twice" in killer.stderr
    assert "its keeper" in killer.stderr and "crash" not in killer.stderr
    own = tb("step", "--test", "kill -9 $$", "--workdir", str(workdir), cwd=repo, home=workdir, timeout=120)
    assert own.returncode == 1 and "crash -> bad" in own.stderr, own.stderr
