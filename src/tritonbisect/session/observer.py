"""What a running session tells whoever watches it: the events of a phase (started, a step
started or finished, a note, the answer). `Display` is what the session's parts may call;
`NullUI` hears every event and shows nothing (library use, tests); the terminal and
plain-line displays in `reports.display` build on it."""

from __future__ import annotations

import contextlib
import math
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from tritonbisect.session.names import name_commits

if TYPE_CHECKING:  # pragma: no cover
    from tritonbisect.session.handle import SessionHandle
    from tritonbisect.session.phases import PhaseState


@dataclass
class Progress:
    """Where a phase stands, told to the display with each finished step."""

    remaining: int  # culprits still possible
    steps_left: int  # estimated rounds of tests left
    done: int  # steps finished in this phase
    in_flight: int
    open_cases: tuple[str, ...] = ()  # a test that reports cases: those whose culprit is sought


class Display(Protocol):
    """The events a session's parts tell whoever watches (`NullUI` and its subclasses)."""

    def phase_started(self, session: SessionHandle, phase: PhaseState, n: int,
                      subject: Callable[[str], str]) -> None: ...

    def note(self, text: str) -> None: ...

    def step_started(self, phase: str, commit: str, role: str, subject: str) -> None: ...

    def step_running(self, commit: str, stage: str, node: str) -> None: ...

    def step_stopped(self, commit: str) -> None: ...

    def step_finished(self, phase: str, rec: Mapping[str, Any], subject: str, progress: Progress | None) -> None: ...

    def endpoints_invalid(self, session: SessionHandle, phase: PhaseState, good: Mapping[str, Any] | None,
                          bad: Mapping[str, Any] | None) -> None: ...

    def phase_finished(self, session: SessionHandle, phase: PhaseState) -> None: ...

    def interrupted(self, command: str) -> None: ...

    def paused(self) -> contextlib.AbstractContextManager[None]:
        """While a question is on the terminal: the live part of the display stands still."""
        ...

    def close(self) -> None: ...

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

    def phase_started(self, session: SessionHandle, phase: PhaseState, n: int,
                      subject: Callable[[str], str]) -> None:
        self.jobs = session.settings.executor.jobs or 1
        self.labels = (session.extra.get("labels") or {}).get(phase.spec.name) or {}
        self.marks = _FIXED_MARK if session.settings.verdicts.regress == "fixed" else _VERDICT_MARK

    def short(self, commit: str | None) -> str:
        return self.labels.get(commit or "") or short(commit)

    def said(self, text: str | None) -> str:
        """A reason as the user knows its commits (`wheels`: versions, not the ladder's shas)."""
        return name_commits(text, self.labels)

    def note(self, text: str) -> None:
        pass

    def step_started(self, phase: str, commit: str, role: str, subject: str) -> None:
        pass

    def step_running(self, commit: str, stage: str, node: str) -> None:
        """A stage ("build", "test", or the whole "step") of a step began on a Ray node."""

    def step_stopped(self, commit: str) -> None:
        """A running step was stopped (its verdict no longer matters): it will not finish."""

    def step_finished(self, phase: str, rec: Mapping[str, Any], subject: str, progress: Progress | None) -> None:
        if rec.get("seconds") is not None:
            self.durations.append(float(rec["seconds"]))

    def endpoints_invalid(self, session: SessionHandle, phase: PhaseState, good: Mapping[str, Any] | None,
                          bad: Mapping[str, Any] | None) -> None:
        pass

    def phase_finished(self, session: SessionHandle, phase: PhaseState) -> None:
        pass

    def interrupted(self, command: str) -> None:
        pass

    @contextlib.contextmanager
    def paused(self) -> Iterator[None]:
        yield

    def close(self) -> None:
        pass

    def eta(self, progress: Progress | None) -> float | None:
        if progress is None or not self.durations:
            return None
        mean = sum(self.durations) / len(self.durations)
        confirm = math.ceil(2 / max(1, self.jobs))
        return mean * (progress.steps_left + confirm)
