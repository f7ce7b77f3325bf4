"""What every domain's bisecting command does once its options are read: resolve the test at
the bad commit, create the session, and hand it to the engine (`commands.engine.execute`)."""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

from tritonbisect.core.errors import InputError
from tritonbisect.core.refs import resolve

if TYPE_CHECKING:  # pragma: no cover
    from tritonbisect.session.session import Session
    from tritonbisect.session.settings import BisectSettings


def resolve_test(settings: BisectSettings, history: Any, commit: str) -> dict[str, Any]:
    """--test / --repro as the TestSpec dict of the recipes; the script is checked at `commit`.

    A relative script path is looked up from the current directory, then from the root of
    the repository the test runs in (`--triton-dir DIR --test test/t.py` from elsewhere).
    """
    if not settings.test.wanted:
        raise InputError("give the test to run: --test CMD (or --repro TRACE --kernel K)")
    root = Path(history.root)
    try:
        spec = settings.test_spec(repo=root, bad=commit, history=history)
    except InputError:
        if Path.cwd().resolve() == root.resolve() or settings.test.repro:
            raise
        spec = settings.test_spec(repo=root, bad=commit, history=history, cwd=root)
    return spec.to_dict()


def start_session(settings: BisectSettings, phases: Sequence[Any], *, json_out: bool, workflow: str | None = None,
                  before_run: Callable[[Any], None] | None = None) -> None:
    """Create the session of `phases` (with its workflow, see session/workflows.py), let
    `before_run` add to it, and run it to the end (the result as JSON with `json_out`): this
    exits with the documented code."""
    from tritonbisect.session.phase_hint import check_hint
    from tritonbisect.session.session import Session

    check_hint(settings.hint, [getattr(p, "spec", p) for p in phases])
    session = Session.create(
        settings.workdir, settings, list(phases), workflow=workflow, argv=list(sys.argv[1:])
    )
    if before_run is not None:
        before_run(session)
    execute(session, json_out=json_out)


# the engine that runs a session to its end and its follow-ups, and exits with the code
_EXECUTE = "tritonbisect.commands.engine:execute"
_DRIVE_AND_FOLLOW = "tritonbisect.commands.engine:drive_and_follow"


def execute(session: Session, *, json_out: bool) -> NoReturn:
    """Run `session` to its end and exit with the documented code (commands/engine.py)."""
    run: Callable[..., NoReturn] = resolve(_EXECUTE)
    run(session, json_out=json_out)


def drive_and_follow(session: Session, *, json_out: bool) -> tuple[Any, dict[str, Any]]:
    """Run `session` and its follow-ups; the result and the follow-ups' JSON (commands/engine.py)."""
    run: Callable[..., tuple[Any, dict[str, Any]]] = resolve(_DRIVE_AND_FOLLOW)
    return run(session, json_out=json_out)


def workdir_flag(session: Session) -> str:
    """` --workdir DIR` when the session lives outside the default workdir, else ""."""
    cmd = session.resume_command()
    i = cmd.find(" --workdir ")
    return cmd[i:] if i >= 0 else ""
