"""`tritonbisect run`: bisect any repository with the user's own build and test commands.

Thin: parse the options, make the "command" recipe's phase, start the session.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from tritonbisect.core.errors import InputError
from tritonbisect.options.bisect_options import bisect_settings, common_bisect_options, wants_json
from tritonbisect.options.launch import start_session

DEFAULT_BUILD_TIMEOUT = 3 * 3600.0


@click.command("run")
@click.option("--repo", type=click.Path(file_okay=False, path_type=Path), default=".", show_default=True, help="The git repository to bisect (never modified).")
@click.option("--good", required=True, metavar="REV", help="A commit where the test passes.")
@click.option("--bad", required=True, metavar="REV", help="A later commit where it fails.")
@click.option("--build", "build_cmd", metavar="CMD", help="Build command (bash), run in each commit's checkout before the test.")
@click.option("--artifact", metavar="PATH", help="What --build leaves in the checkout (file or folder): cached per commit and restored instead of rebuilt, so a commit built on one Ray node is tested on another.")
@click.option("--build-timeout", type=float, default=DEFAULT_BUILD_TIMEOUT, show_default=True, metavar="S", help="Seconds one --build may take; a build still running then is killed, with everything it started, and the commit counts as one that does not build (--on-build-failure).")
@common_bisect_options
def run_cmd(repo: Path, good: str, bad: str, build_cmd: str | None, artifact: str | None, build_timeout: float,
            **kwargs: Any) -> None:
    """Bisect REPO between GOOD and BAD with your own build and test commands."""
    from tritonbisect.core.history import History
    from tritonbisect.domains.command.recipe import CommandRecipe
    from tritonbisect.session.session import PhaseSpec, candidates_of

    if build_timeout <= 0:
        raise InputError("--build-timeout must be a positive number of seconds")
    settings = bisect_settings(**kwargs)
    if not settings.test.wanted:
        raise InputError("give the test to run: --test CMD (or --repro TRACE --kernel K)")
    history = History(repo)
    good_sha = history.resolve(good)
    bad_sha = history.resolve(bad)
    candidates_of(history, good_sha, bad_sha, first_parent=settings.search.first_parent)  # validates
    spec = settings.test_spec(repo=Path(history.root), bad=bad_sha, history=history)
    recipe = CommandRecipe(build_cmd, spec, artifact=_artifact_path(artifact, build_cmd), build_timeout=build_timeout)
    phase = PhaseSpec(
        name="main",
        repo=Path(history.root),
        good=good_sha,
        bad=bad_sha,
        recipe_name=recipe.name,
        recipe_config=recipe.config(),
        first_parent=settings.search.first_parent,
    )
    start_session(settings, [phase], json_out=wants_json(kwargs))


def _artifact_path(artifact: str | None, build_cmd: str | None) -> str | None:
    """--artifact as a clean path inside the checkout."""
    import posixpath

    if artifact is None:
        return None
    if not build_cmd:
        raise InputError("--artifact names what --build produces; give --build CMD too")
    norm = posixpath.normpath(artifact.strip())
    if not artifact.strip() or norm in (".", "") or norm.startswith("../") or norm == ".." or posixpath.isabs(norm):
        raise InputError(f"--artifact {artifact!r}: give a path inside the checkout, e.g. build/out")
    return norm


COMMANDS: list[click.Command] = [run_cmd]
