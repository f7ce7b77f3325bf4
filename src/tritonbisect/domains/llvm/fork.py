"""LLVM pins into a fork: the upstream base, and the fork's own commits as a patch stack.

Triton often pins a commit of its fork (triton-lang/llvm-project): upstream plus
cherry-picks and local reverts of upstream changes that broke a backend. Bisecting upstream
between two such pins without the fork's commits names the upstream change the fork
reverted. So a pin that is not an ancestor of the upstream branch of --llvm-dir is split:

* its **base** is its merge-base with upstream (the nearest, over the upstream branches the
  checkout has: `upstream/main`, `origin/main`, `main`, and the same for `master`);
* its **patch stack** is the fork's own commits on top (base..pin, oldest first, no merges).

The descent bisects upstream between the two bases with the stack replayed at every step
(patch_replay.py). Both pins' stacks are replayed: the new pin's, and before it any patch of
the old pin the new one dropped (the same patch, by `git patch-id`, only once). The
endpoints are the pins themselves, so their builds are the ones the Triton phase made.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tritonbisect.core.errors import InputError
from tritonbisect.core.gitrun import GitError, git
from tritonbisect.core.history import History

UPSTREAM_BRANCHES = (
    "refs/remotes/upstream/main", "refs/remotes/origin/main", "refs/heads/main",
    "refs/remotes/upstream/master", "refs/remotes/origin/master", "refs/heads/master",
)
# more fork commits than this on top of upstream: the upstream branch is more likely stale
MAX_PATCHES = 200


@dataclass(frozen=True)
class Patch:
    commit: str
    subject: str

    def describe(self) -> str:
        return f"{self.commit[:12]} {self.subject}"


@dataclass(frozen=True)
class ForkPin:
    pin: str
    base: str
    upstream: str  # the upstream branch the base was measured against
    patches: tuple[Patch, ...]


@dataclass(frozen=True)
class ForkRange:
    """Two pins, at least one in a fork: upstream is bisected between their bases."""

    good_pin: str
    bad_pin: str
    good_base: str
    bad_base: str
    upstream: str
    patches: tuple[Patch, ...] = field(default=())

    def pins(self) -> dict[str, str]:
        """The commit each endpoint (a base) is built as: the pin itself."""
        return {self.good_base: self.good_pin, self.bad_base: self.bad_pin}

    def config(self) -> dict[str, Any]:
        """What the "llvm-triton" recipe needs to replay the stack (session.json)."""
        return {"patches": [p.commit for p in self.patches],
                "subjects": {p.commit: p.subject for p in self.patches},
                "pins": self.pins(), "upstream": self.upstream}

    def describe(self) -> str:
        stack = "; ".join(p.describe() for p in self.patches) or "none"
        return (f"the fork's patches, replayed at every step: {stack} (upstream {self.upstream} bisected "
                f"between the pins' merge-bases {self.good_base[:12]}..{self.bad_base[:12]})")


def _lines(out: str) -> list[str]:
    return [line for line in out.splitlines() if line.strip()]


def upstream_branches(repo: Path) -> list[str]:
    out = git(["for-each-ref", "--format=%(refname)", *UPSTREAM_BRANCHES], cwd=repo, check=False)
    found = set(_lines(out))
    return [ref for ref in UPSTREAM_BRANCHES if ref in found]


def fork_pin(history: History, pin: str) -> ForkPin | None:
    """The base and patch stack of `pin`; None when it is upstream's (an ancestor of an
    upstream branch) or the checkout has no upstream branch to tell."""
    repo = Path(history.root)
    branches = upstream_branches(repo)
    best: ForkPin | None = None
    for ref in branches:
        if history.is_ancestor(pin, ref):
            return None
        try:
            base = git(["merge-base", pin, ref], cwd=repo).strip()
        except GitError:
            continue  # no common history with this branch
        shas = _lines(git(["rev-list", "--reverse", "--no-merges", f"{base}..{pin}"], cwd=repo))
        if best is None or len(shas) < len(best.patches):
            subjects = history.subjects(shas)
            best = ForkPin(pin, base, ref.removeprefix("refs/heads/").removeprefix("refs/remotes/"),
                           tuple(Patch(s, subjects.get(s, "")) for s in shas))
    if best is None:
        return None
    if len(best.patches) > MAX_PATCHES:
        raise InputError(
            f"LLVM commit {pin[:12]} is {len(best.patches)} commits past its merge-base with "
            f"{best.upstream}: is that branch stale? update it (git -C {repo} fetch origin)")
    return best


def _patch_ids(repo: Path, patches: Sequence[Patch]) -> dict[str, str]:
    out = {}
    for p in patches:
        diff = git(["diff-tree", "-p", "--no-color", f"{p.commit}^", p.commit], cwd=repo, check=False)
        pid = git(["patch-id", "--stable"], cwd=repo, input=diff, check=False).split()
        out[p.commit] = pid[0] if pid else p.commit
    return out


def fork_range(history: History, good: str, bad: str) -> ForkRange | None:
    """The range to bisect when either pin is a fork commit; None when both are upstream's.
    InputError when the bases go backwards (the old pin's base is not before the new one's)."""
    old, new = fork_pin(history, good), fork_pin(history, bad)
    if old is None and new is None:
        return None
    good_base = old.base if old else good
    bad_base = new.base if new else bad
    upstream = (new or old).upstream  # type: ignore[union-attr]  # one of them is a fork pin
    if not history.is_ancestor(good_base, bad_base):
        raise InputError(
            f"the LLVM pins {good[:12]} and {bad[:12]} sit on upstream {upstream} at {good_base[:12]} "
            f"and {bad_base[:12]}, and the first is not an ancestor of the second: nothing to bisect")
    kept = list(new.patches if new else ())
    dropped = list(old.patches if old else ())
    if kept and dropped:
        ids = _patch_ids(Path(history.root), [*kept, *dropped])
        have = {ids[p.commit] for p in kept}
        dropped = [p for p in dropped if ids[p.commit] not in have]
    return ForkRange(good, bad, good_base, bad_base, upstream, tuple([*dropped, *kept]))


def missing_pin_message(llvm_dir: Path, sha: str, what: str, repository: str | None) -> str:
    """One line: the pinned commit is not in the checkout, and what to fetch. The whole sha is in
    it (in the fetch command, or named when the command is a plain fetch): an abbreviated one
    can be neither fetched nor looked for on the forge."""
    if repository and repository != "llvm/llvm-project":
        return (f"LLVM commit {sha[:12]} ({what}) is a commit of {repository}, not in {llvm_dir}; fetch "
                f"it: git -C {llvm_dir} fetch https://github.com/{repository} {sha}")
    return (f"LLVM commit {sha} ({what}) not found in {llvm_dir}; fetch it first "
            f"(git -C {llvm_dir} fetch origin)")


__all__ = ["MAX_PATCHES", "ForkPin", "ForkRange", "Patch", "fork_pin", "fork_range", "missing_pin_message",
           "upstream_branches"]
