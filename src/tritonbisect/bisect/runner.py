"""Runs steps: one commit's build, install and test, in a worker's own git worktree.

Each worker owns a worktree `<workdir>/worktrees/<repo_id>/w<i>` (made with
`git worktree add --detach`) and keeps it, with its ignored build folders, across steps and
sessions: a step checks the commit out with `git checkout --detach --force` and cleans
untracked files with `git clean -ffd` (not `-x`, so ignored build dirs survive). The user's
own checkout is never touched: no checkout, no ref, no `refs/bisect/*`.

Every process runs in its own session (process group). A per-test timeout, a cancelled step
and Ctrl-C kill the whole group, so compilers and test children do not linger.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import queue
import signal
import subprocess
import threading
import time
import traceback
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from tritonbisect.bisect.outcome import Kind, Policy, Verdict, classify_test
from tritonbisect.build.recipes import PrepareResult, Recipe, StepContext, TestRun

TAIL_BYTES = 64 * 1024
KILL_GRACE_S = 3.0

# Variables that would point git at the user's repository instead of the worktree
# (set e.g. while `git bisect run` or a git hook runs us).
_GIT_LOCATION_VARS = (
    "GIT_DIR",
    "GIT_WORK_TREE",
    "GIT_INDEX_FILE",
    "GIT_OBJECT_DIRECTORY",
    "GIT_ALTERNATE_OBJECT_DIRECTORIES",
    "GIT_COMMON_DIR",
    "GIT_PREFIX",
)


def now_iso() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds")


def clean_env(base: Mapping[str, str] | None = None) -> dict[str, str]:
    """A copy of the environment without variables that redirect git to another repository."""
    env = dict(os.environ if base is None else base)
    for name in _GIT_LOCATION_VARS:
        env.pop(name, None)
    return env


# --- processes ---------------------------------------------------------------------------


class CancelToken:
    """Cancels one step: kills every process group the step has started, now and later."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._groups: set[int] = set()
        self.cancelled = False

    def _register(self, pgid: int) -> bool:
        with self._lock:
            if self.cancelled:
                return False
            self._groups.add(pgid)
            return True

    def _unregister(self, pgid: int) -> None:
        with self._lock:
            self._groups.discard(pgid)

    def cancel(self) -> None:
        with self._lock:
            self.cancelled = True
            groups = list(self._groups)
        for pgid in groups:
            _killpg(pgid, signal.SIGKILL)


_ALL_TOKENS: set[CancelToken] = set()
_ALL_TOKENS_LOCK = threading.Lock()
_GLOBAL_TOKEN = CancelToken()


def cancel_all() -> None:
    """Kill every process group started by any step of this process (Ctrl-C)."""
    with _ALL_TOKENS_LOCK:
        tokens = list(_ALL_TOKENS)
    for token in [*tokens, _GLOBAL_TOKEN]:
        token.cancel()


def _killpg(pgid: int, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)


@dataclass
class ProcessResult:
    returncode: int | None  # negative: killed by that signal
    seconds: float
    timed_out: bool
    log: Path
    cancelled: bool = False


def run_logged(
    cmd: str | Sequence[str],
    *,
    cwd: Path,
    env: Mapping[str, str],
    log: Path,
    timeout: float | None = None,
    token: CancelToken | None = None,
    header: bool = True,
) -> ProcessResult:
    """Run `cmd` (a bash command line when a str) with stdout+stderr into `log`.

    The process leads its own process group. On timeout the group gets SIGTERM, then SIGKILL
    after a short grace; when the leader exits, stragglers left in its group are killed too.
    """
    token = token or _GLOBAL_TOKEN
    log.parent.mkdir(parents=True, exist_ok=True)
    shell = isinstance(cmd, str)
    start = time.monotonic()
    with open(log, "wb") as out:
        if header:
            shown = cmd if shell else " ".join(str(c) for c in cmd)
            out.write(f"$ {shown}\n# cwd: {cwd}\n".encode())
            out.flush()
        if token.cancelled:
            return ProcessResult(None, 0.0, False, log, cancelled=True)
        try:
            proc = subprocess.Popen(
                ["/bin/bash", "-c", cmd] if shell else [str(c) for c in cmd],
                cwd=str(cwd),
                env=dict(env),
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        except FileNotFoundError as exc:
            out.write(f"{exc.filename}: command not found\n".encode())
            return ProcessResult(127, time.monotonic() - start, False, log)
        except PermissionError as exc:
            out.write(f"{exc.filename}: permission denied\n".encode())
            return ProcessResult(126, time.monotonic() - start, False, log)
        pgid = proc.pid
        if not token._register(pgid):
            _killpg(pgid, signal.SIGKILL)
        timed_out = False
        try:
            try:
                rc = proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                timed_out = True
                _killpg(pgid, signal.SIGTERM)
                try:
                    rc = proc.wait(timeout=KILL_GRACE_S)
                except subprocess.TimeoutExpired:
                    _killpg(pgid, signal.SIGKILL)
                    rc = proc.wait()
                out.write(f"\n# tritonbisect: killed after the {timeout:g} s timeout\n".encode())
            except BaseException:
                _killpg(pgid, signal.SIGKILL)
                proc.wait()
                raise
        finally:
            # nothing started by this command may outlive it
            _killpg(pgid, signal.SIGKILL)
            token._unregister(pgid)
    return ProcessResult(rc, time.monotonic() - start, timed_out, log, cancelled=token.cancelled)


def read_tail(path: Path | None, limit: int = TAIL_BYTES) -> str:
    """The last `limit` bytes of a log, decoded leniently ("" when absent)."""
    if path is None:
        return ""
    try:
        with open(path, "rb") as f:
            f.seek(0, os.SEEK_END)
            size = f.tell()
            f.seek(max(0, size - limit))
            return f.read().decode("utf-8", "replace")
    except OSError:
        return ""


def tail_lines(path: Path | None, lines: int = 20) -> str:
    text = read_tail(path, 16 * 1024)
    return "\n".join(text.rstrip("\n").splitlines()[-lines:])


# --- git worktrees -----------------------------------------------------------------------


class GitError(RuntimeError):
    pass


def git(args: Sequence[str], *, cwd: Path, check: bool = True, input: str | None = None) -> str:
    proc = subprocess.run(
        ["git", *args],
        cwd=str(cwd),
        env=clean_env(),
        input=input,
        capture_output=True,
        text=True,
        check=False,
    )
    if check and proc.returncode != 0:
        msg = (proc.stderr or proc.stdout).strip().splitlines()
        raise GitError(f"git {' '.join(args[:3])} failed: {msg[-1] if msg else proc.returncode}")
    return proc.stdout


def _common_dir(path: Path) -> Path | None:
    try:
        out = git(["rev-parse", "--path-format=absolute", "--git-common-dir"], cwd=path).strip()
    except (GitError, OSError):
        return None
    return Path(out).resolve() if out else None


class Worktree:
    """A worker's own checkout, locked for the lifetime of the worker."""

    def __init__(self, repo: Path, root: Path, index: int, lock_fd: int) -> None:
        self.repo = repo
        self.path = root / f"w{index}"
        self.index = index
        self._lock_fd = lock_fd

    def checkout(self, commit: str) -> None:
        git(["checkout", "--detach", "--force", "-q", commit], cwd=self.path)
        git(["clean", "-ffdq"], cwd=self.path)

    def release(self) -> None:
        if self._lock_fd >= 0:
            with contextlib.suppress(OSError):
                fcntl.flock(self._lock_fd, fcntl.LOCK_UN)
                os.close(self._lock_fd)
            self._lock_fd = -1


def acquire_worktree(repo: Path, workdir: Path, repo_id: str, *, start: int = 0) -> Worktree:
    """Lock the first free worktree slot of this repository (creating the worktree if needed).

    A slot whose folder is a worktree of another clone with the same identity is left alone.
    """
    root = workdir / "worktrees" / repo_id
    root.mkdir(parents=True, exist_ok=True)
    repo_common = _common_dir(repo)
    index = start
    while True:
        lock_path = root / f"w{index}.lock"
        fd = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            index += 1
            continue
        path = root / f"w{index}"
        if path.exists():
            common = _common_dir(path) if (path / ".git").exists() else None
            if common is not None and repo_common is not None and common != repo_common:
                # a worktree of another clone: not ours to reuse
                fcntl.flock(fd, fcntl.LOCK_UN)
                os.close(fd)
                index += 1
                continue
            if common is None:
                import shutil

                shutil.rmtree(path, ignore_errors=True)
        if not path.exists():
            git(["worktree", "prune"], cwd=repo, check=False)
            git(["worktree", "add", "--detach", "-f", str(path), "HEAD"], cwd=repo)
        else:
            kill_strays(path)
        return Worktree(repo, root, index, fd)


def kill_strays(path: Path) -> list[int]:
    """Kill processes still running in a worktree we now hold the lock of.

    They are left over from a tritonbisect that was killed (`kill -9`) mid-step: its test
    or build went on as an orphan. Linux only (reads /proc); elsewhere nothing is done.
    """
    killed: list[int] = []
    root = str(path.resolve())
    proc = Path("/proc")
    if not proc.is_dir():
        return killed
    me = os.getpid()
    for entry in proc.iterdir():
        if not entry.name.isdigit() or int(entry.name) == me:
            continue
        try:
            cwd = os.readlink(entry / "cwd")
        except OSError:
            continue
        if cwd == root or cwd.startswith(root + os.sep):
            pid = int(entry.name)
            try:
                pgid = os.getpgid(pid)
                if pgid != os.getpgid(0):
                    _killpg(pgid, signal.SIGKILL)
                else:
                    os.kill(pid, signal.SIGKILL)
                killed.append(pid)
            except (ProcessLookupError, PermissionError):
                continue
    return killed


# --- one step ----------------------------------------------------------------------------


@dataclass
class StepResult:
    """A finished step, as written to the journal (see `to_record`)."""

    commit: str
    kind: str
    verdict: str
    reason: str
    worker: int
    started: str
    finished: str
    seconds: float
    build: dict[str, Any] | None = None
    tests: list[dict[str, Any]] = field(default_factory=list)
    record: dict[str, Any] | None = None
    attempts: list[dict[str, Any]] = field(default_factory=list)  # earlier infra attempts
    log_dir: str = ""
    cancelled: bool = False

    def to_record(self) -> dict[str, Any]:
        rec: dict[str, Any] = {
            "commit": self.commit,
            "kind": self.kind,
            "verdict": self.verdict,
            "reason": self.reason,
            "worker": self.worker,
            "started": self.started,
            "finished": self.finished,
            "seconds": round(self.seconds, 3),
            "build": self.build,
            "tests": self.tests,
            "dir": self.log_dir,
        }
        if self.record is not None:
            rec["record"] = self.record
        if self.attempts:
            rec["attempts"] = self.attempts
        return rec


def _build_entry(prep: PrepareResult, *, performed: bool) -> dict[str, Any]:
    return {
        "cached": bool(prep.cached),
        "performed": performed,
        "seconds": round(prep.seconds, 3),
        "log": str(prep.log) if prep.log else None,
        "kind": prep.kind.value if isinstance(prep.kind, Kind) else str(prep.kind),
        "reason": prep.reason,
    }


def _test_entry(run: TestRun, kind: Kind, reason: str) -> dict[str, Any]:
    return {
        "exit": run.returncode if run.returncode is None or run.returncode >= 0 else None,
        "signal": run.signal,
        "seconds": round(run.seconds, 3),
        "log": str(run.log),
        "kind": kind.value,
        "reason": reason,
        "timed_out": bool(run.timed_out),
    }


def _classify_run(run: TestRun) -> tuple[Kind, str]:
    cls = classify_test(
        run.returncode, read_tail(run.log), timed_out=run.timed_out, result=run.result
    )
    return cls.kind, cls.reason


def execute_step(
    recipe: Recipe,
    commit: str,
    ctx: StepContext,
    policy: Policy,
    *,
    repeat: int = 1,
    record: bool = False,
    token: CancelToken | None = None,
) -> StepResult:
    """Build/install `commit` (already checked out in ctx.worktree) and test it `repeat` times.

    The outcome kind is classified from the processes; the verdict comes from `policy`.
    With `repeat` > 1 the verdict is the majority; runs that disagree make the kind "flaky".
    """
    started_iso = now_iso()
    t0 = time.monotonic()
    ctx.log_dir.mkdir(parents=True, exist_ok=True)

    def done(kind: Kind, verdict: Verdict, reason: str, **kw: Any) -> StepResult:
        return StepResult(
            commit=commit,
            kind=kind.value,
            verdict=verdict.value,
            reason=reason,
            worker=ctx.worker,
            started=started_iso,
            finished=now_iso(),
            seconds=time.monotonic() - t0,
            log_dir=str(ctx.log_dir),
            cancelled=bool(token and token.cancelled),
            **kw,
        )

    try:
        prep = recipe.prepare(commit, ctx)
    except Exception as exc:  # a recipe bug or an OSError: the infrastructure failed
        return done(Kind.INFRA, Verdict.ABORT, _crash_reason("build", exc, ctx.log_dir))
    prep_kind = prep.kind if isinstance(prep.kind, Kind) else Kind(prep.kind)
    performed = not prep.cached and prep.log is not None
    build = _build_entry(prep, performed=performed)
    if prep_kind is not Kind.PASS:
        reason = prep.reason or f"build {prep_kind.value}"
        return done(prep_kind, policy.verdict(prep_kind), reason, build=build)

    record_entry = None
    if record:
        try:
            run = recipe.test(commit, ctx, record=True)
        except Exception as exc:
            return done(Kind.INFRA, Verdict.ABORT, _crash_reason("record", exc, ctx.log_dir), build=build)
        kind, reason = _classify_run(run)
        record_entry = _test_entry(run, kind, reason)
        if kind is not Kind.PASS:
            why = f"recording the reference at this commit failed: {reason}"
            return done(kind, policy.verdict(kind), why, build=build, record=record_entry)

    tests: list[dict[str, Any]] = []
    kinds: list[Kind] = []
    for _ in range(max(1, repeat)):
        if token is not None and token.cancelled:
            break
        try:
            run = recipe.test(commit, ctx)
        except Exception as exc:
            return done(
                Kind.INFRA, Verdict.ABORT, _crash_reason("test", exc, ctx.log_dir),
                build=build, tests=tests, record=record_entry,
            )
        kind, reason = _classify_run(run)
        tests.append(_test_entry(run, kind, reason))
        kinds.append(kind)
        if kind is Kind.INFRA:
            return done(kind, policy.verdict(kind), reason, build=build, tests=tests, record=record_entry)
    if not kinds:
        return done(Kind.INFRA, Verdict.ABORT, "step cancelled", build=build, tests=tests)
    kind, verdict, reason = combine_runs(kinds, [t["reason"] for t in tests], policy)
    return done(kind, verdict, reason, build=build, tests=tests, record=record_entry)


def combine_runs(kinds: Sequence[Kind], reasons: Sequence[str], policy: Policy) -> tuple[Kind, Verdict, str]:
    """Majority verdict of repeated runs; disagreeing verdicts make the kind FLAKY."""
    verdicts = [policy.verdict(k) for k in kinds]
    counts = Counter(verdicts)
    if len(counts) == 1:
        # all runs agree: report the most common kind (first among equals)
        kind = Counter(kinds).most_common(1)[0][0]
        reason = reasons[kinds.index(kind)]
        if len(kinds) > 1:
            reason = f"{reason} ({len(kinds)} of {len(kinds)} runs agree)"
        return kind, verdicts[0], reason
    (top, top_n), *rest = counts.most_common()
    majority = top if top_n * 2 > len(verdicts) else Verdict.SKIP
    detail = ", ".join(k.value for k in kinds)
    tally = f"{top_n} of {len(verdicts)} runs {top.value}"
    if majority is Verdict.SKIP:
        reason = f"flaky: runs disagree with no majority ({detail})"
    else:
        reason = f"flaky: {tally} ({detail})"
    return Kind.FLAKY, majority, reason


def _crash_reason(what: str, exc: BaseException, log_dir: Path) -> str:
    path = log_dir / "error.log"
    with contextlib.suppress(OSError):
        path.write_text("".join(traceback.format_exception(exc)), encoding="utf-8")
    return f"{what} could not run: {type(exc).__name__}: {exc}"[:300]


def execute_with_retry(
    run_once: Callable[[Path], StepResult], log_dir: Path
) -> StepResult:
    """Run a step; an infrastructure failure is retried once, then the verdict is abort."""
    first = run_once(log_dir)
    if first.kind != Kind.INFRA.value or first.cancelled:
        return first
    second = run_once(log_dir / "retry")
    second.attempts = [
        {"kind": first.kind, "reason": first.reason, "build": first.build, "tests": first.tests}
    ]
    if second.kind == Kind.INFRA.value:
        second.verdict = Verdict.ABORT.value
        second.reason = f"infrastructure failure, twice: {second.reason}"
    return second


# --- the worker pool ---------------------------------------------------------------------


@dataclass
class StepRequest:
    commit: str
    log_dir: Path
    record: bool = False
    token: CancelToken = field(default_factory=CancelToken)


class WorkerPool:
    """N threads, each with its own worktree, running StepRequests."""

    def __init__(
        self,
        repo: Path,
        workdir: Path,
        repo_id: str,
        jobs: int,
        recipe: Recipe,
        policy: Policy,
        *,
        repeat: int = 1,
        env: Mapping[str, str] | None = None,
        timeout: float | None = None,
    ) -> None:
        self.repo = repo
        self.workdir = workdir
        self.repo_id = repo_id
        self.jobs = max(1, jobs)
        self.recipe = recipe
        self.policy = policy
        self.repeat = repeat
        self.env = dict(env or {})
        self.timeout = timeout
        self._executor = ThreadPoolExecutor(max_workers=self.jobs, thread_name_prefix="tb-worker")
        self._free: queue.Queue[int] = queue.Queue()
        for slot in range(self.jobs):
            self._free.put(slot)
        self._worktrees: dict[int, Worktree] = {}
        self._alloc_lock = threading.Lock()

    def _worktree(self, slot: int) -> Worktree:
        with self._alloc_lock:
            wt = self._worktrees.get(slot)
            if wt is None:
                taken = {w.index for w in self._worktrees.values()}
                start = 0
                while True:
                    wt = acquire_worktree(self.repo, self.workdir, self.repo_id, start=start)
                    if wt.index not in taken:
                        break
                    start = wt.index + 1  # pragma: no cover (flock is per open file)
                self._worktrees[slot] = wt
            return wt

    def submit(self, request: StepRequest) -> Future[StepResult]:
        with _ALL_TOKENS_LOCK:
            _ALL_TOKENS.add(request.token)
        return self._executor.submit(self._run, request)

    def _run(self, request: StepRequest) -> StepResult:
        slot = self._free.get()
        try:
            return execute_with_retry(lambda d: self._attempt(request, slot, d), request.log_dir)
        finally:
            self._free.put(slot)
            with _ALL_TOKENS_LOCK:
                _ALL_TOKENS.discard(request.token)

    def _attempt(self, request: StepRequest, slot: int, log_dir: Path) -> StepResult:
        log_dir.mkdir(parents=True, exist_ok=True)
        started = now_iso()
        try:
            wt = self._worktree(slot)
            wt.checkout(request.commit)
        except (GitError, OSError) as exc:
            reason = f"could not prepare the worktree: {exc}"[:300]
            return StepResult(
                commit=request.commit, kind=Kind.INFRA.value, verdict=Verdict.ABORT.value,
                reason=reason, worker=slot, started=started, finished=now_iso(), seconds=0.0,
                log_dir=str(log_dir),
            )
        ctx = StepContext(
            worktree=wt.path,
            log_dir=log_dir,
            worker=wt.index,
            env=dict(self.env),
            timeout=self.timeout,
            workdir=self.workdir,
        )
        _CTX_TOKENS[id(ctx)] = request.token
        try:
            return execute_step(
                self.recipe, request.commit, ctx, self.policy,
                repeat=self.repeat, record=request.record, token=request.token,
            )
        finally:
            _CTX_TOKENS.pop(id(ctx), None)

    def close(self) -> None:
        self._executor.shutdown(wait=True, cancel_futures=True)
        for wt in self._worktrees.values():
            wt.release()
        self._worktrees.clear()


# Recipes run processes through `run_logged(..., token=cancel_token_for(ctx))` so that a
# cancelled step or Ctrl-C kills them.
_CTX_TOKENS: dict[int, CancelToken] = {}


def cancel_token_for(ctx: StepContext) -> CancelToken | None:
    return _CTX_TOKENS.get(id(ctx))
