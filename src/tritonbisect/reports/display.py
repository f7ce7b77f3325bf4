"""What the user sees while a session runs.

On a terminal: a live display (rich) with the range left, the steps left, an ETA from the
measured step times, and each finished step printed above it. Elsewhere (CI, pipes, tests):
plain lines. Both write to stderr, so `--json` keeps stdout to the one JSON object.
"""

from __future__ import annotations

import contextlib
import sys
import time
from collections.abc import Callable, Iterator, Mapping
from typing import IO, TYPE_CHECKING, Any

from tritonbisect.core.perf import change_text, summary_of
from tritonbisect.core.untrusted import one_line, printable
from tritonbisect.reports.case_tables import by_culprit, step_cases
from tritonbisect.session.case_answer import cases_state
from tritonbisect.session.observer import _FIXED_MARK, NullUI, Progress

if TYPE_CHECKING:  # pragma: no cover
    from tritonbisect.session.handle import SessionHandle
    from tritonbisect.session.phases import PhaseState


def log_of(rec: Mapping[str, Any] | None) -> str | None:
    """The most telling log of a step: the last test's, else the build's."""
    if not rec:
        return None
    tests = rec.get("tests") or []
    if tests and tests[-1].get("log"):
        return tests[-1]["log"]
    if rec.get("record") and rec["record"].get("log"):
        return rec["record"]["log"]
    build = rec.get("build") or {}
    return build.get("log")


def where_of(rec: Mapping[str, Any]) -> str:
    """Where a step ran, for its line: on which Ray node (built on one, tested on another);
    nothing for a local step."""
    node = rec.get("node")
    if not node:
        return ""
    built = (rec.get("build") or {}).get("node")
    if built and built != node:
        return f" built on {built}, tested on {node}"
    return f" on {node}"


def format_eta(seconds: float | None) -> str:
    if seconds is None:
        return "?"
    seconds = int(round(seconds))
    if seconds < 60:
        return f"{seconds}s"
    if seconds < 3600:
        return f"{seconds // 60}m{seconds % 60:02d}s"
    return f"{seconds // 3600}h{(seconds % 3600) // 60:02d}m"


def open_text(names: tuple[str, ...], most: int = 5) -> str:
    """The cases still searched, named (the first few) and counted."""
    shown = ", ".join(names[:most])
    return shown + (f" (+{len(names) - most})" if len(names) > most else "")


class PlainUI(NullUI):
    """One line per event on a stream (stderr by default)."""

    def __init__(self, stream: IO[str] | None = None) -> None:
        super().__init__()
        self.stream = stream or sys.stderr

    def _print(self, text: str) -> None:
        # subjects, case names and a test's output are someone else's text: no terminal escapes
        print(printable(text), file=self.stream, flush=True)

    def phase_started(self, session: SessionHandle, phase: PhaseState, n: int, subject: Callable[[str], str]) -> None:
        super().phase_started(session, phase, n, subject)
        spec = phase.spec
        where = f"{n} versions" if self.labels else f"{n} commits in {spec.repo}"
        self._print(
            f"tritonbisect: session {session.id}, phase {spec.name}: bisecting {where} "
            f"(good {self.short(spec.good)}, bad {self.short(spec.bad)}), "
            f"{session.settings.executor.jobs} worker(s)"
        )

    def note(self, text: str) -> None:
        self._print(f"tritonbisect: {text}")

    def step_finished(self, phase: str, rec: Mapping[str, Any], subject: str, progress: Progress | None) -> None:
        super().step_finished(phase, rec, subject, progress)
        self._print(self.step_line(rec, subject, progress))

    def step_line(self, rec: Mapping[str, Any], subject: str, progress: Progress | None) -> str:
        verdict = self.marks.get(str(rec.get("verdict")), str(rec.get("verdict")))
        verdict = verdict.ljust(7 if self.marks is _FIXED_MARK else 5)
        conflict = (rec.get("revert_tree") or {}).get("conflict")
        kind = "conflict" if conflict else rec.get("kind")  # a revert that did not apply built nothing
        change = change_text(summary_of(rec))  # --regress perf: the change (and its interval)
        line = (
            f"  [{rec.get('role')}] {self.short(rec.get('commit'))} {verdict} "
            f"{kind}{' ' + change if change else ''} ({float(rec.get('seconds') or 0):.1f}s)"
            f"{where_of(rec)} {subject[:50]}"
        )
        open_cases = tuple(getattr(progress, "open_cases", ()) or ())
        if not open_cases and rec.get("role") == "revert":  # which cases the revert fixed
            line += step_cases(rec, tuple(rec.get("cases") or ()))
        if open_cases:
            line += step_cases(rec, open_cases)
        if progress is not None:
            line += (
                f" | {progress.remaining} left, ~{progress.steps_left} steps,"
                f" ETA {format_eta(self.eta(progress))}"
            )
        if open_cases:
            line += f" | open: {open_text(open_cases)}"
        return line

    def endpoints_invalid(self, session: SessionHandle, phase: PhaseState, good: Mapping[str, Any] | None,
                          bad: Mapping[str, Any] | None) -> None:
        from tritonbisect.core.process import tail_lines

        self._print(f"tritonbisect: endpoints invalid: {self.said(phase.reason)}")
        for name, rec in (("good", good), ("bad", bad)):
            log = log_of(rec)
            self._print(f"--- {name} endpoint: {rec.get('kind') if rec else 'not tested'}"
                        f"{' — ' + log if log else ''}")
            if log:
                from pathlib import Path

                tail = tail_lines(Path(log), 15)
                for line in tail.splitlines():
                    self._print(f"    {line}")

    def phase_finished(self, session: SessionHandle, phase: PhaseState) -> None:
        if phase.status == "found" and self.labels:
            self._print(
                f"tritonbisect: phase {phase.spec.name}: first bad version {self.short(phase.culprit)} "
                f"(confidence {phase.confidence})"
            )
        elif phase.status == "found" and phase.spec.name == "pairs":
            # the end of an LLVM range, not a culprit (domains/llvm/pairs.py)
            self._print(f"tritonbisect: phase pairs: first bad pair at llvm {self.short(phase.culprit)}")
        elif phase.status == "found":
            self._print(
                f"tritonbisect: phase {phase.spec.name}: culprit {phase.culprit} "
                f"(confidence {phase.confidence})"
            )
            for culprit, names in by_culprit(cases_state(session, phase.spec.name) or {}):
                self._print(f"tritonbisect:   {self.short(culprit)}: {open_text(tuple(names))}")
        elif phase.status == "inconclusive":
            self._print(
                f"tritonbisect: phase {phase.spec.name}: inconclusive, "
                f"{len(phase.candidates)} candidates: "
                + " ".join(self.short(c) for c in phase.candidates[:20])
            )
        elif phase.status == "aborted":
            self._print(f"tritonbisect: phase {phase.spec.name}: aborted: {self.said(phase.reason)}")
        if phase.reason and phase.status in ("found",) and phase.confidence == "low":
            self._print(f"tritonbisect: {self.said(phase.reason)}")

    def interrupted(self, command: str) -> None:
        # the command's last line (InterruptedRun, at the CLI boundary) says how to resume
        self._print("tritonbisect: interrupted; the running steps were stopped")


class RichUI(PlainUI):
    """A live status line on a terminal; finished steps are printed above it."""

    def __init__(self, console: Any = None) -> None:
        """`console`: a rich Console to draw on (default: stderr's terminal)."""
        super().__init__(sys.stderr)
        from rich.console import Console
        from rich.live import Live

        self.console = console if console is not None else Console(stderr=True)
        self._status = "starting"
        self._started = time.monotonic()
        self._phase = ""
        self._flying: dict[str, str] = {}
        self.live = Live(
            get_renderable=self._render, console=self.console, refresh_per_second=4, transient=True
        )
        self.live.start()

    def _render(self) -> Any:
        from rich.text import Text

        elapsed = format_eta(time.monotonic() - self._started)
        flying = ", ".join(
            f"{c}" + (f" ({where})" if "@" in where else "")
            for c, where in list(self._flying.items())[:4]
        )
        text = Text(one_line(f"{self._phase} {self._status} | elapsed {elapsed}"), style="bold cyan")
        if flying:
            text.append(one_line(f" | testing {flying}"), style="yellow")
        return text

    def _print(self, text: str) -> None:
        self.console.print(printable(text), markup=False, highlight=False)

    def phase_started(self, session: SessionHandle, phase: PhaseState, n: int, subject: Callable[[str], str]) -> None:
        super().phase_started(session, phase, n, subject)
        self._phase = phase.spec.name
        self._status = f"{n} {'versions' if self.labels else 'commits'} in range"

    def step_started(self, phase: str, commit: str, role: str, subject: str) -> None:
        self._flying.setdefault(self.short(commit), role)  # step_running may have come first

    def step_running(self, commit: str, stage: str, node: str) -> None:
        self._flying[self.short(commit)] = f"{stage}@{node}"

    def step_stopped(self, commit: str) -> None:
        self._flying.pop(self.short(commit), None)

    def step_finished(self, phase: str, rec: Mapping[str, Any], subject: str, progress: Progress | None) -> None:
        self._flying.pop(self.short(rec.get("commit")), None)
        super().step_finished(phase, rec, subject, progress)
        if progress is not None:
            self._status = (
                f"range left {progress.remaining} commits | steps left ~{progress.steps_left}"
                f" | ETA {format_eta(self.eta(progress))}"
            )
            open_cases = tuple(getattr(progress, "open_cases", ()) or ())
            if open_cases:
                self._status += f" | open cases: {open_text(open_cases)}"

    @contextlib.contextmanager
    def paused(self) -> Iterator[None]:
        """The live status line stops while a question is on the terminal."""
        self.live.stop()
        try:
            yield
        finally:
            self.live.start()

    def close(self) -> None:
        self.live.stop()


def make_ui(*, quiet: bool = False) -> NullUI:
    if quiet:
        return NullUI()
    if sys.stderr.isatty():
        try:
            return RichUI()
        except Exception:  # noqa: BLE001 - a display problem must not stop a bisect
            return PlainUI()
    return PlainUI()
