"""The click root of `tritonbisect`, listing the commands of `tritonbisect.cli.table.COMMANDS`
without importing them; a command is imported when it is invoked."""

from __future__ import annotations

import click

from tritonbisect import __version__
from tritonbisect.cli.table import COMMANDS, load_command
from tritonbisect.commands.help_sections import command_rows, sectioned


class LazyGroup(click.Group):
    """A group whose commands are imported on first use, listed in `--help` from COMMANDS."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*COMMANDS, *self.commands})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in self.commands and cmd_name in COMMANDS:
            self.commands[cmd_name] = sectioned(load_command(cmd_name))
        return self.commands.get(cmd_name)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        names = self.list_commands(ctx)
        if not names:
            return
        # click's own layout, by task (commands.help_sections.COMMAND_SECTIONS), without importing the commands
        limit = formatter.width - 6 - max(len(n) for n in names)
        for title, members in command_rows(names):
            rows = []
            for name in members:
                if name in COMMANDS:
                    # click's own shortening (make_default_short_help is deprecated in click 8.5)
                    text = click.Command(name, help=COMMANDS[name][1]).get_short_help_str(limit)
                else:
                    text = self.commands[name].get_short_help_str(limit)
                rows.append((name, text))
            with formatter.section(title):
                formatter.write_dl(rows)


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="tritonbisect")
def root() -> None:
    """Find the commit that broke a Triton kernel, with as few builds as possible."""
