"""The `tritonbisect` command: a thin click root that assembles the commands of each area."""

from __future__ import annotations

import sys

import click

from tritonbisect import __version__
from tritonbisect.cli_main import run_cli
from tritonbisect.commands import clean, corrections, domains, engine, hunt, oracle, wheels


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="tritonbisect")
def root() -> None:
    """Find the commit that broke a Triton kernel, with as few builds as possible."""


for _command in [*engine.COMMANDS, *domains.COMMANDS, *oracle.COMMANDS, *hunt.COMMANDS,
                 *corrections.COMMANDS, *clean.COMMANDS, *wheels.COMMANDS]:
    root.add_command(_command)


def main(argv: list[str] | None = None) -> int:
    """Entry point: every TritonBisectError becomes one line on stderr and its exit code."""
    return run_cli(root, "tritonbisect", argv)


if __name__ == "__main__":
    sys.exit(main())
