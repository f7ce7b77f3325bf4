"""`tritonbisect clean`: remove what runs left in the workdir (session/cleanup.py says what)."""

from __future__ import annotations

from pathlib import Path

import click

from tritonbisect.core.errors import InputError
from tritonbisect.options.bisect_options import resolve_workdir


@click.command("clean")
@click.argument("session_id", metavar="[SESSION]", required=False)
@click.option("--all", "everything", is_flag=True, help="Every session, worktree, venv and cache of the workdir.")
@click.option("--keep-cache", is_flag=True, help="Keep the cached builds (wheels, LLVM installs): a later session reuses them.")
@click.option("--workdir", type=click.Path(file_okay=False, path_type=Path), help="The tool's workdir (default: $TRITONBISECT_HOME or the user cache dir).")
def clean_cmd(session_id: str | None, everything: bool, keep_cache: bool, workdir: Path | None) -> None:
    """Remove a session (or --all) with its worktrees, pruned from your repository, and venvs.

    Workers keep their git worktrees between runs for incremental builds; they are registered
    in your repository (`git worktree list` shows them) until cleaned.
    """
    from tritonbisect.session.cleanup import clean_all, clean_session
    from tritonbisect.session.session import Session

    root = resolve_workdir(workdir)
    if everything == bool(session_id):
        raise InputError("give the SESSION to clean, or --all (not both)")
    if everything:
        report = clean_all(root, keep_cache=keep_cache)
        what = f"workdir {root}"
    else:
        try:
            session = Session.open(root, session_id)
        except InputError as exc:
            from tritonbisect.session.cleanup import clean_unreadable

            # a session.json that cannot be read: its folder still goes (its worktrees, whose
            # repositories it no longer says, stay for `clean --all`)
            report = clean_unreadable(root, str(session_id), exc)
            what = f"unreadable session {session_id}"
        else:
            report = clean_session(session, root, keep_cache=keep_cache)
            what = f"session {session.id}"
    click.echo(
        f"cleaned {what}: {len(report.removed_worktrees)} worktrees removed and unregistered, "
        f"{len(report.removed)} folders removed, {report.cache_entries} cached builds forgotten"
    )
    for path in report.removed_worktrees:
        click.echo(f"  worktree {path}")
    for item in report.kept:
        click.echo(f"  kept {item}")


COMMANDS: list[click.Command] = [clean_cmd]
