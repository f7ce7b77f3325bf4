"""A bisect session: endpoint checks, the search loop, culprit confirmation, resume.

A session has one or more *phases* (e.g. "triton", then the "llvm" descent); each phase
bisects one repository between a good and a bad commit with one recipe. Every finished step
is journaled, so `resume` (after Ctrl-C, `kill -9`, or a reboot) rebuilds the search state
from the journal and goes on without re-running finished steps.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tritonbisect.core.clock import now_iso
from tritonbisect.core.errors import EXIT_INTERRUPTED, InputError, TritonBisectError
from tritonbisect.core.secrets import (
    fingerprints,
    hide_fingerprints,
    redact_argv,
    scrub_data,
    secret_values,
    unstored,
)
from tritonbisect.core.versions import environment
from tritonbisect.session.journal import (
    JOURNAL_FILE,
    LOCK_FILE,
    ROLE_SEARCH,
    SESSION_FILE,
    Journal,
    SessionLock,
    atomic_write_json,
    read_json_file,
)
from tritonbisect.session.observer import Display
from tritonbisect.session.phase_run import PhaseRun
from tritonbisect.session.phase_run import candidates_of as candidates_of  # re-exported
from tritonbisect.session.phases import (
    RESUMABLE,
    STATUS_ABORTED,
    STATUS_RUNNING,
    TERMINAL,
    PhaseSpec,
    PhaseState,
    SessionResult,
    safe_name,
    typed,
)
from tritonbisect.session.settings_file import SCHEMA, SCHEMA_KEY, read_settings, settings_record
from tritonbisect.session.workflows import continuation

if TYPE_CHECKING:  # pragma: no cover
    from tritonbisect.session.settings import BisectSettings


class InterruptedRun(TritonBisectError):
    """Ctrl-C (or SIGTERM): the session is saved and can be resumed. Exit 130."""

    exit_code = EXIT_INTERRUPTED


def _unique_name(name: str, taken: list[str]) -> str:
    if name not in taken:
        return name
    n = 2
    while f"{name}-{n}" in taken:
        n += 1
    return f"{name}-{n}"


def _said(exc: Exception) -> str:
    """What a KeyError/TypeError/ValueError of reading session.json says, as a phrase."""
    if isinstance(exc, KeyError):
        return f"it has no {exc.args[0]!r}"
    return str(exc) or type(exc).__name__


def _new_id() -> str:
    return datetime.now().strftime("%Y%m%d-%H%M%S-") + secrets.token_hex(2)


# --- the session -------------------------------------------------------------------------


class Session:
    def __init__(self, directory: Path, data: Mapping[str, Any]) -> None:
        self.dir = directory
        try:
            self.id = safe_name(data["id"], "id")
            self.created = str(data.get("created", ""))
            self.argv = list(typed(data.get("argv"), list, "command line") or [])
            if not all(isinstance(a, str) for a in self.argv):
                raise ValueError("its command line is not a list of strings")
            self.cwd = typed(data.get("cwd"), str, "cwd")
            self.workflow = typed(data.get("workflow"), str, "workflow")
            self.settings = read_settings(data, directory / SESSION_FILE)
            self._phases = [PhaseState.from_dict(p) for p in typed(data.get("phases"), list, "phases") or []]
            self.current_phase = typed(data.get("current_phase", 0), int, "current_phase") or 0
            self.extra: dict[str, Any] = dict(typed(data.get("extra"), dict, "extra") or {})
            # digests of the secrets given with --env (not stored): what reads this session hides them
            prints = data.get("fingerprints") or {}
            self.salt = str(prints.get("salt", ""))
            self.secret_digests = [str(d) for d in prints.get("sha256") or []]
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise InputError(f"session file {directory / SESSION_FILE} is corrupt: {_said(exc)}") from None
        hide_fingerprints(self.salt, self.secret_digests)
        self.journal = Journal(directory / JOURNAL_FILE)
        self.lock = SessionLock(directory / LOCK_FILE, self.id)

    # construction ------------------------------------------------------------------------

    @classmethod
    def create(
        cls,
        workdir: Path,
        settings: BisectSettings,
        phases: list[PhaseSpec],
        *,
        workflow: str | None = None,
        argv: list[str] | None = None,
    ) -> Session:
        workdir = Path(workdir).resolve()
        sessions = workdir / "sessions"
        sessions.mkdir(parents=True, exist_ok=True)
        while True:
            sid = _new_id()
            directory = sessions / sid
            try:
                directory.mkdir()
                break
            except FileExistsError:
                time.sleep(0.01)
        settings.workdir = workdir
        salt = secrets.token_hex(8)
        names: list[str] = []
        for spec in phases:
            spec.name = _unique_name(spec.name, names)
            names.append(spec.name)
        data = {
            SCHEMA_KEY: SCHEMA,
            "id": sid,
            "created": now_iso(),
            "argv": redact_argv(argv) if argv is not None else [],
            "cwd": os.getcwd(),
            "workflow": workflow,
            "settings": settings_record(settings),
            "phases": [PhaseState(spec).to_dict() for spec in phases],
            "current_phase": 0,
            "extra": {"environment": environment()},  # the versions, for the report
            "fingerprints": {"salt": salt, "sha256": fingerprints(secret_values(settings.executor.env), salt)},
        }
        session = cls(directory, data)
        session.settings = settings  # with the secrets' values session.json does not hold
        session.save()
        return session

    @classmethod
    def open(cls, workdir: Path, session_id: str | None = None) -> Session:
        """Open a session by id (or unique id prefix, or folder path); the latest when None."""
        workdir = Path(workdir).resolve()
        sessions = workdir / "sessions"
        directory: Path | None = None
        if session_id:
            as_path = Path(session_id).expanduser()
            if (as_path / SESSION_FILE).exists():
                directory = as_path.resolve()
            elif (sessions / session_id).is_dir():
                directory = sessions / session_id
            else:
                matches = sorted(p for p in sessions.glob(f"{session_id}*") if p.is_dir()) if sessions.is_dir() else []
                if len(matches) == 1:
                    directory = matches[0]
                elif len(matches) > 1:
                    raise InputError(f"session id {session_id!r} is ambiguous in {sessions}")
                else:
                    raise InputError(f"no session {session_id!r} in {sessions}")
        else:
            found = sorted(p for p in sessions.glob("*") if p.is_dir()) if sessions.is_dir() else []
            if not found:
                raise InputError(f"no session in {workdir}; start one with `tritonbisect run`")
            return cls._latest_readable(found)
        data = read_json_file(directory / SESSION_FILE)
        return cls(directory, data)

    @classmethod
    def _latest_readable(cls, found: list[Path]) -> Session:
        """The latest session that can be read: one broken session (a corrupt or missing
        session.json) does not block `status`, `report` or `resume` without an id; each one
        passed over is said on stderr, with the command that removes it."""
        first: InputError | None = None
        for directory in reversed(found):
            try:
                return cls(directory, read_json_file(directory / SESSION_FILE))
            except InputError as exc:
                first = first or exc
                print(f"tritonbisect: note: passed over session {directory.name}, which cannot be read "
                      f"({exc}); `tritonbisect clean {directory.name}` removes it", file=sys.stderr)
        assert first is not None
        raise first

    # state ---------------------------------------------------------------------------------

    def to_dict(self) -> dict[str, Any]:
        return {
            SCHEMA_KEY: SCHEMA,
            "id": self.id,
            "created": self.created,
            "argv": self.argv,
            "cwd": self.cwd,
            "workflow": self.workflow,
            "settings": settings_record(self.settings),
            "phases": [p.to_dict() for p in self._phases],
            "current_phase": self.current_phase,
            "extra": self.extra,
            "fingerprints": {"salt": self.salt, "sha256": self.secret_digests},
        }

    def save(self) -> None:
        data = self.to_dict()
        # a phase's reason and the follow-ups' results may quote a test's output: no secret value
        # the run knows (the settings and the command line are redacted as they are recorded,
        # and never scrubbed: a resumed session runs their commands as they were given)
        for phase in data["phases"]:
            phase["reason"] = scrub_data(phase["reason"])
        data["extra"] = scrub_data(data["extra"])
        atomic_write_json(self.dir / SESSION_FILE, data)

    def phases(self) -> list[PhaseState]:
        return list(self._phases)

    def append_phase(self, spec: PhaseSpec) -> None:
        """Add a phase (it runs after the current one). Phase names are unique in a session:
        a repeated name gets a suffix ("llvm-2"), since the journal tells phases by name."""
        spec.name = _unique_name(spec.name, [p.spec.name for p in self._phases])
        self._phases.append(PhaseState(spec))
        if all(p.status in TERMINAL for p in self._phases[:-1]):
            self.current_phase = len(self._phases) - 1
        self.save()

    def records(self, phase: str | None = None) -> list[dict[str, Any]]:
        recs = self.journal.records()
        return [r for r in recs if phase is None or r.get("phase") == phase]

    def counters(self) -> dict[str, int]:
        return counters_of(self.records())

    def result(self) -> SessionResult:
        """The result of the current (or last) phase."""
        if not self._phases:
            return SessionResult(self.id, "", STATUS_ABORTED, reason="session has no phase")
        index = min(self.current_phase, len(self._phases) - 1)
        return SessionResult.of_phase(self.id, self._phases[index])

    def resume_command(self) -> str:
        import shlex

        from tritonbisect.core.step_args import default_workdir

        cmd = f"tritonbisect resume {self.id}"
        workdir = self.dir.parent.parent
        with contextlib.suppress(OSError):
            if workdir.resolve() != default_workdir().resolve():
                cmd += f" --workdir {shlex.quote(str(workdir))}"
        return cmd

    @contextlib.contextmanager
    def locked(self) -> Iterator[Session]:
        was_held = self.lock.held
        self.lock.acquire()
        try:
            yield self
        finally:
            if not was_held:
                self.lock.release()

    # running -------------------------------------------------------------------------------

    def run(self, ui: Display | None = None) -> SessionResult:
        """Run the current phase to its end (holding the session lock)."""
        from tritonbisect.session.observer import NullUI

        ui = ui or NullUI()
        missing = unstored(self.settings.executor.env)
        if missing:
            names = ", ".join(missing)
            raise InputError(f"session {self.id} was given --env {names} (a secret, so its value is not stored): "
                             f"export {missing[0]}=... in this shell and run `{self.resume_command()}` again")
        with self.locked():
            index = next(
                (i for i, p in enumerate(self._phases) if p.status in RESUMABLE), None
            )
            if index is None:
                return self.result()
            self.current_phase = index
            phase = self._phases[index]
            phase.status = STATUS_RUNNING
            phase.reason = None
            self.save()
            restore = _sigterm_as_interrupt()
            try:
                PhaseRun(self, phase, ui).run()
                _after_phase(self, phase, ui)
            except KeyboardInterrupt:
                from tritonbisect.core.process import cancel_all

                cancel_all()
                phase.status = STATUS_RUNNING
                self.save()
                command = self.resume_command()
                ui.interrupted(command)
                raise InterruptedRun(
                    f"interrupted; session {self.id} is saved. Resume with: {command}"
                ) from None
            finally:
                restore()
            self.save()
            # an after-phase hook may have run more phases and made an earlier one current again
            return SessionResult.of_phase(self.id, self._phases[min(self.current_phase, len(self._phases) - 1)])


def drive(session: Session, ui: Display | None = None) -> SessionResult:
    """Run the session's phases; when one ends and a workflow is set, let it add the next."""
    with session.locked():
        while True:
            result = session.run(ui)
            if not session.workflow:
                return result
            if not continuation(session.workflow)(session, result):
                return result


def _after_phase(session: Session, phase: PhaseState, ui: Display) -> None:
    """What runs when a phase ends, in the phase's lock and Ctrl-C handling: the revert
    check of its culprit (--verify-revert), which may bisect again for a second culprit, or
    of each culprit of its cases, which may bisect again the cases a revert left failing."""
    if not session.settings.follow_ups.verify_revert:
        return
    from tritonbisect.session.revert_cases import after_phase as after_cases
    from tritonbisect.session.revert_cases import has_cases, is_follow_up

    if has_cases(session, phase) or is_follow_up(session, phase):  # one revert per culprit of the cases
        after_cases(session, phase, ui)
        return
    from tritonbisect.session.revert_check import after_phase

    after_phase(session, phase, ui)


def _sigterm_as_interrupt() -> Callable[[], None]:
    if threading.current_thread() is not threading.main_thread():
        return lambda: None

    def handler(signum: int, frame: Any) -> None:
        raise KeyboardInterrupt

    try:
        previous = signal.signal(signal.SIGTERM, handler)
    except ValueError:  # pragma: no cover
        return lambda: None

    def restore() -> None:
        signal.signal(signal.SIGTERM, previous)

    return restore


def counters_of(records: Sequence[Mapping[str, Any]]) -> dict[str, int]:
    tests = builds = cached = 0
    rounds: dict[str, int] = {}
    for rec in records:
        for attempt in [rec, *(rec.get("attempts") or [])]:
            # --perf-design paired: the reference's runs and build are the step's cost too
            tests += len(attempt.get("tests") or []) + len(attempt.get("reference_tests") or [])
            for build in (attempt.get("build") or {}, attempt.get("reference_build") or {}):
                if build.get("kept") and build is attempt.get("reference_build"):
                    continue  # the reference's build a checkout held: nothing done at all
                if build.get("cached"):
                    cached += 1  # an artifact, a recorded failure or a kept build: nothing compiled
                elif build.get("performed", bool(build.get("log"))):
                    builds += 1
        if rec.get("role") == ROLE_SEARCH and rec.get("round"):
            phase = str(rec.get("phase"))
            rounds[phase] = max(rounds.get(phase, 0), int(rec["round"]))
    return {
        "tests": tests,
        "builds": builds,
        "cached_builds": cached,
        # a person's corrections (mark, undo: session/evidence.py) are records, not steps
        "steps": sum(1 for r in records if r.get("role") not in ("mark", "undo")),
        "rounds": sum(rounds.values()),
    }


def phase_totals(records: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """A phase's steps, test runs, builds, what the builds compiled ({"triton": 3,
    "llvm-amd": 5, ...}) and the seconds its steps took: what --json says of each phase."""
    built: dict[str, int] = {}
    seconds = 0.0
    for rec in records:
        seconds += float(rec.get("seconds") or 0)
        for attempt in [rec, *(rec.get("attempts") or [])]:
            for name in (attempt.get("build") or {}).get("built") or []:
                built[str(name)] = built.get(str(name), 0) + 1
    return {**counters_of(records), "built": built, "seconds": round(seconds, 1)}

