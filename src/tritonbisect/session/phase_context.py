"""What every part of one phase shares: the session and the phase it runs, the range, the
journal as the phase sees it, how its commits are named, the display, and how to abort.

`PhaseRun` makes one and hands it to each part (the step queue, the endpoint check, the
search loop, the strategies, the confirmation, the answer); a part takes the context and the
few other parts it works with, nothing else, so that a part can be made and tested alone.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from tritonbisect.core.history import History
from tritonbisect.search.classic import Candidates
from tritonbisect.session.handle import SessionHandle
from tritonbisect.session.names import CommitNames
from tritonbisect.session.observer import Display
from tritonbisect.session.phase_journal import PhaseJournal
from tritonbisect.session.phases import PhaseSpec, PhaseState
from tritonbisect.session.settings import BisectSettings

_CANDIDATES: dict[tuple[str, str, str, bool], Candidates] = {}


def candidates_of(history: History, good: str, bad: str, *, first_parent: bool = False) -> Candidates:
    """`history.candidates(...)`, remembered for this process (a command validates the range
    before it creates the session; the phase then reuses the result)."""
    key = (str(history.root), good, bad, bool(first_parent))
    if key not in _CANDIDATES:
        _CANDIDATES[key] = history.candidates(good, bad, first_parent=first_parent)
    return _CANDIDATES[key]


def _no_abort(reason: str) -> None:
    raise RuntimeError(f"the phase aborted: {reason}")


@dataclass
class PhaseContext:
    session: SessionHandle
    phase: PhaseState
    cands: Candidates
    history: History
    journal: PhaseJournal
    names: CommitNames
    ui: Display
    # ends the phase as aborted (its reason in session.json; the running steps abandoned)
    abort: Callable[[str], None] = _no_abort

    @classmethod
    def for_phase(cls, session: SessionHandle, phase: PhaseState, ui: Display, *,
                  abort: Callable[[str], None] = _no_abort) -> PhaseContext:
        """The context of `phase` as the session's journal and the repository have it now."""
        spec = phase.spec
        history = History(spec.repo)
        if spec.candidates:
            cands = Candidates.linear(spec.candidates)
        else:
            cands = candidates_of(history, spec.good, spec.bad, first_parent=spec.first_parent)
        # read once: the phases share the journal
        journal = PhaseJournal(session.journal, spec.name, session.journal.records())
        labels = (session.extra.get("labels") or {}).get(spec.name) or {}
        names = CommitNames(history, labels, [spec.good, *cands.order])
        return cls(session, phase, cands, history, journal, names, ui, abort)

    @property
    def spec(self) -> PhaseSpec:
        return self.phase.spec

    @property
    def settings(self) -> BisectSettings:
        return self.session.settings

    @property
    def jobs(self) -> int:
        return self.session.settings.executor.jobs

    @property
    def good(self) -> str:
        return self.phase.spec.good

    @property
    def steps_dir(self) -> Path:
        return self.session.dir / "steps"

    def subject(self, commit: str) -> str:
        return self.names.subject(commit)
