"""Git plumbing the build recipes share: helper worktrees (an LLVM or Triton checkout a
worker owns besides the bisected one) and resolving pinned commits.

Every git call goes through `core.gitrun` with `base_build_env()`: hooks off, a user's
GIT_DIR/GIT_WORK_TREE (e.g. when run from a hook) cannot redirect it, and a helper worktree's
git folder is the one its repository records, whatever a build wrote into its `.git`.
"""

from __future__ import annotations

import shutil
import threading
from pathlib import Path

from tritonbisect.core.gitrun import GitError, pin_worktree, run_git
from tritonbisect.core.gitrun import git as run_checked
from tritonbisect.core.process import clean_env
from tritonbisect.core.secrets import without_secrets


class GitFailure(GitError):
    """A git operation on a helper worktree failed (INFRA)."""


class PinMissing(Exception):
    """The commit does not say which LLVM it needs (BUILD_FAILED: it cannot be built)."""


def base_build_env() -> dict[str, str]:
    """The environment builds, tests and git calls start from: the engine's clean one, without
    the secrets the user did not pass by name (core/secrets.py)."""
    return without_secrets(clean_env())


def resolve_commit(repo: Path, rev: str, *, what: str) -> str:
    """The full sha of rev in repo; GitFailure (one line, with the fix) when it is absent."""
    proc = run_git(["rev-parse", "--verify", "-q", f"{rev}^{{commit}}"], cwd=Path(repo), timeout=120,
                   env=base_build_env())
    sha = proc.stdout.strip()
    if proc.returncode != 0 or not sha:
        raise GitFailure(f"{what} not found in {repo}; fetch it first (git -C {repo} fetch origin)")
    return sha


# `git worktree add/prune` edit the shared repository's metadata: one worker at a time
_WT_LOCK = threading.Lock()


def checkout_worktree(repo: Path, path: Path, commit: str) -> Path:
    """A detached worktree of repo at path, at commit; untracked files removed, ignored build
    outputs (e.g. python/build) kept for incremental builds."""

    def git(*args: str, cwd: Path) -> str:
        try:
            return run_checked(args, cwd=cwd, timeout=600, env=base_build_env(), where=True)
        except GitError as exc:
            raise GitFailure(exc.message, status=exc.status) from None

    common = Path(git("rev-parse", "--path-format=absolute", "--git-common-dir", cwd=repo).strip())
    with _WT_LOCK:
        # the repository's own records say whether this is its worktree (a `.git` in the
        # folder may have been written by a build)
        if pin_worktree(common, path) is None:
            if path.exists() or path.is_symlink():
                shutil.rmtree(path) if path.is_dir() and not path.is_symlink() else path.unlink()
            path.parent.mkdir(parents=True, exist_ok=True)
            git("worktree", "prune", cwd=repo)
            git("worktree", "add", "--detach", "--force", str(path), commit, cwd=repo)
            if pin_worktree(common, path) is None:
                raise GitFailure(f"git worktree add made no worktree of {repo} at {path}")
            return path
    git("checkout", "--detach", "--force", commit, cwd=path)
    git("clean", "-fdq", cwd=path)
    return path


__all__ = ["GitFailure", "PinMissing", "base_build_env", "checkout_worktree",
           "resolve_commit"]
