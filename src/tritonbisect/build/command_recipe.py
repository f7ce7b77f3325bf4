"""The user's own build and test shell commands as a recipe (registered as "command").

Both commands run with bash in the worker's worktree (the commit under test), with the
`--env` variables added, and with:

    TRITONBISECT_COMMIT    the full sha under test
    TRITONBISECT_WORKTREE  the checkout the command runs in
    TRITONBISECT_RESULT    (tests only) where the test may write a JSON result {"status": ...}

Nothing is cached: every step runs the build command again (an incremental build system in
the worker's kept worktree makes that cheap).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tritonbisect.bisect.outcome import RESULT_ENV_VAR, Kind, classify_build, read_result_json
from tritonbisect.build.recipes import (
    PrepareResult,
    StepContext,
    TestRun,
    TestSpec,
    register_recipe,
    test_files,
)

NAME = "command"


class CommandRecipe:
    name = NAME
    caches_builds = False  # every step runs the build command again

    def __init__(self, build: str | None, test: TestSpec, *, build_timeout: float | None = None) -> None:
        self.build = build or None
        self.test_spec = test
        self.build_timeout = build_timeout

    def config(self) -> dict[str, Any]:
        return {
            "build": self.build,
            "test": self.test_spec.to_dict(),
            "build_timeout": self.build_timeout,
        }

    @classmethod
    def from_config(cls, config: Mapping[str, Any]) -> CommandRecipe:
        return cls(
            config.get("build"),
            TestSpec.from_dict(config["test"]),
            build_timeout=config.get("build_timeout"),
        )

    def _env(self, commit: str, ctx: StepContext) -> dict[str, str]:
        from tritonbisect.bisect.runner import clean_env

        env = clean_env()
        env.update(ctx.env)
        env["TRITONBISECT_COMMIT"] = commit
        env["TRITONBISECT_WORKTREE"] = str(ctx.worktree)
        return env

    def prepare(self, commit: str, ctx: StepContext) -> PrepareResult:
        from tritonbisect.bisect.runner import cancel_token_for, read_tail, run_logged

        if not self.build:
            return PrepareResult(Kind.PASS, "no build command", cached=False, seconds=0.0, log=None)
        log = ctx.log_dir / "build.log"
        proc = run_logged(
            self.build,
            cwd=ctx.worktree,
            env=self._env(commit, ctx),
            log=log,
            timeout=self.build_timeout,
            token=cancel_token_for(ctx),
        )
        if proc.cancelled:
            return PrepareResult(Kind.INFRA, "cancelled", seconds=proc.seconds, log=log)
        cls = classify_build(proc.returncode, read_tail(log), timed_out=proc.timed_out)
        return PrepareResult(cls.kind, cls.reason, cached=False, seconds=proc.seconds, log=log)

    def test(self, commit: str, ctx: StepContext, *, record: bool = False) -> TestRun:
        from tritonbisect.bisect.runner import cancel_token_for, run_logged

        command, log, result_path = test_files(self.test_spec, ctx, record=record)
        env = self._env(commit, ctx)
        env[RESULT_ENV_VAR] = str(result_path)
        proc = run_logged(
            command,
            cwd=ctx.worktree,
            env=env,
            log=log,
            timeout=ctx.timeout,
            token=cancel_token_for(ctx),
        )
        return TestRun(
            returncode=proc.returncode,
            seconds=proc.seconds,
            log=log,
            timed_out=proc.timed_out,
            result=read_result_json(result_path),
        )


def _factory(config: Mapping[str, Any]) -> CommandRecipe:
    return CommandRecipe.from_config(config)


def test_spec_of(recipe: object) -> TestSpec | None:
    """The TestSpec a recipe runs, when it exposes one (`recipe.test_spec`)."""
    spec = getattr(recipe, "test_spec", None)
    return spec if isinstance(spec, TestSpec) else None


register_recipe(NAME, _factory)

__all__ = ["CommandRecipe", "NAME", "test_spec_of"]
