"""A phase's parts made alone, for their unit tests: a real session on disk (session.json and
journal.jsonl in a tmp folder), a real git repository, and the PhaseContext every part takes;
the steps are whatever a test journals."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from engine_repo import git
from tritonbisect.core.history import History
from tritonbisect.search.classic import Candidates
from tritonbisect.session.names import CommitNames
from tritonbisect.session.observer import NullUI
from tritonbisect.session.phase_context import PhaseContext
from tritonbisect.session.phase_journal import PhaseJournal
from tritonbisect.session.phases import PhaseSpec
from tritonbisect.session.session import Session
from tritonbisect.session.settings import BisectSettings


class Notes(NullUI):
    """A display that keeps the notes it is told."""

    def __init__(self) -> None:
        super().__init__()
        self.notes: list[str] = []
        self.finished: list[dict[str, Any]] = []

    def note(self, text: str) -> None:
        self.notes.append(text)

    def step_finished(self, phase: str, rec: Any, subject: str, progress: Any) -> None:
        super().step_finished(phase, rec, subject, progress)
        self.finished.append(dict(rec))


def phase_context(tmp_path: Path, commits: Sequence[str], *, good: str = "c000", ui: NullUI | None = None,
                  settings: BisectSettings | None = None, aborts: list[str] | None = None) -> PhaseContext:
    """The context of a phase over `commits` (oldest first, the bad one last) after `good`."""
    repo = tmp_path / "repo"
    repo.mkdir(exist_ok=True)
    git(repo, "init", "-q")
    spec = PhaseSpec(name="main", repo=repo, good=good, bad=commits[-1], recipe_name="command",
                     recipe_config={}, candidates=list(commits))
    session = Session.create(tmp_path / "work", settings or BisectSettings(), [spec])
    phase = session.phases()[0]
    history = History(repo)
    journal = PhaseJournal(session.journal, "main", session.journal.records())
    names = CommitNames(history, {}, [good, *commits])
    ctx = PhaseContext(session, phase, Candidates.linear(list(commits)), history, journal, names, ui or Notes())
    if aborts is not None:
        ctx.abort = aborts.append
    return ctx
