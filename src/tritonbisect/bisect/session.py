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
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator, Mapping
from concurrent.futures import FIRST_COMPLETED, Future, wait
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tritonbisect.bisect.journal import (
    JOURNAL_FILE,
    LOCK_FILE,
    ROLE_CONFIRM,
    ROLE_ENDPOINT,
    ROLE_SEARCH,
    SESSION_FILE,
    Journal,
    SessionLock,
    atomic_write_json,
    read_json_file,
)
from tritonbisect.errors import (
    EXIT_ABORTED,
    EXIT_ENDPOINTS_INVALID,
    EXIT_FOUND,
    EXIT_INCONCLUSIVE,
    EXIT_INTERRUPTED,
    InputError,
    TritonBisectError,
)

if TYPE_CHECKING:  # pragma: no cover
    from tritonbisect.commands.options import BisectSettings

STATUS_PENDING = "pending"
STATUS_RUNNING = "running"
STATUS_FOUND = "found"
STATUS_INCONCLUSIVE = "inconclusive"
STATUS_INVALID = "invalid-endpoints"
STATUS_ABORTED = "aborted"
TERMINAL = (STATUS_FOUND, STATUS_INCONCLUSIVE, STATUS_INVALID)
RESUMABLE = (STATUS_PENDING, STATUS_RUNNING, STATUS_ABORTED)

EXIT_OF_STATUS = {
    STATUS_FOUND: EXIT_FOUND,
    STATUS_INCONCLUSIVE: EXIT_INCONCLUSIVE,
    STATUS_INVALID: EXIT_ENDPOINTS_INVALID,
    STATUS_ABORTED: EXIT_ABORTED,
}


class InterruptedRun(TritonBisectError):
    """Ctrl-C (or SIGTERM): the session is saved and can be resumed. Exit 130."""

    exit_code = EXIT_INTERRUPTED


# --- workflows ---------------------------------------------------------------------------

ContinueFn = Callable[["Session", "SessionResult"], bool]
WORKFLOWS: dict[str, ContinueFn] = {}


def register_workflow(name: str, continue_fn: ContinueFn) -> None:
    """`continue_fn(session, result)` runs when a phase ends; it returns True when it appended
    a phase that should run next (e.g. the LLVM descent after a Triton LLVM-bump culprit)."""
    WORKFLOWS[name] = continue_fn


def _load_workflows() -> None:
    import importlib

    for module in ("tritonbisect.bisect.workflow",):
        try:
            importlib.import_module(module)
        except ModuleNotFoundError as exc:
            if exc.name != module:
                raise


# --- data --------------------------------------------------------------------------------


@dataclass
class PhaseSpec:
    name: str  # "main", "triton", "llvm", "torch", "pairs"
    repo: Path  # the repository whose commits are bisected (worktrees are made from it)
    good: str  # full shas
    bad: str
    recipe_name: str
    recipe_config: dict
    first_parent: bool = False
    candidates: list[str] | None = None  # explicit linear candidates, oldest first, bad last

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "repo": str(self.repo),
            "good": self.good,
            "bad": self.bad,
            "recipe_name": self.recipe_name,
            "recipe_config": self.recipe_config,
            "first_parent": self.first_parent,
            "candidates": self.candidates,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> PhaseSpec:
        return cls(
            name=str(data["name"]),
            repo=Path(data["repo"]),
            good=str(data["good"]),
            bad=str(data["bad"]),
            recipe_name=str(data["recipe_name"]),
            recipe_config=dict(data.get("recipe_config") or {}),
            first_parent=bool(data.get("first_parent", False)),
            candidates=list(data["candidates"]) if data.get("candidates") else None,
        )


@dataclass
class PhaseState:
    spec: PhaseSpec
    status: str = STATUS_PENDING
    culprit: str | None = None
    candidates: list[str] = field(default_factory=list)
    confidence: str | None = None  # "high" | "low" once a culprit is confirmed
    reason: str | None = None  # why it ended this way, one line
    range_size: int | None = None  # commits in (good, bad]

    def to_dict(self) -> dict[str, Any]:
        return {
            **self.spec.to_dict(),
            "status": self.status,
            "culprit": self.culprit,
            "candidates": self.candidates,
            "confidence": self.confidence,
            "reason": self.reason,
            "range_size": self.range_size,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> PhaseState:
        return cls(
            spec=PhaseSpec.from_dict(data),
            status=str(data.get("status") or STATUS_PENDING),
            culprit=data.get("culprit"),
            candidates=list(data.get("candidates") or []),
            confidence=data.get("confidence"),
            reason=data.get("reason"),
            range_size=data.get("range_size"),
        )


@dataclass
class SessionResult:
    session_id: str
    phase: str
    status: str
    culprit: str | None = None
    candidates: list[str] = field(default_factory=list)
    confidence: str | None = None
    reason: str | None = None

    @property
    def exit_code(self) -> int:
        return EXIT_OF_STATUS.get(self.status, EXIT_ABORTED)

    @classmethod
    def of_phase(cls, session_id: str, phase: PhaseState) -> SessionResult:
        return cls(
            session_id=session_id,
            phase=phase.spec.name,
            status=phase.status,
            culprit=phase.culprit,
            candidates=list(phase.candidates),
            confidence=phase.confidence,
            reason=phase.reason,
        )


def _unique_name(name: str, taken: list[str]) -> str:
    if name not in taken:
        return name
    n = 2
    while f"{name}-{n}" in taken:
        n += 1
    return f"{name}-{n}"


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def _new_id() -> str:
    return datetime.now().strftime("%Y%m%d-%H%M%S-") + secrets.token_hex(2)


# --- the session -------------------------------------------------------------------------


class Session:
    def __init__(self, directory: Path, data: Mapping[str, Any]) -> None:
        from tritonbisect.commands.options import BisectSettings

        self.dir = directory
        try:
            self.id = str(data["id"])
            self.created = str(data.get("created", ""))
            self.argv = list(data.get("argv") or [])
            self.cwd = data.get("cwd")
            self.workflow = data.get("workflow")
            self.settings = BisectSettings.from_dict(data.get("settings") or {})
            self._phases = [PhaseState.from_dict(p) for p in data.get("phases") or []]
            self.current_phase = int(data.get("current_phase", 0))
            self.extra: dict[str, Any] = dict(data.get("extra") or {})
        except (KeyError, TypeError, ValueError) as exc:
            raise InputError(f"session file {directory / SESSION_FILE} is corrupt: {exc!r}") from None
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
        names: list[str] = []
        for spec in phases:
            spec.name = _unique_name(spec.name, names)
            names.append(spec.name)
        data = {
            "id": sid,
            "created": _now(),
            "argv": list(argv) if argv is not None else [],
            "cwd": os.getcwd(),
            "workflow": workflow,
            "settings": settings.to_dict(),
            "phases": [PhaseState(spec).to_dict() for spec in phases],
            "current_phase": 0,
        }
        session = cls(directory, data)
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
            directory = found[-1]
        data = read_json_file(directory / SESSION_FILE)
        return cls(directory, data)

    # state ---------------------------------------------------------------------------------

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "created": self.created,
            "argv": self.argv,
            "cwd": self.cwd,
            "workflow": self.workflow,
            "settings": self.settings.to_dict(),
            "phases": [p.to_dict() for p in self._phases],
            "current_phase": self.current_phase,
            "extra": self.extra,
        }

    def save(self) -> None:
        atomic_write_json(self.dir / SESSION_FILE, self.to_dict())

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

        from tritonbisect.commands.options import default_workdir

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

    def run(self, ui: Any = None) -> SessionResult:
        """Run the current phase to its end (holding the session lock)."""
        from tritonbisect.bisect.display import NullUI

        ui = ui or NullUI()
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
                _PhaseRun(self, phase, ui).run()
            except KeyboardInterrupt:
                from tritonbisect.bisect.runner import cancel_all

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
            return SessionResult.of_phase(self.id, phase)


def drive(session: Session, ui: Any = None) -> SessionResult:
    """Run the session's phases; when one ends and a workflow is set, let it add the next."""
    with session.locked():
        while True:
            result = session.run(ui)
            if not session.workflow:
                return result
            _load_workflows()
            continue_fn = WORKFLOWS.get(session.workflow)
            if continue_fn is None:
                raise InputError(f"session uses unknown workflow {session.workflow!r}")
            if not continue_fn(session, result):
                return result


def _sigterm_as_interrupt() -> Callable[[], None]:
    if threading.current_thread() is not threading.main_thread():
        return lambda: None

    def handler(signum: int, frame: Any) -> None:
        raise KeyboardInterrupt

    try:
        previous = signal.signal(signal.SIGTERM, handler)
    except ValueError:  # pragma: no cover
        return lambda: None
    return lambda: signal.signal(signal.SIGTERM, previous)


def counters_of(records: list[Mapping[str, Any]]) -> dict[str, int]:
    tests = builds = cached = 0
    rounds: dict[str, int] = {}
    for rec in records:
        for attempt in [rec, *(rec.get("attempts") or [])]:
            tests += len(attempt.get("tests") or [])
            build = attempt.get("build") or {}
            if build.get("cached"):
                cached += 1  # an artifact (or a recorded failure) was reused: nothing compiled
            elif build.get("performed", bool(build.get("log"))):
                builds += 1
        if rec.get("role") == ROLE_SEARCH and rec.get("round"):
            phase = str(rec.get("phase"))
            rounds[phase] = max(rounds.get(phase, 0), int(rec["round"]))
    return {
        "tests": tests,
        "builds": builds,
        "cached_builds": cached,
        "steps": len(records),
        "rounds": sum(rounds.values()),
    }


_CANDIDATES: dict[tuple[str, str, str, bool], Any] = {}


def candidates_of(history: Any, good: str, bad: str, *, first_parent: bool = False) -> Any:
    """`history.candidates(...)`, remembered for this process (a command validates the range
    before it creates the session; the phase then reuses the result)."""
    key = (str(history.root), good, bad, bool(first_parent))
    if key not in _CANDIDATES:
        _CANDIDATES[key] = history.candidates(good, bad, first_parent=first_parent)
    return _CANDIDATES[key]


# --- one phase ---------------------------------------------------------------------------


@dataclass
class Progress:
    remaining: int  # culprits still possible
    steps_left: int  # estimated rounds of tests left
    done: int  # steps finished in this phase
    in_flight: int


class _PhaseRun:
    def __init__(self, session: Session, phase: PhaseState, ui: Any) -> None:
        self.session = session
        self.phase = phase
        self.spec = phase.spec
        self.ui = ui
        self.settings = session.settings

    # helpers ---------------------------------------------------------------------------

    def _journal(self, result: Any, role: str, round_: int | None) -> dict[str, Any]:
        rec = {"seq": self._next_seq(), "phase": self.spec.name, "role": role, "round": round_}
        rec.update(result.to_record())
        self.session.journal.append(rec)
        self.records.append(rec)
        return rec

    def _next_seq(self) -> int:
        self._seq += 1
        return self._seq

    def _step_dir(self, commit: str, role: str) -> Path:
        self._dir_counter += 1
        base = self.session.dir / "steps"
        while True:
            path = base / f"{self._dir_counter:04d}-{self.spec.name}-{role}-{commit[:12]}"
            if not path.exists():
                return path
            self._dir_counter += 1

    def subject(self, commit: str) -> str:
        if not self._subjects_loaded:
            # one git call for every commit of the range, instead of one per step
            self._subjects_loaded = True
            try:
                from tritonbisect.bisect.runner import git

                out = git(
                    ["log", "--format=%H%x00%s", "--no-walk=unsorted", "--stdin"],
                    cwd=Path(self.history.root),
                    input="\n".join([self.spec.good, *self.cands.order]) + "\n",
                )
                for line in out.splitlines():
                    sha, _, subj = line.partition("\0")
                    self._subjects[sha] = subj
            except Exception:  # noqa: BLE001 - a subject is decoration only
                pass
        if commit not in self._subjects:
            try:
                self._subjects[commit] = self.history.commit_info(commit).subject
            except Exception:  # noqa: BLE001 - a subject is decoration only
                self._subjects[commit] = ""
        return self._subjects[commit]

    def _submit(self, commit: str, role: str, *, record: bool = False):
        from tritonbisect.bisect.runner import StepRequest

        request = StepRequest(commit=commit, log_dir=self._step_dir(commit, role), record=record)
        future = self.pool.submit(request)
        self.ui.step_started(self.spec.name, commit, role, self.subject(commit))
        return request, future

    def _progress(self) -> Progress:
        from tritonbisect.bisect import search

        try:
            rem = search.remaining(self.cands, self._effective())
        except Exception:  # noqa: BLE001
            rem = ()
        n = len(rem)
        return Progress(
            remaining=n,
            steps_left=search.steps_left(n, self.settings.jobs) if n else 0,
            done=len(self.records),
            in_flight=len(self.in_flight),
        )

    def _effective(self) -> dict[str, str]:
        eff = dict(self.verdicts)
        eff.update(self.overrides)
        return eff

    # the phase -------------------------------------------------------------------------

    def run(self) -> None:
        from tritonbisect.bisect.history import History
        from tritonbisect.bisect.outcome import Kind
        from tritonbisect.bisect.runner import WorkerPool
        from tritonbisect.bisect.search import Candidates
        from tritonbisect.build.recipes import recipe_from_config

        spec = self.spec
        self.history = History(spec.repo)
        self._subjects: dict[str, str] = {}
        self._subjects_loaded = False
        if spec.candidates:
            self.cands = Candidates.linear(spec.candidates)
        else:
            self.cands = candidates_of(self.history, spec.good, spec.bad, first_parent=spec.first_parent)
        self.phase.range_size = len(self.cands.order)
        self.recipe = recipe_from_config(spec.recipe_name, spec.recipe_config)
        self.policy = self.settings.policy()
        self.records = self.session.records(spec.name)
        all_records = self.session.journal.records()
        self._seq = max((int(r.get("seq", 0)) for r in all_records), default=0)
        steps = self.session.dir / "steps"
        self._dir_counter = len(list(steps.iterdir())) if steps.is_dir() else 0
        self.in_flight: dict[Future, tuple[Any, str, str, int | None]] = {}
        self.verdicts: dict[str, str] = {}
        self.overrides: dict[str, str] = {}
        self.cancelled: set[Future] = set()
        self._children: dict[str, list[str]] | None = None
        self._in_set = frozenset(self.cands.order)
        self.ui.phase_started(self.session, self.phase, len(self.cands.order), self.subject)
        if self.records:
            self.ui.note(f"resuming: {len(self.records)} finished steps replayed from the journal")
        self.pool = WorkerPool(
            spec.repo,
            self.settings.workdir,
            self.history.repo_id(),
            self.settings.jobs,
            self.recipe,
            self.policy,
            repeat=self.settings.repeat,
            env=self.settings.env,
            timeout=self.settings.timeout,
        )
        self._kind_infra = Kind.INFRA.value
        try:
            if not self._endpoints():
                return
            action = self._search()
            if action is None:
                return
            self._finish(action)
        except BaseException:
            self._cancel_in_flight()
            raise
        finally:
            self.pool.close()

    def _cancel_in_flight(self) -> None:
        for request, *_ in self.in_flight.values():
            request.token.cancel()

    def _wait_one(self) -> list[tuple[Future, tuple[Any, str, str, int | None]]]:
        """Wait until at least one in-flight step finishes; return the finished ones."""
        while True:
            done, _ = wait(list(self.in_flight), timeout=0.5, return_when=FIRST_COMPLETED)
            if done:
                out = []
                for fut in done:
                    out.append((fut, self.in_flight.pop(fut)))
                return out

    def _abort(self, reason: str) -> None:
        self._cancel_in_flight()
        while self.in_flight:
            self._wait_one()
        self.phase.status = STATUS_ABORTED
        self.phase.reason = reason
        self.session.save()
        self.ui.phase_finished(self.session, self.phase)

    # endpoints ---------------------------------------------------------------------------

    def _endpoint_records(self) -> dict[str, dict[str, Any]]:
        out: dict[str, dict[str, Any]] = {}
        for rec in self.records:
            if rec.get("role") == ROLE_ENDPOINT and rec.get("verdict") in ("good", "bad", "skip"):
                out[rec["commit"]] = rec
        return out

    def _endpoints(self) -> bool:
        from tritonbisect.build.command_recipe import test_spec_of

        spec = self.spec
        done = self._endpoint_records()
        test_spec = test_spec_of(self.recipe)
        needs_record = bool(test_spec and test_spec.record_command)
        order = [c for c in (spec.good, spec.bad) if c not in done]
        if order:
            self.ui.note("checking the endpoints: the good commit must pass, the bad one must fail")
        if needs_record and spec.good in order:
            # the good endpoint records the reference the bad endpoint is compared against
            request, future = self._submit(spec.good, ROLE_ENDPOINT, record=True)
            self.in_flight[future] = (request, spec.good, ROLE_ENDPOINT, 0)
            if not self._collect_endpoints():
                return False
            order = [c for c in order if c != spec.good]
        for commit in order:
            request, future = self._submit(commit, ROLE_ENDPOINT, record=needs_record and commit == spec.good)
            self.in_flight[future] = (request, commit, ROLE_ENDPOINT, 0)
        if not self._collect_endpoints():
            return False
        done = self._endpoint_records()
        good, bad = done.get(spec.good), done.get(spec.bad)
        problems = []
        if good is None or good["verdict"] != "good":
            problems.append(f"the good commit {spec.good[:12]} is not good ({_describe(good)})")
        if bad is None or bad["verdict"] != "bad":
            problems.append(f"the bad commit {spec.bad[:12]} is not bad ({_describe(bad)})")
        if problems:
            self.phase.status = STATUS_INVALID
            self.phase.reason = "; ".join(problems)
            self.session.save()
            self.ui.endpoints_invalid(self.session, self.phase, good, bad)
            self.ui.phase_finished(self.session, self.phase)
            return False
        return True

    def _collect_endpoints(self) -> bool:
        while self.in_flight:
            for fut, (_req, _commit, role, round_) in self._wait_one():
                result = fut.result()
                rec = self._journal(result, role, round_)
                self.ui.step_finished(self.spec.name, rec, self.subject(rec["commit"]), None)
                if result.verdict == "abort":
                    self._abort(f"endpoint {result.commit[:12]}: {result.reason}")
                    return False
        return True

    # the search --------------------------------------------------------------------------

    def _search(self):
        from tritonbisect.bisect import search

        spec = self.spec
        in_set = set(self.cands.order)
        search_counts: Counter[str] = Counter()
        finished_round = 0
        for rec in self.records:
            if rec.get("role") == ROLE_SEARCH:
                search_counts[rec["commit"]] += 1
                finished_round = max(finished_round, int(rec.get("round") or 0))
                if rec.get("verdict") in ("good", "bad", "skip") and rec["commit"] in in_set:
                    self.verdicts[rec["commit"]] = rec["verdict"]
        self.verdicts.setdefault(spec.bad, "bad")
        cached = self._known_cached()
        guard = 0
        while True:
            live = {f: v for f, v in self.in_flight.items() if f not in self.cancelled}
            flying = frozenset(c for (_r, c, _role, _n) in live.values())
            free = self.settings.jobs - len(live)
            if free > 0:
                action = search.next_step(
                    self.cands, self._effective(), workers=free, in_flight=flying, cached=cached
                )
            else:
                action = search.Wait()
            submitted = 0
            if isinstance(action, search.TestNext):
                for commit in action.commits:
                    if submitted >= free:
                        break
                    if commit in flying:
                        continue
                    request, future = self._submit(commit, ROLE_SEARCH)
                    self.in_flight[future] = (request, commit, ROLE_SEARCH, finished_round + 1)
                    submitted += 1
            elif isinstance(action, search.Conflict):
                retest = []
                for commit in action.commits:
                    if commit in flying:
                        continue
                    if search_counts[commit] >= 2 or commit not in in_set:
                        # tested twice and still contradicting: do not trust it
                        if self.overrides.get(commit) != "skip":
                            self.overrides[commit] = "skip"
                            self.ui.note(f"{commit[:12]} keeps contradicting the history: skipped")
                            submitted += 1
                    elif len(retest) < max(free, 0):
                        retest.append(commit)
                if retest:
                    self.ui.note(
                        "verdicts contradict the history (a flaky test?); re-testing "
                        + ", ".join(c[:12] for c in retest)
                    )
                for commit in retest:
                    request, future = self._submit(commit, ROLE_SEARCH)
                    self.in_flight[future] = (request, commit, ROLE_SEARCH, finished_round + 1)
                    search_counts[commit] += 1
                    submitted += 1
            elif isinstance(action, (search.Found, search.Inconclusive)):
                self._cancel_in_flight()
                while self.in_flight:
                    for fut, (_req, _c, role, round_) in self._wait_one():
                        result = fut.result()
                        if not result.cancelled and result.verdict != "abort":
                            rec = self._journal(result, role, round_)
                            self.ui.step_finished(spec.name, rec, self.subject(rec["commit"]), None)
                return action
            if submitted:
                guard = 0
                continue
            if not self.in_flight:
                guard += 1
                if guard > 2:
                    raise RuntimeError(f"search made no progress ({action!r})")
                continue
            learned = False
            for fut, (_req, commit, role, round_) in self._wait_one():
                was_cancelled = fut in self.cancelled
                self.cancelled.discard(fut)
                result = fut.result()
                if result.cancelled or was_cancelled:
                    continue
                rec = self._journal(result, role, round_)
                if result.verdict == "abort":
                    self.ui.step_finished(spec.name, rec, self.subject(commit), None)
                    self._abort(f"{commit[:12]}: {result.reason}")
                    return None
                if self._caches and (rec.get("build") or {}).get("kind") == "pass":
                    cached = cached | {commit}
                if role == ROLE_SEARCH and commit in in_set:
                    self.verdicts[commit] = result.verdict
                    finished_round = max(finished_round, round_ or 0)
                    learned = True
                self.ui.step_finished(spec.name, rec, self.subject(commit), self._progress())
            if learned:
                self._cancel_useless()

    def _implied(self) -> set[str] | None:
        """Commits whose verdict follows from the verdicts so far: ancestors of a good commit
        are good, descendants of a bad one bad. None while the verdicts contradict."""
        if self._children is None:
            children: dict[str, list[str]] = {}
            for c in self.cands.order:
                for p in self.cands.parents.get(c, ()):
                    children.setdefault(p, []).append(c)
            self._children = children
        eff = self._effective()

        def closure(start: list[str], step: Callable[[str], Any]) -> set[str]:
            seen = set(start)
            stack = list(start)
            while stack:
                for nxt in step(stack.pop()):
                    if nxt not in seen:
                        seen.add(nxt)
                        stack.append(nxt)
            return seen

        goods = [c for c, v in eff.items() if v == "good" and c in self._in_set]
        bads = [c for c, v in eff.items() if v == "bad" and c in self._in_set]
        anc = closure(goods, lambda c: self.cands.parents.get(c, ()))
        desc = closure(bads, lambda c: self._children.get(c, ()))
        if anc & desc:
            return None
        return anc | desc

    def _cancel_useless(self) -> None:
        """Stop in-flight steps whose verdict can no longer change anything (e.g. a commit
        above a newly found bad one): their workers take a useful commit instead."""
        targets = [
            (fut, req, commit)
            for fut, (req, commit, role, _n) in self.in_flight.items()
            if role == ROLE_SEARCH and fut not in self.cancelled and commit not in self.verdicts
        ]
        if not targets:
            return
        implied = self._implied()
        if not implied:
            return
        for fut, req, commit in targets:
            if commit in implied:
                req.token.cancel()
                self.cancelled.add(fut)
                self.ui.note(f"stopped testing {commit[:12]}: its verdict no longer matters")

    def _known_cached(self) -> frozenset[str]:
        """Commits whose build is known to be cached, so testing them again costs no build.

        A recipe that caches builds (`recipe.caches_builds`, true for every recipe but the
        plain "command" one) has an artifact for every commit this phase built successfully;
        a recipe may also answer for other commits with `recipe.cached_commits(commits)`.
        """
        self._caches = bool(getattr(self.recipe, "caches_builds", self.recipe.name != "command"))
        if not self._caches:
            return frozenset()
        out = {
            r["commit"] for r in self.records if (r.get("build") or {}).get("kind") == "pass"
        }
        hook = getattr(self.recipe, "cached_commits", None)
        if callable(hook):
            try:
                out |= set(hook(list(self.cands.order)))
            except Exception as exc:  # noqa: BLE001 - an optimisation only
                self.ui.note(f"could not list cached builds: {exc}")
        return frozenset(out)

    # confirmation ------------------------------------------------------------------------

    def _parent_of(self, culprit: str) -> str:
        parents = tuple(self.cands.parents.get(culprit, ()))
        if parents:
            goods = [p for p in parents if self._effective().get(p) == "good"]
            return (goods or list(parents))[0]
        if self.spec.candidates:
            return self.spec.good
        try:
            return self.history.resolve(f"{culprit}^1")
        except Exception:  # noqa: BLE001
            return self.spec.good

    def _finish(self, action: Any) -> None:
        from tritonbisect.bisect import search

        phase = self.phase
        if isinstance(action, search.Inconclusive):
            phase.status = STATUS_INCONCLUSIVE
            phase.candidates = list(action.candidates)
            phase.culprit = None
            phase.reason = (
                f"{len(action.candidates)} candidates remain; they could not be tested "
                "(e.g. they do not build)"
            )
            self.session.save()
            self.ui.phase_finished(self.session, phase)
            return
        culprit = action.culprit
        parent = self._parent_of(culprit)
        phase.culprit = culprit
        phase.candidates = [culprit]
        self.session.save()
        confirm: dict[str, dict[str, Any]] = {}
        for rec in self.records:
            if rec.get("role") == ROLE_CONFIRM and rec.get("verdict") in ("good", "bad", "skip"):
                confirm[rec["commit"]] = rec
        todo = [c for c in dict.fromkeys((culprit, parent)) if c not in confirm]
        if todo:
            self.ui.note(f"confirming: re-testing {culprit[:12]} and its parent {parent[:12]}")
        for commit in todo:
            request, future = self._submit(commit, ROLE_CONFIRM)
            self.in_flight[future] = (request, commit, ROLE_CONFIRM, None)
        while self.in_flight:
            for fut, (_req, commit, role, round_) in self._wait_one():
                result = fut.result()
                rec = self._journal(result, role, round_)
                self.ui.step_finished(self.spec.name, rec, self.subject(commit), None)
                if result.verdict == "abort":
                    self._abort(f"confirmation of {commit[:12]}: {result.reason}")
                    return
                confirm[commit] = rec
        c_ok = confirm[culprit]["verdict"] == "bad"
        p_ok = confirm[parent]["verdict"] == "good"
        phase.status = STATUS_FOUND
        if c_ok and p_ok:
            phase.confidence = "high"
            phase.reason = (
                f"confirmed: {culprit[:12]} is bad again and its parent {parent[:12]} good again"
            )
        else:
            phase.confidence = "low"
            parts = []
            if not c_ok:
                parts.append(f"{culprit[:12]} re-tested {confirm[culprit]['verdict']} ({confirm[culprit]['kind']})")
            if not p_ok:
                parts.append(f"parent {parent[:12]} re-tested {confirm[parent]['verdict']} ({confirm[parent]['kind']})")
            phase.reason = (
                "low confidence: the confirmation disagrees with the search: "
                + "; ".join(parts)
                + " (flaky test? try --repeat 3)"
            )
        self.session.save()
        self.ui.phase_finished(self.session, phase)


def _describe(rec: Mapping[str, Any] | None) -> str:
    if rec is None:
        return "not tested"
    return f"{rec.get('kind')}: {rec.get('reason')}"
