"""Nightly wheels of toy Triton commits: built once with the "triton" recipe (real toy LLVM
and Triton builds), versions 3.6.0+git<sha8>, laid out as a local PEP 503 index."""

from __future__ import annotations

import shutil
import subprocess
import time
from pathlib import Path

from tritonbisect.builds.cache import ArtifactCache
from tritonbisect.builds.recipes import StepContext, recipe_from_config
from wheel_index_world import write_simple_index


def build_nightlies(world, commits: list[str], workdir: Path, out: Path) -> list[Path]:
    """The wheel of each commit (those that build), copied to `out`."""
    recipe = recipe_from_config("triton", {"test": {"command": world.truth["triton_test"]},
                                           "llvm_dir": str(world.llvm)})
    tree = workdir / "worktrees" / "triton" / "w0"
    if not tree.exists():
        tree.parent.mkdir(parents=True, exist_ok=True)
        subprocess.run(["git", "-C", str(world.triton), "worktree", "add", "-q", "--detach",
                        str(tree), commits[0]], check=True, capture_output=True)
    for sha in commits:
        subprocess.run(["git", "-C", str(tree), "checkout", "-q", "--detach", "--force", sha],
                       check=True, capture_output=True)
        ctx = StepContext(worktree=tree, log_dir=workdir / "steps" / f"{sha[:8]}-{time.monotonic_ns()}",
                          worker=0, workdir=workdir, timeout=120)
        recipe.prepare(sha, ctx)
    out.mkdir(parents=True, exist_ok=True)
    wheels = []
    for e in ArtifactCache(workdir / "cache").entries():
        if e.recipe == "triton" and e.commit in commits:
            dst = out / e.path.name
            shutil.copy2(e.path, dst)
            wheels.append(dst)
    return wheels


def serve_nightlies(root: Path, wheels: list[Path]) -> None:
    write_simple_index(root, wheels)
