"""An option renamed without breaking whoever typed the old spelling: the old name still
parses, `--help` shows only the new one."""

from __future__ import annotations

from typing import Any

import click


class AliasOption(click.Option):
    """An option whose `hidden_aliases` still parse but are not shown in `--help`: the old
    spelling of a renamed option keeps working, with no change in behaviour."""

    def __init__(self, *args: Any, hidden_aliases: tuple[str, ...] = (), **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.hidden_aliases = tuple(hidden_aliases)

    def get_help_record(self, ctx: click.Context) -> tuple[str, str] | None:
        shown = self.opts
        self.opts = [o for o in shown if o not in self.hidden_aliases]
        try:
            return super().get_help_record(ctx)
        finally:
            self.opts = shown


def hidden_alias(*names: str) -> dict[str, Any]:
    """Keyword arguments of click.option for an option that also answers to `names`."""
    return {"cls": AliasOption, "hidden_aliases": names}
