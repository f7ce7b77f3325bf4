"""The build output of `run --build CMD --artifact PATH`, kept in the artifact cache.

The key is the repository, the commit, the build command, the artifact's path and the
`--env` variables (all of them: a user's build may read any), and whether the build ran in
the sandbox (its entries never reach a session without one). A hit is copied back into the
checkout (replacing what an earlier commit left there), so the test sees the output of this
commit's build whichever node built it; a recorded failure is not rebuilt. A folder on the
way to the artifact that a build turned into a link is removed before a hit is copied back,
and makes a built artifact count as not produced: the tool neither writes nor stores through
it.
"""

from __future__ import annotations

import shutil
import time
from collections.abc import Callable
from pathlib import Path

from tritonbisect.builds.cache import sandbox_mark
from tritonbisect.builds.recipes import PrepareResult, StepContext
from tritonbisect.builds.store import open_cache
from tritonbisect.core.files import leads_through_link
from tritonbisect.core.outcome import Kind
from tritonbisect.core.secrets import redact_env

RECIPE = "command"


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    elif path.exists() or path.is_symlink():
        path.unlink()


def _restore(stored: Path, target: Path, root: Path) -> None:
    while (link := leads_through_link(root, target.relative_to(root))) is not None:
        link.unlink()  # a build's link inside the checkout: the copy goes into the checkout
    _remove(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    if stored.is_dir() and not stored.is_symlink():
        shutil.copytree(stored, target, symlinks=True)
    else:
        shutil.copy2(stored, target, follow_symlinks=False)


def cached_output(recipe, commit: str, ctx: StepContext,
                  build: Callable[[str, StepContext], PrepareResult]) -> PrepareResult:
    """`build(commit, ctx)` unless the cache has this commit's artifact (restored into the
    checkout) or a recorded failure; a successful build's artifact is stored."""
    from tritonbisect.core.history import root_identity

    start = time.monotonic()
    store = open_cache(ctx.cache_dir, workdir=Path(ctx.workdir or ctx.worktree.parent))
    rel = Path(recipe.artifact)
    target = ctx.worktree / rel
    repo_id = root_identity(ctx.worktree) or str(ctx.worktree)
    # a secret's value is no part of the key, nor of the entry's meta.json (a shared S3 cache)
    config = {"build": recipe.build, "artifact": rel.as_posix(), "env": redact_env(dict(sorted(ctx.env.items()))),
              **sandbox_mark(ctx.sandbox)}
    key = store.key(repo_id, commit, RECIPE, config, "any", "")
    hit = store.get(key)
    if hit is not None:
        try:
            _restore(hit, target, ctx.worktree)
        except OSError as exc:
            return PrepareResult(Kind.INFRA, f"could not restore {rel} from the cache: {exc}",
                                 seconds=time.monotonic() - start)
        return PrepareResult(Kind.PASS, f"{rel} taken from the cache", cached=True,
                             seconds=time.monotonic() - start)
    failed = store.failure(key)
    if failed is not None:
        return PrepareResult(Kind(failed.kind), f"failed to build before: {failed.reason}",
                             cached=True, seconds=time.monotonic() - start, log=failed.log)
    prep = build(commit, ctx)  # the output is left in place: incremental builds stay incremental
    link = leads_through_link(ctx.worktree, rel)
    if prep.kind is Kind.PASS and link is not None:
        prep = PrepareResult(Kind.BUILD_FAILED, f"the build made {link.relative_to(ctx.worktree)} a link: "
                             f"{rel} is not stored through it", seconds=prep.seconds, log=prep.log)
    elif prep.kind is Kind.PASS and not (target.exists() or target.is_symlink()):
        prep = PrepareResult(Kind.BUILD_FAILED, f"the build did not produce {rel}",
                             seconds=prep.seconds, log=prep.log)
    if prep.kind is Kind.BUILD_FAILED:
        store.record_failure(key, prep.kind.value, prep.reason, prep.log, commit=commit,
                             recipe=RECIPE)
    elif prep.kind is Kind.PASS:
        store.put(key, target, {"commit": commit, "recipe": RECIPE, "repo": repo_id,
                                "config": config})
    return prep
