"""Workers' own git worktrees.

Each worker owns a worktree `<workdir>/worktrees/<repo_id>/w<i>` (made with
`git worktree add --detach`) and keeps it, with its ignored build folders, across steps and
sessions: a step checks the commit out with `git checkout --detach --force` and cleans
untracked files with `git clean -ffd` (not `-x`, so ignored build dirs survive). The user's
own checkout is never touched: no checkout, no ref, no `refs/bisect/*`.

A worktree's git folder is the one its repository records for it (`core.gitrun.pin_worktree`):
a build may rewrite the worktree's `.git`, and git never reads it.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

from tritonbisect.core.gitrun import (
    GitError,
    Pinned,
    claimed_repository,
    git,
    git_common_dir,
    pin_worktree,
    restore_dotgit,
)
from tritonbisect.core.lock import FileLock
from tritonbisect.core.process import kill_strays


class Worktree:
    """A worker's own checkout, locked for the lifetime of the worker."""

    def __init__(self, repo: Path, root: Path, index: int, lock: FileLock, pinned: Pinned,
                 kind: str = "w") -> None:
        self.repo = repo
        self.path = root / f"{kind}{index}"
        self.index = index
        self._lock = lock
        self.pinned = pinned  # its git folder, as the repository records it

    def restore(self) -> None:
        """Put back its `.git` as the tool made it (a step's build or test may have rewritten
        it; whoever runs git in the folder next, the user included, gets the right one)."""
        restore_dotgit(self.pinned)

    def checkout(self, commit: str) -> None:
        git(["checkout", "--detach", "--force", "-q", commit], cwd=self.path)
        git(["clean", "-ffdq"], cwd=self.path)

    def release(self) -> None:
        with contextlib.suppress(OSError):
            self._lock.release()


def acquire_worktree(repo: Path, workdir: Path, repo_id: str, *, start: int = 0, sandboxed: bool = False) -> Worktree:
    """Lock the first free worktree slot of this repository (creating the worktree if needed).

    A slot whose folder is a worktree of another clone with the same identity is left alone.
    `sandboxed` (the steps build in the sandbox): slots of their own, `s<i>` beside the
    `w<i>` of unsandboxed steps, so that what a sandboxed build leaves in its checkout (an
    ignored build folder, say) never feeds a build that runs with the user's rights; the
    worker's TRITON_HOME, LLVM build folder and helper worktrees, named after the slot, are
    apart too.
    """
    kind = "s" if sandboxed else "w"
    root = workdir / "worktrees" / repo_id
    root.mkdir(parents=True, exist_ok=True)
    repo_common = git_common_dir(repo)
    if repo_common is None:
        raise GitError(f"{repo} is not a git repository")
    index = start
    while True:
        lock_path = root / f"{kind}{index}.lock"
        lock = FileLock(lock_path)
        if not lock.acquire(wait=False):
            index += 1
            continue
        path = root / f"{kind}{index}"
        # a worktree the repository still records but whose folder is gone (an evicted
        # cache) is made again below; pinning it would write into a folder that is not there
        present = path.is_dir() and not path.is_symlink()
        pinned = pin_worktree(repo_common, path) if present else None
        if pinned is None and (path.exists() or path.is_symlink()):
            if _of_another_clone(path, repo_common):
                lock.release()
                index += 1
                continue
            _remove(path)
        if pinned is None:
            git(["worktree", "prune"], cwd=repo, check=False)
            git(["worktree", "add", "--detach", "-f", str(path), "HEAD"], cwd=repo)
            pinned = pin_worktree(repo_common, path)
            if pinned is None:
                lock.release()
                raise GitError(f"git worktree add made no worktree of {repo} at {path}")
        else:
            kill_strays(path)
        return Worktree(repo, root, index, lock, pinned, kind)


def _of_another_clone(path: Path, repo_common: Path) -> bool:
    """Whether `path` is a worktree of another repository (another clone with the same
    identity shares the workdir), as that repository records it: left alone."""
    common = claimed_repository(path)
    return common is not None and common != Path(os.path.realpath(repo_common))


def _remove(path: Path) -> None:
    import shutil

    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)
    else:
        path.unlink(missing_ok=True)

