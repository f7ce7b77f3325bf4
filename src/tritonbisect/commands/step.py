"""`tritonbisect step`: one build and test of the current checkout, for `git bisect run`.

`git bisect run` starts this once per commit, so the module imports only click and the
errors at load time; the step machinery is imported when the step runs.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from tritonbisect.errors import InputError, TritonBisectError


class ProtocolCommand(click.Command):
    """A command that exits only with git bisect's codes: 0 good, 1 bad, 125 skip, 128 abort.

    Usage errors and any failure of the tool itself become 128 (abort): git must never take
    a tool problem for a verdict about the commit.
    """

    def make_context(self, info_name: str | None, args: list[str], parent: click.Context | None = None, **extra: Any) -> click.Context:
        try:
            return super().make_context(info_name, args, parent=parent, **extra)
        except click.exceptions.Exit:
            raise
        except click.ClickException as exc:
            click.echo(f"tritonbisect step: {exc.format_message()} (exit 128: abort)", err=True)
            raise click.exceptions.Exit(128) from None

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except click.exceptions.Exit as exc:
            if exc.exit_code in (0, 1, 125, 128):
                raise
            raise click.exceptions.Exit(128) from None
        except TritonBisectError as exc:
            click.echo(f"tritonbisect step: {exc.message} (exit 128: abort)", err=True)
            raise click.exceptions.Exit(128) from None
        except (Exception, KeyboardInterrupt, click.exceptions.Abort) as exc:
            click.echo(f"tritonbisect step: {type(exc).__name__}: {exc} (exit 128: abort)", err=True)
            raise click.exceptions.Exit(128) from None


@click.command("step", cls=ProtocolCommand)
@click.option("--build", "build_cmd", metavar="CMD", help="Build command (bash), run in the current directory first.")
@click.option("--test", "test_cmd", required=True, metavar="CMD", help="Test command (bash).")
@click.option("--timeout", type=float, metavar="S", help="Test timeout in seconds (kills the process group).")
@click.option("--env", "env", multiple=True, metavar="K=V")
@click.option("--repeat", type=int, default=1, show_default=True)
@click.option("--regress", type=click.Choice(["fail", "crash", "mismatch", "compile_error", "fixed"]), default="fail", show_default=True)
@click.option("--on-build-failure", type=click.Choice(["skip", "abort", "bad"]), default="skip", show_default=True)
@click.option("--workdir", type=click.Path(file_okay=False, path_type=Path), help="Where step logs go.")
def step_cmd(
    build_cmd: str | None,
    test_cmd: str,
    timeout: float | None,
    env: tuple[str, ...],
    repeat: int,
    regress: str,
    on_build_failure: str,
    workdir: Path | None,
) -> None:
    """Build and test the current checkout once, for `git bisect run`.

    Exits 0 good, 1 bad, 125 skip (e.g. the commit does not build), 128 abort, and nothing
    else: a test's own exit code (a segfault's 139, a test's own 125) is classified, never
    passed through.
    """
    import dataclasses
    import time

    from tritonbisect.bisect.outcome import EXIT_CODE_OF_VERDICT, Policy, Verdict
    from tritonbisect.bisect.runner import execute_step, execute_with_retry, git
    from tritonbisect.build.command_recipe import CommandRecipe
    from tritonbisect.build.recipes import StepContext, TestSpec
    from tritonbisect.commands.options import check_test_command, parse_env, resolve_workdir

    if repeat < 1:
        raise InputError("--repeat must be at least 1")
    cwd = Path.cwd()
    try:
        commit = git(["rev-parse", "HEAD"], cwd=cwd).strip()
    except Exception:  # noqa: BLE001
        raise InputError(f"{cwd} is not a git checkout") from None
    command = check_test_command(test_cmd, cwd=cwd)
    root = resolve_workdir(workdir) / "step-logs"
    log_dir = root / f"{time.strftime('%Y%m%d-%H%M%S')}-{commit[:12]}"
    n = 1
    while log_dir.exists():
        n += 1
        log_dir = root / f"{time.strftime('%Y%m%d-%H%M%S')}-{commit[:12]}-{n}"
    recipe = CommandRecipe(build_cmd, TestSpec(command))
    policy = Policy(regress=regress, on_build_failure=on_build_failure)
    ctx = StepContext(worktree=cwd, log_dir=log_dir, worker=0, env=parse_env(env), timeout=timeout)

    def attempt(d: Path):
        return execute_step(recipe, commit, dataclasses.replace(ctx, log_dir=d), policy, repeat=repeat)

    result = execute_with_retry(attempt, log_dir)
    verdict = Verdict(result.verdict)
    code = EXIT_CODE_OF_VERDICT[verdict]
    click.echo(
        f"tritonbisect step: {commit[:12]} {result.kind} -> {verdict.value} (exit {code}): "
        f"{result.reason} [logs: {log_dir}]",
        err=True,
    )
    raise click.exceptions.Exit(code)



COMMANDS: list[click.Command] = [step_cmd]
