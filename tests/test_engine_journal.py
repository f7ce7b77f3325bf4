"""The session record: atomic state, the journal's crash tolerance, the lock; the demo."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from engine_repo import tb
from tritonbisect.core.errors import InputError, SessionLockedError
from tritonbisect.core.outcome import Kind, Policy, Verdict, combine_runs
from tritonbisect.options.bisect_options import bisect_settings, check_test_command
from tritonbisect.session.journal import (
    Journal,
    SessionLock,
    atomic_write_json,
    read_json_file,
    replay_verdicts,
)


def test_atomic_write_leaves_no_temp_file(tmp_path: Path) -> None:
    path = tmp_path / "session.json"
    atomic_write_json(path, {"a": 1})
    atomic_write_json(path, {"a": 2})
    assert read_json_file(path) == {"a": 2}
    assert [p.name for p in tmp_path.iterdir()] == ["session.json"]


def test_truncated_last_line_is_ignored_and_repaired(tmp_path: Path) -> None:
    j = Journal(tmp_path / "journal.jsonl")
    j.append({"seq": 1, "phase": "main", "role": "search", "commit": "a", "verdict": "good"})
    j.append({"seq": 2, "phase": "main", "role": "search", "commit": "b", "verdict": "bad"})
    with open(j.path, "ab") as f:
        f.write(b'{"seq": 3, "phase": "main", "comm')  # the process died mid-write
    assert [r["seq"] for r in j.records()] == [1, 2]
    j.append({"seq": 3, "phase": "main", "role": "search", "commit": "c", "verdict": "skip"})
    assert [r["seq"] for r in j.records()] == [1, 2, 3]
    assert j.path.read_text().count("\n") == 3


def test_corrupt_middle_line_names_the_line(tmp_path: Path) -> None:
    path = tmp_path / "journal.jsonl"
    path.write_text('{"seq": 1}\n{broken\n{"seq": 3}\n')
    with pytest.raises(InputError, match="line 2"):
        Journal(path).records()


def test_replay_latest_verdict_wins_and_abort_is_not_a_verdict() -> None:
    records = [
        {"phase": "p", "role": "endpoint", "commit": "bad", "verdict": "bad"},
        {"phase": "p", "role": "search", "commit": "x", "verdict": "bad"},
        {"phase": "p", "role": "search", "commit": "x", "verdict": "good"},
        {"phase": "p", "role": "search", "commit": "y", "verdict": "abort"},
        {"phase": "p", "role": "confirm", "commit": "z", "verdict": "good"},
        {"phase": "q", "role": "search", "commit": "x", "verdict": "skip"},
    ]
    assert replay_verdicts(records) == {"p": {"bad": "bad", "x": "good"}, "q": {"x": "skip"}}


def test_a_record_is_written_with_its_version_and_read_typed(tmp_path: Path) -> None:
    from tritonbisect.session.step_record import JOURNAL_VERSION

    j = Journal(tmp_path / "journal.jsonl")
    j.append({"seq": 1, "phase": "main", "role": "search", "commit": "a", "verdict": "bad", "kind": "flaky",
              "perf": {"decision": "undecided"}, "tests": [{"exit": 1}]})
    (raw,) = j.records()
    assert raw["v"] == JOURNAL_VERSION and list(raw)[0] == "v"
    (step,) = j.steps()
    assert (step.seq, step.role, step.commit) == (1, "search", "a")
    assert step.verdict is Verdict.BAD and step.kind is Kind.FLAKY
    assert step.observed and step.says_something and step.perf_undecided
    assert step.tests == ({"exit": 1},) and step.raw == raw


def test_a_record_of_a_newer_version_or_a_wrong_type_is_one_line(tmp_path: Path) -> None:
    path = tmp_path / "journal.jsonl"
    path.write_text('{"seq": 1}\n{"v": 99, "seq": 2}\n{"seq": 3}\n')
    with pytest.raises(InputError, match=r"line 2 was written by a newer tritonbisect \(journal version 99; "
                       r"this one reads up to 1\): upgrade tritonbisect"):
        Journal(path).records()
    path.write_text('{"seq": 1}\n{"seq": true}\n{"seq": 3}\n')
    with pytest.raises(InputError, match=r"line 2: its 'seq' is bool"):
        Journal(path).records()
    path.write_text('{"seq": 1, "perf": [1]}\n{"seq": 3}\n')
    with pytest.raises(InputError, match=r"line 1: its 'perf' is list"):
        Journal(path).records()


def test_a_verdict_or_kind_no_enum_has_is_kept_apart() -> None:
    from tritonbisect.session.step_record import StepRecord

    step = StepRecord.of({"role": "search", "commit": "c", "verdict": "maybe", "kind": "a_domains_own"})
    assert step.verdict is None and not step.says_something
    assert step.kind == "a_domains_own" and not isinstance(step.kind, Kind)
    # a journal written before records had a version reads as version 1, as it always did
    assert replay_verdicts([{"phase": "p", "role": "search", "commit": "c", "verdict": "good"}]) == {"p": {"c": "good"}}


def test_lock_refuses_a_second_holder(tmp_path: Path) -> None:
    first = SessionLock(tmp_path / "lock", "s1")
    first.acquire()
    second = SessionLock(tmp_path / "lock", "s1")
    with pytest.raises(SessionLockedError, match=f"pid {os.getpid()}"):
        second.acquire()
    assert second.is_locked_elsewhere()
    first.release()
    second.acquire()
    second.release()


def test_majority_and_flaky() -> None:
    policy = Policy()
    kind, verdict, reason = combine_runs([Kind.PASS, Kind.FAIL, Kind.PASS], ["", "", ""], policy)
    assert (kind, verdict) == (Kind.FLAKY, Verdict.GOOD)
    assert "2 of 3" in reason
    kind, verdict, _ = combine_runs([Kind.PASS, Kind.CRASH], ["", ""], policy)
    assert (kind, verdict) == (Kind.FLAKY, Verdict.SKIP)
    kind, verdict, _ = combine_runs([Kind.CRASH, Kind.CRASH, Kind.FAIL], ["", "", ""], policy)
    assert (kind, verdict) == (Kind.CRASH, Verdict.BAD)


def test_settings_validation(tmp_path: Path) -> None:
    s = bisect_settings(jobs=2, repeat=3, env=("A=1", "B=x=y"), workdir=str(tmp_path), test="true")
    assert s.executor.env == {"A": "1", "B": "x=y"} and s.workdir == tmp_path.resolve()
    assert (s.executor.jobs, s.executor.repeat) == (2, 3)
    with pytest.raises(InputError, match="mutually exclusive"):
        bisect_settings(test="t", repro="x")
    with pytest.raises(InputError, match="--repro"):
        bisect_settings(test="t", kernel="k")
    with pytest.raises(InputError, match="timeout"):
        bisect_settings(test="t", timeout=0)


def test_repro_not_available_is_one_clear_line(tmp_path: Path) -> None:
    trace = tmp_path / "t.ndjson"
    trace.write_text("{}\n")
    s = bisect_settings(repro=str(trace), kernel="k", workdir=str(tmp_path))
    try:
        s.test_spec(out_dir=tmp_path / "oracle")
    except InputError as exc:
        assert "\n" not in exc.message
    # (once the oracle is implemented, a TestSpec comes back instead)


def test_test_command_paths(tmp_path: Path) -> None:
    (tmp_path / "t.sh").write_text("true\n")
    assert check_test_command("grep -q ok x", cwd=tmp_path) == "grep -q ok x"
    assert check_test_command("python -m pytest -x", cwd=tmp_path) == "python -m pytest -x"
    assert check_test_command("./t.sh --fast", cwd=tmp_path) == f"{tmp_path / 't.sh'} --fast"
    assert check_test_command("bash t.sh", cwd=tmp_path) == f"bash {tmp_path / 't.sh'}"
    with pytest.raises(InputError, match="nope.py"):
        check_test_command("python3 nope.py", cwd=tmp_path)


def test_demo_finds_the_planted_regression(tmp_path: Path) -> None:
    proc = tb("demo", "--json", cwd=tmp_path, home=tmp_path / "home", timeout=60)
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert data["status"] == "found" and data["confidence"] == "high"
    steps = data["phases"][0]["steps"]
    assert any(s["kind"] == "build_failed" for s in steps)
    assert any(s["kind"] == "crash" for s in steps)
    assert "found the planted regression" in proc.stderr
    assert not (tmp_path / "home").exists()  # the demo keeps everything in a temp dir


def test_stray_processes_left_in_a_worktree_are_killed(tmp_path: Path) -> None:
    import subprocess

    from tritonbisect.core.process import kill_strays

    stray = subprocess.Popen(["sleep", "30"], cwd=tmp_path, start_new_session=True)
    try:
        assert stray.pid in kill_strays(tmp_path)
        assert stray.wait(timeout=5) == -9
    finally:
        stray.kill()
