"""Placeholder for the `compat-builder` command (filled by the compat-builder owner)."""

from __future__ import annotations

import sys

import click


@click.group()
def root() -> None:
    """Build and maintain the Triton<->LLVM compatibility map."""


def main(argv: list[str] | None = None) -> int:
    root.main(args=argv, prog_name="compat-builder", standalone_mode=False)
    return 0


if __name__ == "__main__":
    sys.exit(main())
