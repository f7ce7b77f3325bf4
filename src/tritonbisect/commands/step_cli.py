"""The click form of `tritonbisect step` (its help, and the usage errors of a malformed
command line); a plain command line is run by `commands/step.py` without click."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from tritonbisect.commands.step import (
    BUILD_FAILURE_CHOICES,
    DEFAULT_BUILD_TIMEOUT,
    REGRESS_CHOICES,
    guarded,
    run_step,
)


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


@click.command("step", cls=ProtocolCommand)
@click.option("--build", "build_cmd", metavar="CMD", help="Build command (bash), run in the current directory first.")
@click.option("--test", "test_cmd", required=True, metavar="CMD", help="Test command (bash).")
@click.option("--timeout", type=float, metavar="S", help="Test timeout in seconds (kills the test and everything it started).")
@click.option("--build-timeout", type=float, default=DEFAULT_BUILD_TIMEOUT, show_default=True, metavar="S",
              help="Seconds the build may take; one still running then is killed, with everything it started, "
                   "and the checkout counts as one that does not build (--on-build-failure).")
@click.option("--env", "env", multiple=True, metavar="K=V", help="Environment variable for the build and the test (repeatable).")
@click.option("--pass-env", "pass_env", multiple=True, metavar="NAME", help="Let builds and tests see this secret of your environment (GITHUB_TOKEN, HF_TOKEN...: variables whose name says TOKEN, SECRET, PASSWORD, API_KEY... are kept from them otherwise; repeatable).")
@click.option("--repeat", type=int, default=1, show_default=True, help="Run the test N times; the majority verdict counts.")
@click.option("--regress", type=click.Choice(REGRESS_CHOICES), default="fail", show_default=True,
              help="Which outcome is the regression (bad, exit 1); 'fixed' finds the commit that fixed it.")
@click.option("--on-build-failure", type=click.Choice(BUILD_FAILURE_CHOICES), default="skip", show_default=True,
              help="What a checkout that does not build is: skip (125), abort (128) or bad (1).")
@click.option("--workdir", type=click.Path(file_okay=False, path_type=Path), help="Where step logs go.")
@click.option("--infra-pattern", "infra_patterns", multiple=True, metavar="REGEX", help="A failing test whose output matches REGEX failed for the machine's sake: abort (128), not a verdict (repeatable; added to the built-in patterns such as 'Connection refused', 'No space left on device').")
@click.option("--no-infra-patterns", "no_infra_patterns", is_flag=True, help="Do not read the built-in infrastructure patterns in the test's output: only --infra-pattern ones count.")
@click.option("--sandbox", is_flag=True, help="Build and test in a sandbox: no network, read-only filesystem except the checkout and the step's folders, private $HOME, allow-listed environment.")
def step_cmd(**kwargs: Any) -> None:
    """Build and test the current checkout once, for `git bisect run`.

    Exits 0 good, 1 bad, 125 skip (e.g. the commit does not build), 128 abort, and nothing
    else: a test's own exit code (a segfault's 139, a test's own 125) is classified, never
    passed through.
    """
    raise click.exceptions.Exit(guarded(lambda: run_step(**kwargs)))


COMMANDS: list[click.Command] = [step_cmd]
