"""The user's own build and test shell commands as a recipe ("command" in builds/recipe_table.py).

Both commands run with bash in the worker's worktree (the commit under test), with the
`--env` variables added, and with:

    TRITONBISECT_COMMIT    the full sha under test
    TRITONBISECT_WORKTREE  the checkout the command runs in
    TRITONBISECT_RESULT    (tests only) where the test may write a JSON result {"status": ...}

Without `artifact` nothing is cached: every step runs the build command again (an
incremental build system in the worker's kept worktree makes that cheap). With `artifact`
(`run --artifact PATH`: a file or folder the build leaves in the checkout), the build output
of each commit is stored in the artifact cache and restored into the checkout instead of
rebuilding, and a failed build is recorded; so a commit built on one node of a Ray cluster
is tested on another.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tritonbisect.builds.build_process import step_runner
from tritonbisect.builds.recipes import (
    PrepareResult,
    StepContext,
    TestRun,
    TestSpec,
    test_files,
)
from tritonbisect.core.outcome import RESULT_ENV_VAR, Kind, classify_build, read_result_json

NAME = "command"


class CommandRecipe:
    name = NAME

    def __init__(self, build: str | None, test: TestSpec, *, build_timeout: float | None = None,
                 artifact: str | None = None) -> None:
        self.build = build or None
        self.test_spec = test
        self.build_timeout = build_timeout
        self.artifact = artifact or None

    @property
    def caches_builds(self) -> bool:
        """Only a declared build output is cached; otherwise every step builds again."""
        return bool(self.build and self.artifact)

    def config(self) -> dict[str, Any]:
        config = {
            "build": self.build,
            "test": self.test_spec.to_dict(),
            "build_timeout": self.build_timeout,
        }
        if self.artifact:
            config["artifact"] = self.artifact
        return config

    @classmethod
    def from_config(cls, config: Mapping[str, Any]) -> CommandRecipe:
        return cls(
            config.get("build"),
            TestSpec.from_dict(config["test"]),
            build_timeout=config.get("build_timeout"),
            artifact=config.get("artifact"),
        )

    def _env(self, commit: str, ctx: StepContext) -> dict[str, str]:
        from tritonbisect.builds.gitutil import base_build_env

        env = base_build_env()  # no secret the user did not pass by name
        env.update(ctx.env)
        env["TRITONBISECT_COMMIT"] = commit
        env["TRITONBISECT_WORKTREE"] = str(ctx.worktree)
        return env

    def prepare(self, commit: str, ctx: StepContext) -> PrepareResult:
        if not self.build:
            return PrepareResult(Kind.PASS, "no build command", cached=False, seconds=0.0, log=None)
        if self.artifact:
            from tritonbisect.domains.command.artifact import cached_output

            return cached_output(self, commit, ctx, self._build)
        return self._build(commit, ctx)

    def _build(self, commit: str, ctx: StepContext) -> PrepareResult:
        from tritonbisect.core.process import read_tail

        log = ctx.log_dir / "build.log"
        proc = _runner(ctx)(self.build, cwd=ctx.worktree, env=self._env(commit, ctx), log=log,
                            timeout=self.build_timeout)
        if proc.cancelled:
            return PrepareResult(Kind.INFRA, "cancelled", seconds=proc.seconds, log=log)
        if proc.timed_out:
            # a build that never ends is the commit's (an endless loop, a hostile build):
            # another try would take as long
            return PrepareResult(Kind.BUILD_FAILED, f"build did not finish within its {self.build_timeout:g} s "
                                 "(--build-timeout); killed with everything it started",
                                 seconds=proc.seconds, log=log)
        cls = classify_build(proc.returncode, read_tail(log), timed_out=proc.timed_out)
        return PrepareResult(cls.kind, cls.reason, cached=False, seconds=proc.seconds, log=log)

    def test(self, commit: str, ctx: StepContext, *, record: bool = False) -> TestRun:
        command, log, result_path = test_files(self.test_spec, ctx, record=record)
        env = self._env(commit, ctx)
        env[RESULT_ENV_VAR] = str(result_path)
        proc = _runner(ctx)(command, cwd=ctx.worktree, env=env, log=log, timeout=ctx.timeout)
        return TestRun(
            returncode=proc.returncode,
            seconds=proc.seconds,
            log=log,
            timed_out=proc.timed_out,
            result=read_result_json(result_path),
        )


def _runner(ctx: StepContext):
    """The step's process runner: sandboxed with --sandbox (writing only the checkout and
    the step's folders and caches)."""
    return step_runner(ctx, ctx.worktree)

__all__ = ["CommandRecipe", "NAME"]
