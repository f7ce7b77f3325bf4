"""The `tritonbisect` command: a thin click root that assembles the commands of each area."""

from __future__ import annotations

import sys

import click

from tritonbisect import __version__
from tritonbisect.commands import domains, engine, oracle
from tritonbisect.errors import TritonBisectError


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="tritonbisect")
def root() -> None:
    """Find the commit that broke a Triton kernel, with as few builds as possible."""


for _command in [*engine.COMMANDS, *domains.COMMANDS, *oracle.COMMANDS]:
    root.add_command(_command)


def main(argv: list[str] | None = None) -> int:
    """Entry point: every TritonBisectError becomes one line on stderr and its exit code."""
    try:
        # without standalone mode, click returns the code of a `ctx.exit(code)` /
        # `raise click.exceptions.Exit(code)` instead of exiting: pass it on
        rv = root.main(args=argv, prog_name="tritonbisect", standalone_mode=False)
        if isinstance(rv, int):
            return rv
    except TritonBisectError as exc:
        click.echo(f"tritonbisect: error: {exc.message}", err=True)
        return exc.exit_code
    except click.exceptions.Abort:
        click.echo("tritonbisect: interrupted", err=True)
        return 130
    except click.ClickException as exc:
        exc.show()
        return 2
    except click.exceptions.Exit as exc:
        return exc.exit_code
    return 0


if __name__ == "__main__":
    sys.exit(main())
