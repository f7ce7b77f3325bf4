"""A fork's patch stack replayed on an upstream LLVM commit, in a worker's own worktree.

For each patch (a fork commit, oldest first) at upstream commit U:

    applies (git apply --check)           applied
    its reverse applies (-R --check)      already in U's tree: left out (a cherry-pick that
                                          landed upstream; a revert of a change not yet made)
    neither: a three-way apply            applied, or a conflict: the step cannot be built
                                          (BUILD_FAILED, skipped as an unbuildable commit is)

The patched tree is committed as an object of its own (no ref; fixed identity, and the
dates of U, so the same replay always gives the same sha) and checked out: the LLVM and
Triton builds are cached under that sha, never under U's. No patch applied: U itself.
"""

from __future__ import annotations

import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tritonbisect.core.gitrun import failed, run_git
from tritonbisect.core.process import clean_env

REPLAY_FILE = "fork-patches.json"
_IDENTITY = {
    "GIT_AUTHOR_NAME": "tritonbisect", "GIT_AUTHOR_EMAIL": "tritonbisect@localhost",
    "GIT_COMMITTER_NAME": "tritonbisect", "GIT_COMMITTER_EMAIL": "tritonbisect@localhost",
}


@dataclass
class Replayed:
    base: str
    commit: str | None = None  # what to build: the patched commit, or base; None on a conflict
    applied: list[str] = field(default_factory=list)
    present: list[str] = field(default_factory=list)  # already in base's tree
    conflict: str | None = None  # the patch that did not apply
    files: list[str] = field(default_factory=list)

    def describe(self) -> str:
        if self.conflict:
            return (f"the fork patch {self.conflict[:12]} does not apply at {self.base[:12]}"
                    + (f" (conflict in {', '.join(self.files[:5])})" if self.files else ""))
        parts = [f"{len(self.applied)} fork patch{'es' if len(self.applied) != 1 else ''} replayed"]
        if self.present:
            parts.append(f"{len(self.present)} already in upstream's tree")
        return f"LLVM {self.base[:12]} + " + ", ".join(parts)

    def to_dict(self) -> dict[str, Any]:
        return {"base": self.base, "commit": self.commit, "applied": self.applied, "present": self.present,
                "conflict": self.conflict, "files": self.files}


def _git(worktree: Path, *args: str, data: bytes | None = None,
         env: Mapping[str, str] | None = None) -> subprocess.CompletedProcess[bytes]:
    # core.gitrun: no hook of the repository runs (a checkout would run post-checkout), and
    # the worktree's git folder is the one its repository records
    return run_git(args, cwd=Path(worktree), env=clean_env(), extra_env=env, input=data, text=False, timeout=1800)


def _ok(proc: subprocess.CompletedProcess[bytes], what: str) -> str:
    if proc.returncode != 0:
        raise failed(proc, what.split())
    return proc.stdout.decode(errors="replace")


def replay(worktree: Path, base: str, patches: Sequence[str]) -> Replayed:
    """Replay `patches` on `base`, which is checked out in `worktree` (a checkout of our own:
    it is reset). GitError when git itself fails."""
    out = Replayed(base=base)
    _ok(_git(worktree, "reset", "-q", "--hard", base), "reset")
    for patch in patches:
        diff = _git(worktree, "diff-tree", "-p", "--binary", "--full-index", "--no-color", f"{patch}^", patch)
        text = _ok(diff, "diff-tree").encode()
        if not text.strip():
            out.present.append(patch)  # an empty commit changes nothing
            continue
        if _git(worktree, "apply", "--check", "--index", "-", data=text).returncode == 0:
            _ok(_git(worktree, "apply", "--index", "-", data=text), "apply")
            out.applied.append(patch)
        elif _git(worktree, "apply", "--check", "-R", "--index", "-", data=text).returncode == 0:
            out.present.append(patch)
        elif _git(worktree, "apply", "--3way", "--index", "-", data=text).returncode == 0 and not _unmerged(worktree):
            out.applied.append(patch)
        else:
            out.conflict = patch
            out.files = _unmerged(worktree) or _touched(worktree, patch)
            _ok(_git(worktree, "reset", "-q", "--hard", base), "reset")
            return out
    if not out.applied:
        out.commit = base
        return out
    tree = _ok(_git(worktree, "write-tree"), "write-tree").strip()
    date = _ok(_git(worktree, "log", "-1", "--format=%cI", base), "log").strip()
    message = f"{base[:12]} with the fork patches {', '.join(p[:12] for p in out.applied)} (tritonbisect)\n"
    env = {**_IDENTITY, "GIT_AUTHOR_DATE": date, "GIT_COMMITTER_DATE": date}
    commit = _ok(_git(worktree, "commit-tree", tree, "-p", base, "-m", message, env=env), "commit-tree").strip()
    _ok(_git(worktree, "checkout", "--detach", "--force", "-q", commit), "checkout")
    out.commit = commit
    return out


def _unmerged(worktree: Path) -> list[str]:
    return sorted(set(_git(worktree, "diff", "--name-only", "--diff-filter=U").stdout.decode().split()))


def _touched(worktree: Path, patch: str) -> list[str]:
    return _git(worktree, "diff-tree", "--no-commit-id", "--name-only", "-r", patch).stdout.decode().split()


__all__ = ["REPLAY_FILE", "Replayed", "replay"]
