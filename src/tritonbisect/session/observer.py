"""What a running session tells whoever watches it: the events of a phase (started, a step
started or finished, a note, the answer). `NullUI` hears them and shows nothing (library
use, tests); the terminal and plain-line displays in `reports.display` build on it."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pragma: no cover
    from tritonbisect.session.handle import SessionHandle

_VERDICT_MARK = {"good": "good", "bad": "BAD", "skip": "skip", "abort": "ABORT"}
# --regress fixed looks for the commit that fixed it: "bad" is the new, fixed state
_FIXED_MARK = {**_VERDICT_MARK, "good": "unfixed", "bad": "FIXED"}


def short(commit: str | None) -> str:
    return (commit or "")[:12]


class NullUI:
    """Shows nothing (library use)."""

    def __init__(self) -> None:
        self.durations: list[float] = []
        self.jobs = 1
        # names a command gave the phase's commits (`wheels`: versions, not its ladder's shas)
        self.labels: dict[str, str] = {}
        self.marks = _VERDICT_MARK

    def phase_started(self, session: SessionHandle, phase: Any, n: int, subject: Callable[[str], str]) -> None:
        self.jobs = session.settings.executor.jobs or 1
        self.labels = (session.extra.get("labels") or {}).get(phase.spec.name) or {}
        self.marks = _FIXED_MARK if session.settings.verdicts.regress == "fixed" else _VERDICT_MARK

    def short(self, commit: str | None) -> str:
        return self.labels.get(commit or "") or short(commit)

    def note(self, text: str) -> None:
        pass

    def step_started(self, phase: str, commit: str, role: str, subject: str) -> None:
        pass

    def step_running(self, commit: str, stage: str, node: str) -> None:
        """A stage ("build", "test", or the whole "step") of a step began on a Ray node."""

    def step_stopped(self, commit: str) -> None:
        """A running step was stopped (its verdict no longer matters): it will not finish."""

    def step_finished(self, phase: str, rec: Mapping[str, Any], subject: str, progress: Any) -> None:
        if rec.get("seconds") is not None:
            self.durations.append(float(rec["seconds"]))

    def endpoints_invalid(self, session: Any, phase: Any, good: Any, bad: Any) -> None:
        pass

    def phase_finished(self, session: Any, phase: Any) -> None:
        pass

    def interrupted(self, command: str) -> None:
        pass

    def close(self) -> None:
        pass

    def eta(self, progress: Any) -> float | None:
        if progress is None or not self.durations:
            return None
        mean = sum(self.durations) / len(self.durations)
        confirm = math.ceil(2 / max(1, self.jobs))
        return mean * (progress.steps_left + confirm)
