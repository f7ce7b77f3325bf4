"""The builds a phase already has, so that testing a commit again costs no build: artifacts the
cache holds, and, for a recipe that caches nothing (`run --build CMD`), builds that the
workers' checkouts still hold.

A checkout holds a build for as long as nothing else is built in it. So that confirming the
culprit (re-testing it and its parent) builds nothing, the pool is asked to keep the builds
of the search's current boundaries -- the first bad commit and the last good one before it,
which are the culprit and its parent when the search ends -- and to run other steps in
other checkouts (at most two more than --jobs).

A build command that installs (`pip install -e .`, `make install`) changes things outside
the checkout: a checkout then stands for its build only while no other build has run since,
so only the latest build is reused, and none is kept.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from tritonbisect.core.outcome import Verdict
from tritonbisect.executors.runner import Reuse
from tritonbisect.search.classic import Candidates
from tritonbisect.session.phase_context import PhaseContext

_INSTALLS = re.compile(r"\b(install|develop)\b")


def _build_command(recipe: Any) -> str | None:
    try:
        build = recipe.config().get("build")
    except Exception:  # noqa: BLE001 - a recipe without a plain config keeps nothing
        return None
    return build if isinstance(build, str) and build.strip() else None


class BuildsAtHand:
    """See the module docstring."""

    def __init__(self, ctx: PhaseContext, recipe: Any) -> None:
        spec = ctx.spec
        self.recipe = recipe
        self.journal = ctx.journal
        self.ui = ctx.ui
        caches_builds = recipe.caches_builds
        # the "command" recipe says caches_builds = False itself: no special case by name here
        self.caches = spec.prefer_cached and caches_builds
        build = None if caches_builds else _build_command(recipe)
        if build is None:
            self.reuse = Reuse.NO  # the artifact cache serves a re-test, or there is no build
        elif _INSTALLS.search(build):
            self.reuse = Reuse.LATEST
        else:
            self.reuse = Reuse.KEPT

    def cached(self, commits: Sequence[str]) -> frozenset[str]:
        """Commits whose build is known to be cached, so testing them again costs no build.

        A recipe that caches builds (`recipe.caches_builds`, true for every recipe but the
        plain "command" one) has an artifact for every commit this phase built successfully.
        """
        if not self.caches:
            return frozenset()
        return frozenset(r["commit"] for r in self.journal.records if built(r))

    def to_keep(self, cands: Candidates, verdicts: Mapping[str, str], good: str) -> tuple[str, ...]:
        """The builds to keep in their checkouts: the first bad commit of the range and the
        last good one before it (the good endpoint while none is)."""
        if self.reuse is not Reuse.KEPT:
            return ()
        order = cands.order
        first_bad = next((i for i, c in enumerate(order) if verdicts.get(c) == Verdict.BAD), len(order) - 1)
        last_good = next(
            (order[i] for i in range(first_bad - 1, -1, -1) if verdicts.get(order[i]) == Verdict.GOOD), good
        )
        return (order[first_bad], last_good)

    def at_hand(self, kept: Sequence[str]) -> frozenset[str]:
        """Of the builds asked to be kept, those a checkout holds (the journal shows them built):
        a re-test there costs no build."""
        if self.reuse is not Reuse.KEPT or not kept:
            return frozenset()
        want = set(kept)
        return frozenset(r["commit"] for r in self.journal.records if r.get("commit") in want and built(r))

    def kept_for_confirmation(self, culprit: str, parent: str) -> tuple[str, ...]:
        return (culprit, parent) if self.reuse is Reuse.KEPT else ()

    def confirm_order(self, commits: Sequence[str]) -> list[str]:
        """The commits to re-test, the one built last first: with Reuse.LATEST only that one
        can be tested on the build it has."""
        if self.reuse is not Reuse.LATEST:
            return list(commits)
        last = next((r["commit"] for r in reversed(self.journal.records) if built(r)), None)
        return sorted(commits, key=lambda c: c != last)


def builds_install_outside(recipe: Any) -> bool:
    """Whether a recipe's builds change things outside their checkout (a build command that
    installs), so that a checkout stands for its build only until the next build."""
    if recipe.caches_builds:
        return False
    build = _build_command(recipe)
    return build is not None and bool(_INSTALLS.search(build))


def built(rec: Mapping[str, Any]) -> bool:
    """Whether a journal record's step built (or took from the cache) its commit."""
    return (rec.get("build") or {}).get("kind") == "pass"
