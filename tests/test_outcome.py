"""Classification of finished processes and the policy from kinds to verdicts.

The processes here are real: a shell that segfaults, aborts or exits 125 itself.
"""

from __future__ import annotations

import subprocess
import sys

import pytest

from tritonbisect.core.outcome import (
    EXIT_CODE_OF_VERDICT,
    Kind,
    Policy,
    Verdict,
    classify_build,
    classify_test,
)


def _run(script: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["bash", "-c", script], capture_output=True, text=True, check=False)


def test_segfault_in_child_is_a_crash_not_an_exit_code() -> None:
    proc = subprocess.run(
        [sys.executable, "-c", "import os, signal; os.kill(os.getpid(), signal.SIGSEGV)"],
        capture_output=True,
        text=True,
        check=False,
    )
    result = classify_test(proc.returncode, proc.stderr)
    assert result.kind is Kind.CRASH
    assert "SIGSEGV" in result.reason


def test_shell_reported_signal_death_is_a_crash() -> None:
    # bash reports a child killed by SIGABRT as exit 134
    proc = _run("bash -c 'kill -ABRT $$'; exit $?")
    assert proc.returncode == 134
    assert classify_test(proc.returncode, proc.stderr).kind is Kind.CRASH


def test_a_tests_own_125_is_a_failure_not_a_skip() -> None:
    proc = _run("echo 'something is wrong' >&2; exit 125")
    result = classify_test(proc.returncode, proc.stderr)
    assert result.kind is Kind.FAIL
    assert Policy().verdict(result.kind) is Verdict.BAD


@pytest.mark.parametrize(
    ("stderr", "kind"),
    [
        ("python: Foo.cpp:12: void f(): Assertion `x' failed.", Kind.CRASH),
        ("LLVM ERROR: Cannot select: intrinsic", Kind.CRASH),
        ("triton.compiler.errors.CompilationError: at 3:4", Kind.COMPILE_ERROR),
        ("OSError: [Errno 28] No space left on device", Kind.INFRA),
        ("Traceback (most recent call last):\nAssertionError: values differ", Kind.FAIL),
    ],
)
def test_stderr_patterns(stderr: str, kind: Kind) -> None:
    assert classify_test(1, stderr).kind is kind


def test_structured_result_wins_over_exit_code() -> None:
    assert classify_test(1, "", result={"status": "mismatch"}).kind is Kind.MISMATCH
    assert classify_test(125, "", result={"status": "env_unusable"}).kind is Kind.BUILD_FAILED
    assert classify_test(4, "", result={"status": "runtime_error"}).kind is Kind.CRASH
    # a missing golden says nothing about the commit: it must not count as bad
    assert classify_test(2, "", result={"status": "usage_error"}).kind is Kind.INFRA


def test_timeout_and_signal_win_over_result() -> None:
    assert classify_test(None, "", timed_out=True).kind is Kind.TIMEOUT
    assert classify_test(-11, "", result={"status": "pass"}).kind is Kind.CRASH


def test_default_policy() -> None:
    policy = Policy()
    assert policy.verdict(Kind.PASS) is Verdict.GOOD
    for kind in (Kind.FAIL, Kind.CRASH, Kind.COMPILE_ERROR, Kind.MISMATCH, Kind.TIMEOUT):
        assert policy.verdict(kind) is Verdict.BAD
    assert policy.verdict(Kind.BUILD_FAILED) is Verdict.SKIP
    assert policy.verdict(Kind.INFRA) is Verdict.ABORT


def test_narrowed_and_fixed_policies() -> None:
    crash = Policy(regress="crash")
    assert crash.verdict(Kind.CRASH) is Verdict.BAD
    assert crash.verdict(Kind.MISMATCH) is Verdict.SKIP
    assert crash.verdict(Kind.PASS) is Verdict.GOOD
    fixed = Policy(regress="fixed")
    assert fixed.verdict(Kind.PASS) is Verdict.BAD
    assert fixed.verdict(Kind.FAIL) is Verdict.GOOD
    assert Policy(on_build_failure="bad").verdict(Kind.BUILD_FAILED) is Verdict.BAD
    with pytest.raises(ValueError):
        Policy(regress="sometimes")


def test_exit_protocol_is_closed() -> None:
    assert set(EXIT_CODE_OF_VERDICT.values()) == {0, 1, 125, 128}


def test_build_classification_with_real_processes() -> None:
    compile_error = _run("echo 'foo.c:3:1: error: expected ;' >&2; exit 1")
    assert classify_build(compile_error.returncode, compile_error.stderr).kind is Kind.BUILD_FAILED
    missing = _run("definitely-not-a-compiler-xyz --version")
    assert missing.returncode == 127
    assert classify_build(missing.returncode, missing.stderr).kind is Kind.INFRA
    oom = _run("kill -KILL $$")
    assert classify_build(oom.returncode, "").kind is Kind.INFRA
    disk = _run("echo 'cc1: fatal error: No space left on device' >&2; exit 1")
    assert "No space left" in classify_build(disk.returncode, disk.stderr).reason
    assert classify_build(0, "").kind is Kind.PASS
