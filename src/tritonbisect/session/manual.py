"""Judging by hand: without --test (or with --manual) a person gives each commit's verdict.

Each step builds and installs the commit as usual; its "test" is a probe that only notes where
the commit is ready (the worker's worktree, the target venv). The engine then asks, on the
terminal, as `git bisect` and mozregression do:

    good / bad / skip      the verdict (journaled like a test's, kind "manual")
    retry                  build and install the commit again, then ask again
    undo                   take back the previous answer (a correction record), then ask
    quit                   stop here; `tritonbisect resume` asks this commit again

Commits are judged one at a time (the checkout shown is the one being judged). The endpoints
are the person's own: they are recorded as given, not tested.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, Protocol

from tritonbisect.core.errors import InputError
from tritonbisect.core.outcome import Kind, Verdict

if TYPE_CHECKING:  # pragma: no cover
    from tritonbisect.session.observer import Display
    from tritonbisect.session.phase_journal import PhaseJournal
    from tritonbisect.session.step_queue import StepQueue

# The probe: where the commit is ready. It runs as the step's test, in the worktree and with
# the target environment of the recipe (VIRTUAL_ENV is set by recipes that install into one).
_MARK = "tritonbisect-ready:"
PROBE_COMMAND = (
    f'echo "{_MARK} worktree=$PWD"; '
    f'echo "{_MARK} venv=${{VIRTUAL_ENV:-}}"; '
    f'echo "{_MARK} commit=${{TRITONBISECT_COMMIT:-}}"'
)

ANSWERS = {
    "g": "good", "good": "good", "old": "good",
    "b": "bad", "bad": "bad", "new": "bad",
    "s": "skip", "skip": "skip",
    "r": "retry", "retry": "retry",
    "u": "undo", "undo": "undo",
    "q": "quit", "quit": "quit", "exit": "quit",
}
_PROMPT = "Your verdict? [g]ood [b]ad [s]kip [r]etry [u]ndo [q]uit: "
_HELP = (
    "  good: it behaves like the good commit    bad: it shows the regression\n"
    "  skip: it cannot be judged (another bug hides it)    retry: build and install it again\n"
    "  undo: take back your previous answer    quit: stop; `tritonbisect resume` goes on"
)


def require_terminal(stdin: IO[str] | None = None) -> None:
    """Judging by hand needs a person at a terminal: InputError (exit 2) otherwise."""
    stream = stdin if stdin is not None else sys.stdin
    try:
        tty = bool(stream) and stream.isatty()
    except (AttributeError, ValueError):
        tty = False
    if not tty:
        raise InputError(
            "no test to run and stdin is not a terminal: give --test CMD (or --repro TRACE "
            "--kernel K), or run on a terminal to judge each commit by hand"
        )


def ready_info(rec_or_log: Any) -> dict[str, str]:
    """What the probe said: {"worktree": ..., "venv": ..., "commit": ...} from its log."""
    log = rec_or_log
    if isinstance(rec_or_log, dict):
        tests = rec_or_log.get("tests") or []
        log = tests[-1].get("log") if tests else None
    info: dict[str, str] = {}
    if not log:
        return info
    try:
        text = Path(log).read_text(encoding="utf-8", errors="replace")
    except OSError:
        return info
    for line in text.splitlines():
        if line.startswith(_MARK):
            key, _, value = line[len(_MARK):].strip().partition("=")
            info[key] = value
    return info


class JudgedPhase(Protocol):
    """What the judge uses of the phase it judges for (session/phase_run.py)."""

    spec: Any
    journal: PhaseJournal
    queue: StepQueue

    @property
    def records(self) -> list[dict[str, Any]]: ...

    def subject(self, commit: str) -> str: ...

    def progress(self) -> Any: ...


class ManualJudge:
    """Asks a person for each step's verdict; see the module docstring."""

    def __init__(self, ui: Display, *, stdin: IO[str] | None = None, out: IO[str] | None = None) -> None:
        self.ui = ui
        self.stdin = stdin or sys.stdin
        self._out = out

    @property
    def out(self) -> IO[str]:
        # looked up when used: a live display (rich) replaces sys.stderr while it runs
        return self._out or sys.stderr

    # the endpoints ----------------------------------------------------------------------------

    def declare_endpoints(self, run: JudgedPhase) -> None:
        """Journal the person's --good and --bad as their verdicts (once)."""
        from tritonbisect.core.clock import now_iso
        from tritonbisect.session.evidence import KIND_MANUAL

        have = {r["commit"] for r in run.records if r.get("role") == "endpoint"}
        for commit, verdict in ((run.spec.good, Verdict.GOOD.value), (run.spec.bad, Verdict.BAD.value)):
            if commit in have:
                continue
            stamp = now_iso("milliseconds")
            rec = {
                "seq": run.journal.next_seq(), "phase": run.spec.name, "role": "endpoint", "round": 0,
                "commit": commit, "kind": KIND_MANUAL, "verdict": verdict,
                "reason": f"given as the {verdict} commit", "worker": None,
                "started": stamp, "finished": stamp, "seconds": 0.0, "build": None,
                "tests": [], "dir": "",
            }
            run.journal.append(rec)

    # a step ------------------------------------------------------------------------------------

    def judge(self, run: JudgedPhase, result: Any, role: str) -> tuple[Any, dict[str, Any] | None]:
        """The verdict of a finished step: asked when the commit is ready, else the step's own
        (a commit that does not build is skipped as the policy says, an infra failure aborts)."""
        from tritonbisect.session.evidence import KIND_MANUAL

        while True:
            if result.cancelled or result.kind != Kind.PASS:
                if result.kind == Kind.BUILD_FAILED:
                    self._say(f"{result.commit[:12]} does not build: {result.verdict} ({result.reason})")
                return result, None
            started = time.monotonic()
            answer = self._ask(run, result, role)
            if answer == "retry":
                result = self._rerun(run, result, role)
                continue
            if answer == "quit":
                raise KeyboardInterrupt
            result.kind = KIND_MANUAL
            result.verdict = Verdict(answer)
            result.reason = f"judged {answer} by hand"
            return result, {"judged": {"answer": answer, "seconds": round(time.monotonic() - started, 1)}}

    def _ask(self, run: JudgedPhase, result: Any, role: str) -> str:
        info = ready_info({"tests": result.tests})
        with self.ui.paused():
            self._describe(run, result, role, info)
            while True:
                self.out.write(_PROMPT)
                self.out.flush()
                line = self.stdin.readline()
                if not line:  # end of input (Ctrl-D): stop, as quit
                    self.out.write("\n")
                    return "quit"
                answer = ANSWERS.get(line.strip().lower())
                if answer == "undo":
                    self._undo(run)
                    continue
                if answer is None:
                    self.out.write(f"{_HELP}\n")
                    continue
                return answer

    def _describe(self, run: JudgedPhase, result: Any, role: str, info: dict[str, str]) -> None:
        commit = result.commit
        subject = run.subject(commit)
        progress = run.progress() if role == "search" else None
        what = {"confirm": " (confirmation: judge it again)"}.get(role, "")
        lines = ["", f"commit {commit} is ready to judge{what}", f"  {subject}"]
        worktree = info.get("worktree")
        if worktree:
            lines.append(f"  checkout: {worktree}")
        venv = info.get("venv")
        if venv and venv != os.environ.get("VIRTUAL_ENV"):  # not just inherited from us
            lines.append(f"  venv:     . {venv}/bin/activate")
        else:
            lines.append("  venv:     none of ours (the build's output is in the checkout)")
        build = result.build or {}
        if build.get("log"):
            lines.append(f"  build log: {build['log']}")
        if progress is not None and progress.remaining:
            lines.append(
                f"  {progress.remaining} commits still possible, about {progress.steps_left} "
                "more to judge"
            )
        self.out.write("\n".join(lines) + "\n")
        self.out.flush()

    def _say(self, text: str) -> None:
        with self.ui.paused():
            self.out.write(f"tritonbisect: {text}\n")
            self.out.flush()

    def _rerun(self, run: JudgedPhase, result: Any, role: str) -> Any:
        """Build and install the commit again (same role), waiting for it here."""
        self._say(f"building and installing {result.commit[:12]} again")
        return run.queue.run_now(result.commit, role)

    def _undo(self, run: JudgedPhase) -> None:
        """Take back the latest verdict given by hand in this phase (a correction record)."""
        from tritonbisect.session.evidence import KIND_MANUAL, undone_seqs

        undone = undone_seqs(run.records)
        last = next(
            (r for r in reversed(run.records)
             if r.get("kind") == KIND_MANUAL and r.get("role") in ("search", "confirm", "mark")
             and int(r.get("seq") or 0) not in undone),
            None,
        )
        if last is None:
            self.out.write("nothing to undo: no verdict given by hand yet in this phase\n")
            return
        rec = undo_record(run.journal.next_seq(), run.spec.name, last, "undone at the prompt")
        run.journal.append(rec)
        self.out.write(
            f"took back {last['verdict']} for {str(last['commit'])[:12]}; it may be asked again\n"
        )


def undo_record(seq: int, phase: str, target: dict[str, Any], why: str) -> dict[str, Any]:
    """The journal record that cancels `target` (see session/evidence.py)."""
    from tritonbisect.core.clock import now_iso
    from tritonbisect.session.evidence import ROLE_UNDO

    return {
        "seq": seq, "phase": phase, "role": ROLE_UNDO, "undoes": int(target["seq"]),
        "commit": target.get("commit"), "verdict": None, "kind": "correction",
        "reason": why, "finished": now_iso("milliseconds"), "tests": [], "build": None,
    }

