"""Which lines of a failing test's output make its step an infrastructure failure: the
built-in patterns, `--infra-pattern REGEX`, `--no-infra-patterns`, on the bisectors and on
`step`. Real git histories, the real CLI in a subprocess."""

from __future__ import annotations

from pathlib import Path

import pytest

from engine_repo import BUILD, git, journal, last_json, linear, tb

# a kernel test of a network client: it prints the error it checks for, on purpose
PRINTS = "grep -q ok out/state || { echo 'kernel: Connection refused by the mock server (expected)'; exit 1; }"


def _run(repo: Path, home: Path, good: str, *extra: str, test: str = PRINTS):
    return tb("run", "--repo", str(repo), "--good", good, "--bad", "main", "--build", BUILD,
              "--test", test, "--json", *extra, cwd=repo, home=home)


def test_a_built_in_pattern_aborts_and_says_which_line_and_how_to_turn_it_off(tmp_path: Path) -> None:
    repo, home = tmp_path / "repo", tmp_path / "home"
    shas = linear(repo, 12, culprit=7)
    proc = _run(repo, home, shas[0])
    assert proc.returncode == 4, proc.stderr
    out = last_json(proc.stdout)
    assert out["status"] == "aborted"
    said = "'kernel: Connection refused by the mock server (expected)'"
    assert said in out["reason"] and "built-in infra pattern 'Connection refused'" in out["reason"]
    assert "--no-infra-patterns" in out["reason"] and said in proc.stderr
    bad = [r for r in journal(home, out["session"]) if r["commit"] == shas[11]]
    assert bad and bad[-1]["kind"] == "infra" and bad[-1]["verdict"] == "abort"
    md = tb("report", out["session"], cwd=repo, home=home).stdout
    assert said in md


def test_no_infra_patterns_lets_the_failure_be_a_verdict(tmp_path: Path) -> None:
    repo, home = tmp_path / "repo", tmp_path / "home"
    shas = linear(repo, 12, culprit=7)
    proc = _run(repo, home, shas[0], "--no-infra-patterns")
    assert proc.returncode == 0, proc.stderr
    out = last_json(proc.stdout)
    assert out["culprit"] == shas[7]
    # kept with the session: a resume reads the output the same way
    again = tb("resume", out["session"], "--json", cwd=repo, home=home)
    assert again.returncode == 0 and last_json(again.stdout)["culprit"] == shas[7]


def test_an_infra_pattern_of_ones_own(tmp_path: Path) -> None:
    repo, home = tmp_path / "repo", tmp_path / "home"
    shas = linear(repo, 12, culprit=7)
    test = "grep -q ok out/state || { echo 'CUDA driver version is insufficient for CUDA runtime version'; exit 1; }"
    plain = _run(repo, home, shas[0], test=test)
    assert plain.returncode == 0, plain.stderr  # not a built-in pattern: a failure
    proc = _run(repo, home, shas[0], "--infra-pattern", r"CUDA driver version is \w+", test=test)
    assert proc.returncode == 4, proc.stderr
    reason = last_json(proc.stdout)["reason"]
    assert "(--infra-pattern 'CUDA driver version is " in reason
    assert "'CUDA driver version is insufficient for CUDA runtime version'" in reason
    # with the built-in ones off, only one's own count
    mine = _run(repo, home, shas[0], "--no-infra-patterns", "--infra-pattern", "mock server")
    assert mine.returncode == 4 and "--infra-pattern 'mock server'" in last_json(mine.stdout)["reason"]


def test_the_command_line_the_log_starts_with_is_not_the_tests_output(tmp_path: Path) -> None:
    # the log's first line is the command: it names "Connection refused", the output does not
    repo, home = tmp_path / "repo", tmp_path / "home"
    shas = linear(repo, 12, culprit=7)
    test = "grep -q ok out/state || { false && echo 'Connection refused'; exit 1; }"
    proc = _run(repo, home, shas[0], test=test)
    assert proc.returncode == 0, proc.stderr
    assert last_json(proc.stdout)["culprit"] == shas[7]


@pytest.mark.parametrize(("args", "needle"), [
    (["--infra-pattern", "("], "--infra-pattern '(' is not a regular expression"),
    (["--infra-pattern", ""], "--infra-pattern needs a regular expression"),
])
def test_a_bad_pattern_is_one_line_and_exit_2(tmp_path: Path, args: list[str], needle: str) -> None:
    repo, home = tmp_path / "repo", tmp_path / "home"
    shas = linear(repo, 6, culprit=3)
    proc = _run(repo, home, shas[0], *args)
    assert proc.returncode == 2
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and needle in lines[0], proc.stderr
    assert not (home / "sessions").exists()


def test_step_reads_the_same_rule(tmp_path: Path) -> None:
    repo, home = tmp_path / "repo", tmp_path / "home"
    shas = linear(repo, 12, culprit=7)
    git(repo, "checkout", "-q", "--detach", shas[9])
    proc = tb("step", "--build", BUILD, "--test", PRINTS, cwd=repo, home=home)
    assert proc.returncode == 128 and "Connection refused by the mock server" in proc.stderr
    proc = tb("step", "--build", BUILD, "--test", PRINTS, "--no-infra-patterns", cwd=repo, home=home)
    assert proc.returncode == 1 and " fail -> bad" in proc.stderr
    proc = tb("step", "--build", BUILD, "--test", PRINTS, "--no-infra-patterns", "--infra-pattern", "mock",
              cwd=repo, home=home)
    assert proc.returncode == 128 and "--infra-pattern 'mock'" in proc.stderr
    # the whole of git bisect run, with the output read as a failure
    git(repo, "bisect", "start", shas[11], shas[0])
    out = git(repo, "bisect", "run", *_tb_argv(), "step", "--build", BUILD, "--test", PRINTS, "--no-infra-patterns",
              "--workdir", str(home))
    assert f"{shas[7]} is the first bad commit" in out
    git(repo, "bisect", "reset")


def _tb_argv() -> list[str]:
    import sys

    return [sys.executable, "-m", "tritonbisect.cli"]
