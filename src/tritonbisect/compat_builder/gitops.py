"""Git operations that change things (worktrees, the builder's commits) and diffs.

Reading history (revisions, ancestry, files at a commit, ranges) is bisect.history.History.
Every command goes through core.gitrun (hooks off); the session's worktree, which a model
and the claude CLI write, is attached to its repository (`attach`), so git never reads the
`.git` they could have rewritten."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from tritonbisect.core.gitrun import GitError, pin_worktree, run_git
from tritonbisect.core.gitrun import git as run_checked

COMMIT_NAME = "compat-builder"
COMMIT_EMAIL = "compat-builder@tritonbisect.invalid"


def git(cwd: Path, *args: str, env: Mapping[str, str] | None = None, check: bool = True) -> str:
    return run_checked(args, cwd=Path(cwd), extra_env={"LC_ALL": "C", **(env or {})}, check=check, where=True)


def ok(cwd: Path, *args: str) -> bool:
    return run_git(args, cwd=Path(cwd)).returncode == 0


def diff(repo: Path, a: str, b: str, paths: list[str] | None = None) -> str:
    args = ["diff", "--no-color", "--no-ext-diff", a, b]
    if paths is not None:
        if not paths:
            return ""
        args += ["--", *paths]
    return git(repo, *args)


# --- worktrees --------------------------------------------------------------------------
def add_worktree(repo: Path, path: Path, commit: str, *, branch: str | None = None) -> None:
    """A worktree of `repo` at `commit` (on a new `branch`, else detached)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    git(repo, "worktree", "prune")
    if branch:
        git(repo, "worktree", "add", "-b", branch, str(path), commit)
    else:
        git(repo, "worktree", "add", "--detach", str(path), commit)
    attach(repo, path)


def attach(repo: Path, worktree: Path) -> None:
    """Run every later git command in `worktree` with the git folder `repo` records for it,
    never the one its `.git` names (a model's edits or a build may have rewritten it)."""
    common = Path(git(repo, "rev-parse", "--path-format=absolute", "--git-common-dir").strip())
    if pin_worktree(common, Path(worktree)) is None:
        raise GitError(f"{worktree} is not a worktree of {repo}: remove it and run `git -C {repo} worktree prune`")


def reset_hard(worktree: Path, commit: str) -> None:
    git(worktree, "reset", "--quiet", "--hard", commit)
    git(worktree, "clean", "-fdq")


def head(worktree: Path) -> str:
    return git(worktree, "rev-parse", "HEAD").strip()


def branch_exists(repo: Path, branch: str) -> bool:
    return ok(repo, "rev-parse", "--verify", "--quiet", f"refs/heads/{branch}")


def commit_all(worktree: Path, base: str, message: str) -> str | None:
    """Commit the worktree's whole state as ONE commit on top of `base`; None if it equals base.

    Whatever happened in the worktree (edits, or commits made by an external agent) is
    squashed: the branch ends at base + one commit. The commit date is base's committer date,
    so that the same fix of the same base is the same commit (a resumed map reproduces the
    uninterrupted one).
    """
    git(worktree, "add", "-A")
    tree = git(worktree, "write-tree").strip()
    if tree == git(worktree, "rev-parse", f"{base}^{{tree}}").strip():
        git(worktree, "reset", "--quiet", "--hard", base)
        return None
    date = git(worktree, "log", "-1", "--format=%cI", base).strip()
    identity = {
        "GIT_AUTHOR_NAME": COMMIT_NAME,
        "GIT_AUTHOR_EMAIL": COMMIT_EMAIL,
        "GIT_COMMITTER_NAME": COMMIT_NAME,
        "GIT_COMMITTER_EMAIL": COMMIT_EMAIL,
        "GIT_AUTHOR_DATE": date,
        "GIT_COMMITTER_DATE": date,
    }
    sha = git(worktree, "commit-tree", tree, "-p", base, "-m", message, env=identity).strip()
    git(worktree, "reset", "--quiet", "--hard", sha)
    return sha


def changed_files(worktree: Path, base: str, commit: str | None = None) -> list[str]:
    """Paths that differ between `base` and `commit` (default: the worktree's whole state,
    new files included)."""
    if commit is None:
        git(worktree, "add", "-A")
        out = git(worktree, "diff", "--cached", "--name-only", "--no-renames", base)
    else:
        out = git(worktree, "diff", "--name-only", "--no-renames", base, commit)
    return [line for line in out.splitlines() if line]


def tree_of(repo: Path, commit: str) -> str:
    return git(repo, "rev-parse", f"{commit}^{{tree}}").strip()
