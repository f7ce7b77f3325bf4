"""Placeholder: filled by the owner of this area."""

from __future__ import annotations

import click

COMMANDS: list[click.Command] = []
