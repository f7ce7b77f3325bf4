"""The `tritonbisect` command: a thin click root that loads each command only when it runs.

`git bisect run` starts `tritonbisect step` once per step, and `--help` should answer at
once: importing every command module (GitPython, rich, the domain bisectors) cost about
0.2 s per start. The root therefore knows its commands only by name, where they live and
their one-line help, and imports a command's module when that command is invoked (or its
own `--help` is asked for).

Adding a command: one line in COMMANDS below,

    "name": ("package.module:attribute", "Its one-line help, the first sentence of its docstring."),

where the attribute is the click command, and its name in one section of
commands.help_sections.COMMAND_SECTIONS (`--help` lists the commands by task). The one-line help is what
`tritonbisect --help` lists; tests/test_cli_lazy.py checks that it equals the command's own first sentence, and
that `--help` and `step` import none of the command modules.

The click group itself is in cli/group.py; `step` with a plain command line does not even
import click (commands/step.py).
"""

from __future__ import annotations

import sys
from typing import Any

from tritonbisect.cli.table import COMMANDS, load_command

__all__ = ["COMMANDS", "load_command", "main"]


def main(argv: list[str] | None = None) -> int:
    """Entry point: every TritonBisectError becomes one line on stderr and its exit code."""
    args = sys.argv[1:] if argv is None else list(argv)
    if args[:1] == ["step"]:
        # `git bisect run` starts `step` once per commit: a plain command line runs without
        # click; None means help or a usage error, which the click command answers
        from tritonbisect.commands.step import fast_main

        code = fast_main(args[1:])
        if code is not None:
            return code
    from tritonbisect.cli.entry import run_cli
    from tritonbisect.cli.group import root

    return run_cli(root, "tritonbisect", argv)


def __getattr__(name: str) -> Any:
    if name in ("root", "LazyGroup"):  # the click group, for `from tritonbisect.cli import root`
        from tritonbisect.cli import group as cli_group

        return getattr(cli_group, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


if __name__ == "__main__":
    sys.exit(main())
