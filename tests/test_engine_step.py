"""`tritonbisect step` and the bash scripts for `git bisect run`: only 0/1/125/128 ever."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

import tritonbisect
from engine_repo import BUILD, CRASH_TEST, TEST, env_for, git, linear, tb

SCRIPTS = Path(tritonbisect.__file__).parent / "scripts"


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[str]]:
    path = tmp_path_factory.mktemp("step") / "repo"
    shas = linear(path, 12, culprit=7, broken=[3])
    return path, shas


def _step(repo: Path, home: Path, commit: str, *args: str) -> subprocess.CompletedProcess[str]:
    git(repo, "checkout", "-q", "--detach", commit)
    return tb("step", *args, cwd=repo, home=home)


@pytest.mark.parametrize(
    ("index", "build", "test", "code", "kind"),
    [
        (0, BUILD, TEST, 0, "pass"),
        (9, BUILD, TEST, 1, "fail"),
        (9, BUILD, CRASH_TEST, 1, "crash"),  # a segfault (139) is bad, never passed through
        (9, BUILD, "exit 125", 1, "fail"),  # a test's own 125 is a failure, not a skip
        (0, BUILD, "kill -SEGV $$", 1, "crash"),
        (3, BUILD, TEST, 125, "build_failed"),  # does not build: skip
        (0, BUILD, "exit 200", 1, "fail"),
    ],
)
def test_step_exit_codes(repo, tmp_path: Path, index, build, test, code, kind) -> None:
    path, shas = repo
    proc = _step(path, tmp_path, shas[index], "--build", build, "--test", test)
    assert proc.returncode == code, proc.stderr
    assert f" {kind} -> " in proc.stderr


def test_step_tool_problems_abort_with_128(repo, tmp_path: Path) -> None:
    path, shas = repo
    assert _step(path, tmp_path, shas[0], "--build", BUILD).returncode == 128  # no --test
    assert _step(path, tmp_path, shas[0], "--test", "./missing.sh").returncode == 128
    assert _step(path, tmp_path, shas[0], "--test", "true", "--bogus").returncode == 128
    outside = tmp_path / "plain"
    outside.mkdir()
    assert tb("step", "--test", "true", cwd=outside, home=tmp_path).returncode == 128


def test_git_bisect_run_with_the_script(tmp_path: Path) -> None:
    repo, home = tmp_path / "repo", tmp_path / "home"
    shas = linear(repo, 30, culprit=17, broken=[8, 9, 10])
    git(repo, "bisect", "start", shas[-1], shas[0])
    proc = subprocess.run(
        ["git", "bisect", "run", "bash", str(SCRIPTS / "bisect-step.sh"), "--build", BUILD, "--test", CRASH_TEST],
        cwd=repo,
        env=env_for(home),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert f"{shas[17]} is the first bad commit" in proc.stdout
    git(repo, "bisect", "reset")


def test_scripts_are_shipped_and_valid_bash() -> None:
    for name in ("bisect-step.sh", "triton-step.sh"):
        path = SCRIPTS / name
        assert path.is_file()
        assert subprocess.run(["bash", "-n", str(path)], check=False).returncode == 0
