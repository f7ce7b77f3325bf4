"""Workers' own git worktrees.

Each worker owns a worktree `<workdir>/worktrees/<repo_id>/w<i>` (made with
`git worktree add --detach`) and keeps it, with its ignored build folders, across steps and
sessions: a step checks the commit out with `git checkout --detach --force` and cleans
untracked files with `git clean -ffd` (not `-x`, so ignored build dirs survive). The user's
own checkout is never touched: no checkout, no ref, no `refs/bisect/*`.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
from pathlib import Path

from tritonbisect.core.process import git, git_common_dir, kill_strays


class Worktree:
    """A worker's own checkout, locked for the lifetime of the worker."""

    def __init__(self, repo: Path, root: Path, index: int, lock_fd: int) -> None:
        self.repo = repo
        self.path = root / f"w{index}"
        self.index = index
        self._lock_fd = lock_fd

    def checkout(self, commit: str) -> None:
        git(["checkout", "--detach", "--force", "-q", commit], cwd=self.path)
        git(["clean", "-ffdq"], cwd=self.path)

    def release(self) -> None:
        if self._lock_fd >= 0:
            with contextlib.suppress(OSError):
                fcntl.flock(self._lock_fd, fcntl.LOCK_UN)
                os.close(self._lock_fd)
            self._lock_fd = -1


def acquire_worktree(repo: Path, workdir: Path, repo_id: str, *, start: int = 0) -> Worktree:
    """Lock the first free worktree slot of this repository (creating the worktree if needed).

    A slot whose folder is a worktree of another clone with the same identity is left alone.
    """
    root = workdir / "worktrees" / repo_id
    root.mkdir(parents=True, exist_ok=True)
    repo_common = git_common_dir(repo)
    index = start
    while True:
        lock_path = root / f"w{index}.lock"
        fd = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            index += 1
            continue
        path = root / f"w{index}"
        if path.exists():
            common = git_common_dir(path) if (path / ".git").exists() else None
            if common is not None and repo_common is not None and common != repo_common:
                # a worktree of another clone: not ours to reuse
                fcntl.flock(fd, fcntl.LOCK_UN)
                os.close(fd)
                index += 1
                continue
            if common is None:
                import shutil

                shutil.rmtree(path, ignore_errors=True)
        if not path.exists():
            git(["worktree", "prune"], cwd=repo, check=False)
            git(["worktree", "add", "--detach", "-f", str(path), "HEAD"], cwd=repo)
        else:
            kill_strays(path)
        return Worktree(repo, root, index, fd)

