"""A step's test, run once in the target environment: in the worktree, with the tool's own
variables (the commit, the worktree, where to write the structured result), a Triton cache of
its own that is removed after, and the result read back."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

from tritonbisect.builds.build_process import default_runner
from tritonbisect.builds.env import TargetEnv
from tritonbisect.builds.gitutil import base_build_env
from tritonbisect.builds.recipes import StepContext, TestRun, TestSpec, test_files
from tritonbisect.core.outcome import RESULT_ENV_VAR, read_result_json


def run_test(env: TargetEnv, spec: TestSpec, commit: str, ctx: StepContext, *, record: bool,
             runner: Callable | None = None) -> TestRun:
    """Run the test (or the record command) once in the worktree with the target env."""
    command, log, result_path = test_files(spec, ctx, record=record)
    base = base_build_env()
    base.update(ctx.env)
    base["TRITONBISECT_COMMIT"] = commit
    base["TRITONBISECT_WORKTREE"] = str(ctx.worktree)
    cache_root = (Path(ctx.workdir) if ctx.workdir else ctx.log_dir) / "triton-cache"
    tenv = env.test_env(base, cache_root)
    tenv[RESULT_ENV_VAR] = str(result_path)
    try:
        res = (runner or default_runner())(command, cwd=ctx.worktree, env=tenv, log=log,
                                            timeout=ctx.timeout)
    finally:
        shutil.rmtree(tenv["TRITON_CACHE_DIR"], ignore_errors=True)
    return TestRun(
        returncode=res.returncode,
        seconds=res.seconds,
        log=log,
        timed_out=res.timed_out,
        result=read_result_json(result_path),
    )
