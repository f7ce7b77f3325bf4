"""Generated git histories for the bisect benchmark (bench/bisect_vs_git.py).

A linear history, made in one `git fast-import` run by the toy world's
`testing.toyworld.gitstream.write_history` (a 4096-commit repository takes about a
second): commit 0 is the good endpoint, commit N + 1 the bad one, N commits in
between. Each commit's tree holds

    state       "ok" before the planted culprit, "bad" from it on
    BROKEN      present on the commits that do not build
    src.txt     the commit's index (the scripts log it, so runs can be counted)
    .gitignore  "out/" (the build output)
"""

from __future__ import annotations

import random
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # testing/: the toy worlds
from testing.toyworld.gitstream import CommitSpec, git_env, write_history


def git(repo: Path, *args: str, input: bytes | None = None, check: bool = True):
    return subprocess.run(
        ["git", *args], cwd=repo, env=git_env(), input=input, capture_output=True, check=check
    )


@dataclass
class World:
    repo: Path
    shas: list[str]  # index 0 = good endpoint, -1 = bad endpoint
    culprit: int
    broken: set[int] = field(default_factory=set)

    @property
    def n_between(self) -> int:
        return len(self.shas) - 2

    @property
    def good(self) -> str:
        return self.shas[0]

    @property
    def bad(self) -> str:
        return self.shas[-1]


def broken_clusters(
    n_between: int, fraction: float, rnd: random.Random, *, keep: set[int], lengths=(3, 30)
) -> set[int]:
    """About `fraction` of commits 1..n_between unbuildable, in clusters of `lengths` commits;
    the commits in `keep` always build."""
    target = round(fraction * n_between)
    broken: set[int] = set()
    while len(broken) < target:
        length = rnd.randint(*lengths)
        start = rnd.randint(1, n_between)
        for i in range(start, min(n_between, start + length - 1) + 1):
            if i not in keep and len(broken) < target:
                broken.add(i)
    return broken


def make_world(
    repo: Path,
    n_between: int,
    *,
    seed: int = 0,
    broken_fraction: float = 0.0,
    culprit: int | None = None,
) -> World:
    """A linear history with a planted culprit (1..n_between + 1; default random) and, when
    broken_fraction > 0, clusters of unbuildable commits (never the culprit or its parent)."""
    rnd = random.Random(seed)
    if culprit is None:
        culprit = rnd.randint(2, n_between + 1) if n_between >= 1 else 1
    broken = (
        broken_clusters(n_between, broken_fraction, rnd, keep={culprit, culprit - 1})
        if broken_fraction > 0
        else set()
    )
    specs = []
    for i in range(n_between + 2):
        tree = {".gitignore": "out/\n", "state": "bad\n" if i >= culprit else "ok\n"}
        tree["src.txt"] = f"{i}\n"
        if i in broken:
            tree["BROKEN"] = ""
        specs.append(CommitSpec(tree, f"change {i}", timestamp=1_700_000_000 + 60 * i))
    shas = write_history(repo, specs)
    return World(repo, shas, culprit, broken)
