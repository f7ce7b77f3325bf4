"""A commit with earlier culprits reverted, as a recipe ("revert" in builds/recipe_table.py).

`RevertRecipe(inner, reverts)` tests commit X as X with every commit of `reverts` undone
(`git revert --no-commit`, newest first; a merge against its first parent). The reverted
tree is committed as a commit object of its own (no ref, fixed identity and dates, so the
same revert of the same commit always has the same sha) and checked out in the worker's
worktree; the inner recipe then builds and tests *that* sha, so its artifact is cached under
its own key and never taken for X's.

A revert that does not apply at X is a build failure (the step is skipped under the default
--on-build-failure skip, as an unbuildable commit is); `revert.json` in the step's folder
says which files conflicted.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tritonbisect.builds.recipes import (
    PrepareResult,
    Recipe,
    StepContext,
    TestRun,
    TestSpec,
    recipe_from_config,
)
from tritonbisect.core.outcome import Kind

NAME = "revert"
REVERT_FILE = "revert.json"
_IDENTITY = {
    "GIT_AUTHOR_NAME": "tritonbisect",
    "GIT_AUTHOR_EMAIL": "tritonbisect@localhost",
    "GIT_COMMITTER_NAME": "tritonbisect",
    "GIT_COMMITTER_EMAIL": "tritonbisect@localhost",
}


@dataclass
class Reverted:
    """The outcome of reverting `reverts` on top of `base`."""

    base: str
    reverts: list[str]
    commit: str | None = None  # the reverted tree's own commit; None on a conflict
    conflict: list[str] = field(default_factory=list)  # files that conflicted
    conflict_with: str | None = None  # the revert that did not apply

    def to_dict(self) -> dict[str, Any]:
        return {
            "base": self.base,
            "reverts": self.reverts,
            "commit": self.commit,
            "conflict": self.conflict,
            "conflict_with": self.conflict_with,
        }


def _git(worktree: Path, *args: str, env: Mapping[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    from tritonbisect.core.gitrun import run_git
    from tritonbisect.core.process import clean_env

    return run_git(args, cwd=Path(worktree), env=clean_env(), extra_env=env)


def _checked(proc: subprocess.CompletedProcess[str], what: str) -> str:
    if proc.returncode != 0:
        from tritonbisect.core.gitrun import failed

        raise failed(proc, what.split())
    return proc.stdout


def revert_in(worktree: Path, base: str, reverts: Sequence[str]) -> Reverted:
    """Revert `reverts` (newest first, as given) on top of `base`, which is checked out in
    `worktree` (a checkout of our own: it is reset). On success the reverted tree is
    committed and checked out (detached); on a conflict the worktree is left at `base`."""
    out = Reverted(base=base, reverts=list(reverts))
    for culprit in reverts:
        parents = _checked(_git(worktree, "rev-list", "--parents", "-n", "1", culprit), "rev-list").split()[1:]
        args = ["revert", "--no-commit", "--no-edit"]
        if len(parents) > 1:
            args += ["-m", "1"]  # a merge is undone against its first parent
        proc = _git(worktree, *args, culprit)
        if proc.returncode != 0:
            unmerged = _git(worktree, "diff", "--name-only", "--diff-filter=U").stdout.split()
            out.conflict = sorted(set(unmerged)) or ["(git revert: " + (proc.stderr.strip().splitlines() or ["?"])[-1] + ")"]
            out.conflict_with = culprit
            _git(worktree, "revert", "--quit")
            _checked(_git(worktree, "reset", "--hard", "-q", base), "reset")
            return out
    _git(worktree, "revert", "--quit")  # no sequencer state left for the next step
    tree = _checked(_git(worktree, "write-tree"), "write-tree").strip()
    # the dates of the base: the same revert of the same commit is always the same object
    date = _checked(_git(worktree, "log", "-1", "--format=%cI", base), "log").strip()
    message = f"Revert {', '.join(c[:12] for c in reverts)} on {base[:12]} (tritonbisect)\n"
    env = {**_IDENTITY, "GIT_AUTHOR_DATE": date, "GIT_COMMITTER_DATE": date}
    commit = _checked(_git(worktree, "commit-tree", tree, "-p", base, "-m", message, env=env), "commit-tree").strip()
    _checked(_git(worktree, "checkout", "--detach", "--force", "-q", commit), "checkout")
    out.commit = commit
    return out


class RevertRecipe:
    name = NAME

    def __init__(self, inner: Recipe, reverts: Sequence[str]) -> None:
        self.inner = inner
        self.reverts = list(reverts)
        self._built: dict[tuple[str, str], str] = {}  # (commit, worktree) -> reverted commit

    def config(self) -> dict[str, Any]:
        return {"inner": {"name": self.inner.name, "config": self.inner.config()}, "reverts": self.reverts}

    @classmethod
    def from_config(cls, config: Mapping[str, Any]) -> RevertRecipe:
        inner = config["inner"]
        return cls(recipe_from_config(inner["name"], inner["config"]), config.get("reverts") or [])

    @property
    def test_spec(self) -> TestSpec | None:
        """The inner recipe's test (what the endpoint checks ask for)."""
        return self.inner.test_spec

    @property
    def caches_builds(self) -> bool:
        """As a recipe that caches: the reverted commit is made the same way each time (a
        fixed identity and date), so its build is the inner recipe's cached one where it has one."""
        return True

    def prepare(self, commit: str, ctx: StepContext) -> PrepareResult:
        try:
            reverted = revert_in(ctx.worktree, commit, self.reverts)
        except OSError as exc:
            return PrepareResult(Kind.INFRA, f"could not revert: {exc}")
        except Exception as exc:  # noqa: BLE001 - a git failure is the infrastructure's
            return PrepareResult(Kind.INFRA, str(exc)[:300])
        ctx.log_dir.mkdir(parents=True, exist_ok=True)
        (ctx.log_dir / REVERT_FILE).write_text(json.dumps(reverted.to_dict(), indent=1), encoding="utf-8")
        if reverted.commit is None:
            files = ", ".join(reverted.conflict[:5]) + (" ..." if len(reverted.conflict) > 5 else "")
            return PrepareResult(
                Kind.BUILD_FAILED,
                f"the revert of {str(reverted.conflict_with)[:12]} does not apply here (conflict in {files})",
            )
        self._built[(commit, str(ctx.worktree))] = reverted.commit
        return self.inner.prepare(reverted.commit, ctx)

    def test(self, commit: str, ctx: StepContext, *, record: bool = False) -> TestRun:
        reverted = self._built.get((commit, str(ctx.worktree)), commit)
        return self.inner.test(reverted, ctx, record=record)
