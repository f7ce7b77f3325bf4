"""The terminal display (rich) driven through a real session, on an in-memory terminal."""

from __future__ import annotations

import io
from pathlib import Path

from rich.console import Console

from engine_repo import BUILD, TEST, linear
from tritonbisect.builds.recipes import TestSpec as Spec
from tritonbisect.domains.command.recipe import CommandRecipe
from tritonbisect.options.bisect_options import bisect_settings
from tritonbisect.reports.display import RichUI
from tritonbisect.session.session import PhaseSpec, Session, drive


def test_rich_display_shows_each_step_and_the_culprit(tmp_path: Path) -> None:
    shas = linear(tmp_path / "repo", 8, culprit=5)
    recipe = CommandRecipe(BUILD, Spec(TEST))
    phase = PhaseSpec("main", tmp_path / "repo", shas[0], shas[-1], recipe.name, recipe.config())
    settings = bisect_settings(workdir=str(tmp_path / "work"), test=TEST)
    session = Session.create(settings.workdir, settings, [phase])
    screen = io.StringIO()
    ui = RichUI(Console(file=screen, force_terminal=True, width=200))
    try:
        result = drive(session, ui)
    finally:
        ui.close()
    assert result.culprit == shas[5]
    out = screen.getvalue()
    assert "\x1b[" in out  # a terminal: the live status line is drawn with escape codes
    assert f"phase main: bisecting {len(shas) - 1} commits" in out
    assert f"[endpoint] {shas[0][:12]} good" in out and f"[endpoint] {shas[-1][:12]} BAD" in out
    assert "left, ~" in out and "ETA" in out  # progress of the search steps
    assert f"[confirm] {shas[5][:12]} BAD" in out
    assert f"culprit {shas[5]} (confidence high)" in out
