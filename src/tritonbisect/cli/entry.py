"""The entry-point wrapper shared by `tritonbisect` and `compat-builder`."""

from __future__ import annotations

from collections.abc import Collection

import click

from tritonbisect.core.errors import EXIT_INTERRUPTED, EXIT_USAGE, TritonBisectError
from tritonbisect.core.untrusted import one_line


def run_cli(group: click.Command, prog_name: str, argv: list[str] | None = None, *,
            not_errors: Collection[int] = ()) -> int:
    """Run `group` and return its exit code instead of exiting.

    A TritonBisectError becomes one line on stderr (`<prog>: error: <message>`; without
    "error: " for the exit codes in `not_errors`, e.g. compat-builder's "a person must
    commit a fix") and its exit code; so does an OSError at a path (core/oserrors.py: a read-only
place, a full disk...); Ctrl-C (click's Abort) is 130, any other click usage
    error 2. A command's int return value is passed on.
    """
    try:
        # without standalone mode, click returns the code of a `ctx.exit(code)` /
        # `raise click.exceptions.Exit(code)` instead of exiting: pass it on
        rv = group.main(args=argv, prog_name=prog_name, standalone_mode=False)
        if isinstance(rv, int):
            return rv
    except TritonBisectError as exc:
        prefix = "" if exc.exit_code in not_errors else "error: "
        # a message may quote a trace, a session file or a test's output: one line, no escapes
        click.echo(f"{prog_name}: {prefix}{one_line(exc.message)}", err=True)
        return exc.exit_code
    except click.exceptions.Abort:
        click.echo(f"{prog_name}: interrupted", err=True)
        return EXIT_INTERRUPTED
    except click.ClickException as exc:
        exc.show()
        return EXIT_USAGE
    except click.exceptions.Exit as exc:
        return exc.exit_code
    except OSError as exc:  # a place the tool cannot write (or read): the path and the problem
        from tritonbisect.core.oserrors import place_error

        err = place_error(exc)
        if err is None:
            raise
        click.echo(f"{prog_name}: error: {one_line(err.message)}", err=True)
        return err.exit_code
    return 0
