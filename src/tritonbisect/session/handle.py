"""What the parts that run inside a session -- a phase, the revert check after it -- use of
the session: a Protocol, so that they need not import the session module that runs them."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Protocol

from tritonbisect.session.journal import Journal
from tritonbisect.session.phases import PhaseSpec, PhaseState, SessionResult
from tritonbisect.session.settings import BisectSettings


class SessionHandle(Protocol):
    id: str
    dir: Path
    settings: BisectSettings
    journal: Journal
    extra: dict[str, Any]
    current_phase: int

    def save(self) -> None: ...

    def records(self, phase: str | None = None) -> list[dict[str, Any]]: ...

    def phases(self) -> list[PhaseState]: ...

    def append_phase(self, spec: PhaseSpec) -> None: ...

    def result(self) -> SessionResult: ...
