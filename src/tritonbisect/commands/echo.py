"""Printing text that quotes someone else's (a trace's kernel names, paths and values; a commit
subject; a test's output): its terminal escapes dropped (core/untrusted.py)."""

from __future__ import annotations

import click

from tritonbisect.core.untrusted import printable


def echo(text: object = "", *, err: bool = False, nl: bool = True) -> None:
    click.echo(None if text is None else printable(text), err=err, nl=nl)
