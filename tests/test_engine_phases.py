"""Multi-phase sessions through the library API: a workflow appends a phase."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from engine_repo import BUILD, TEST, linear
from tritonbisect.builds.recipes import TestSpec as Spec
from tritonbisect.domains.command.recipe import CommandRecipe
from tritonbisect.options.bisect_options import bisect_settings
from tritonbisect.reports.session_report import render_json, render_markdown
from tritonbisect.session.observer import NullUI
from tritonbisect.session.session import PhaseSpec, Session, drive
from tritonbisect.session.workflows import WORKFLOWS


def _spec(name: str, repo: Path, good: str, bad: str) -> PhaseSpec:
    recipe = CommandRecipe(BUILD, Spec(TEST))
    return PhaseSpec(name, repo, good, bad, recipe.name, recipe.config())


def descend(session: Session, result: Any) -> bool:
    """A workflow's continuation: after the "outer" phase, bisect the repository that
    session.extra names (as the LLVM descent keeps its plan there)."""
    session.extra.setdefault("calls", []).append(result.status)
    if result.phase == "outer" and result.status == "found":
        inner = session.extra["inner"]
        session.append_phase(_spec("inner", Path(inner["repo"]), inner["good"], inner["bad"]))
        return True
    return False


def test_workflow_appends_a_phase_and_the_report_has_a_section_per_phase(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    outer = linear(tmp_path / "outer", 10, culprit=4)
    inner = linear(tmp_path / "inner", 20, culprit=13)
    # a workflow of the test's own, in the table as the session finds every workflow
    monkeypatch.setitem(WORKFLOWS, "test-descent", f"{__name__}:descend")
    settings = bisect_settings(workdir=str(tmp_path / "work"), test=TEST)
    session = Session.create(
        settings.workdir, settings, [_spec("outer", tmp_path / "outer", outer[0], outer[-1])],
        workflow="test-descent", argv=["run", "--example"],
    )
    session.extra["inner"] = {"repo": str(tmp_path / "inner"), "good": inner[0], "bad": inner[-1]}
    session.save()
    result = drive(session, NullUI())
    assert session.extra["calls"] == ["found", "found"]
    assert result.phase == "inner" and result.culprit == inner[13]
    phases = Session.open(tmp_path / "work", session.id).phases()
    assert [(p.spec.name, p.status, p.culprit) for p in phases] == [
        ("outer", "found", outer[4]),
        ("inner", "found", inner[13]),
    ]
    assert session.counters()["tests"] == len(session.records())
    md = render_markdown(session)
    assert "### Phase `outer`: found" in md and "### Phase `inner`: found" in md
    data = render_json(session)
    assert [p["culprit"] for p in data["phases"]] == [outer[4], inner[13]]
    # a finished session runs nothing more
    before = len(session.records())
    assert drive(Session.open(tmp_path / "work"), NullUI()).culprit == inner[13]
    assert len(session.records()) == before
