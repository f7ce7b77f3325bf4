"""The "wheel" recipe: a step installs a published wheel instead of building anything.

The commit under test belongs to a *version ladder* (domains/wheels/bisector.py): a small git repo in
the workdir with one commit per published version, each holding WHEEL.json (package,
version, filename, url, sha256). So the engine's search, journal, resume and report work on
versions unchanged. A step: fetch the wheel (download cache keyed by sha256), purge every
Triton distribution from the target env, install it, verify it by its files (a release has
no +git<sha> to check), then run the test from the directory the session was started in.

Recipe config: test (TestSpec dict), python, venv (as the "triton" recipe), cwd (where the
test runs), cache_dir.
"""

from __future__ import annotations

import dataclasses
import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from tritonbisect.builds.build_process import step_runner
from tritonbisect.builds.index_config import active
from tritonbisect.builds.published import STEP_FILE as STEP_FILE
from tritonbisect.builds.published import install_published
from tritonbisect.builds.recipes import (
    PrepareResult,
    StepContext,
    TestRun,
    TestSpec,
)
from tritonbisect.builds.store import open_cache
from tritonbisect.builds.target_test import run_test
from tritonbisect.builds.venv_pool import EnvPool
from tritonbisect.core.outcome import Kind

RECIPE = "wheel"
LADDER_FILE = "WHEEL.json"


class WheelRecipe:
    name = RECIPE
    caches_builds = True  # a published wheel is downloaded once

    def __init__(self, config: Mapping[str, Any]) -> None:
        self._config = dict(config)
        self.test_spec = TestSpec.from_dict(config["test"])
        self._envs = EnvPool(config.get("venv"), config.get("python"))
        self.cwd = Path(config.get("cwd") or Path.cwd())

    def config(self) -> dict[str, Any]:
        return dict(self._config)

    def _cache_root(self, ctx: StepContext) -> Path:
        workdir = Path(ctx.workdir) if ctx.workdir else ctx.worktree.parent
        store = open_cache(self._config.get("cache_dir") or ctx.cache_dir, workdir=workdir)
        return Path(getattr(store, "root", workdir / "cache"))

    def prepare(self, commit: str, ctx: StepContext) -> PrepareResult:
        # a step process of its own (a worker) reads the index settings again, for the
        # target's pip, and installs with the installer the session chose
        active(self._config.get("python") or (str(Path(self._config["venv"]) / "bin" / "python")
                                              if self._config.get("venv") else None))
        if self._config.get("installer"):
            os.environ.setdefault("TRITONBISECT_INSTALLER", str(self._config["installer"]))
        try:
            entry = json.loads((ctx.worktree / LADDER_FILE).read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            return PrepareResult(Kind.INFRA, f"{LADDER_FILE} unreadable in {ctx.worktree}: {exc}")
        return install_published(entry, None, ctx, lambda: self._envs.get(ctx), self._cache_root(ctx))

    def test(self, commit: str, ctx: StepContext, *, record: bool = False) -> TestRun:
        try:
            version = json.loads((ctx.worktree / LADDER_FILE).read_text(encoding="utf-8"))["version"]
        except (OSError, ValueError, KeyError):
            version = ""
        # the test lives in the user's directory, not in the ladder's worktree
        here = dataclasses.replace(ctx, worktree=self.cwd,
                                   env={**ctx.env, "TRITONBISECT_WHEEL_VERSION": str(version)})
        return run_test(self._envs.get(ctx), self.test_spec, commit, here, record=record,
                        runner=step_runner(ctx, self.cwd))
