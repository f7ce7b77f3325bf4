"""core/gitrun.py's one runner: a failing git command, wherever the tool runs it, is one GitError
(one line naming the command and what git said, exit 2 at the command line), and what each
area raises of its own is a GitError too."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from engine_repo import git as plain_git
from tritonbisect.builds.gitutil import GitFailure, checkout_worktree
from tritonbisect.builds.submodules import SubmoduleError, declared
from tritonbisect.core.errors import EXIT_USAGE, TritonBisectError
from tritonbisect.core.gitrun import GitError, git, git_common_dir
from tritonbisect.core.history import History


def _repo(tmp_path: Path) -> Path:
    repo = tmp_path / "repo"
    repo.mkdir(parents=True)
    plain_git(repo, "init", "-q")
    (repo / "f").write_text("1\n")
    plain_git(repo, "add", "f")
    plain_git(repo, "commit", "-qm", "one")
    return repo


def test_a_failing_command_is_one_line_with_its_exit_status(tmp_path: Path) -> None:
    repo = _repo(tmp_path)
    with pytest.raises(GitError) as info:
        git(["rev-parse", "--verify", "nosuch^{commit}"], cwd=repo, where=True)
    err = info.value
    assert isinstance(err, TritonBisectError) and err.exit_code == EXIT_USAGE
    assert err.status == 128 and "\n" not in err.message
    assert err.message.startswith("git rev-parse --verify nosuch^{commit} failed in ")
    assert git(["rev-parse", "--verify", "nosuch"], cwd=repo, check=False) == ""
    assert git(["cat-file", "blob", "HEAD:f"], cwd=repo, text=False) == b"1\n"


def test_git_runs_without_a_hook_or_the_callers_location_variables(tmp_path: Path) -> None:
    repo = _repo(tmp_path)
    hook = repo / ".git" / "hooks" / "pre-commit"
    hook.write_text("#!/bin/sh\ntouch HOOK_RAN\nexit 1\n")
    hook.chmod(0o755)
    other = _repo(tmp_path / "elsewhere")
    os.environ["GIT_DIR"] = str(other / ".git")  # as under `git bisect run`
    try:
        (repo / "g").write_text("2\n")
        git(["add", "g"], cwd=repo)
        git(["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "two"], cwd=repo)
    finally:
        del os.environ["GIT_DIR"]
    assert not (repo / "HOOK_RAN").exists()
    assert git(["log", "--format=%s", "-1"], cwd=repo).strip() == "two"
    assert git_common_dir(repo) == (repo / ".git").resolve()
    assert git_common_dir(tmp_path) is None


def test_history_and_the_build_helpers_raise_git_errors(tmp_path: Path) -> None:
    repo = _repo(tmp_path)
    history = History(repo)
    with pytest.raises(GitError):
        history._git("diff-tree", "nosuch")
    with pytest.raises(GitError) as info:
        checkout_worktree(repo, tmp_path / "wt", "0" * 40)
    assert isinstance(info.value, GitFailure)
    (repo / ".gitmodules").write_text("[submodule\n")  # not a config file git can read
    with pytest.raises(GitError) as sub:
        declared(repo)
    assert isinstance(sub.value, SubmoduleError) and "failed in" in sub.value.message
