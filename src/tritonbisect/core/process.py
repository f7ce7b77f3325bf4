"""Subprocess helpers: logged commands in their own process group, cancellation, git.

Every process runs in its own session (process group). A per-test timeout, a cancelled step
and Ctrl-C kill the whole group, so compilers and test children do not linger.
"""

from __future__ import annotations

import contextlib
import os
import signal
import stat
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from tritonbisect.core.errors import AbortError
from tritonbisect.core.files import open_nofollow
from tritonbisect.core.gitrun import without_location
from tritonbisect.core.loglimit import LogPump, log_limit

TAIL_BYTES = 64 * 1024
KILL_GRACE_S = 3.0

# a Ray worker inherits its cluster's token; a build or test has no use for it, and what
# they print ends up in logs
_SECRET_VARS = ("RAY_AUTH_TOKEN",)


def clean_env(base: Mapping[str, str] | None = None) -> dict[str, str]:
    """A copy of the environment without variables that redirect git to another repository
    (nor the Ray cluster's token)."""
    env = without_location(os.environ if base is None else base)
    for name in _SECRET_VARS:
        env.pop(name, None)
    return env


# --- processes ---------------------------------------------------------------------------


# What the keeper takes as "kill everything now" (a cancelled step, Ctrl-C); SIGTERM gives
# the command its grace first.
CANCEL_SIGNAL = signal.SIGUSR1
KEEPER = Path(__file__).with_name("keeper.py")


def keeper_argv(argv: Sequence[str], *, grace: float = KILL_GRACE_S, options: Sequence[str] = ()) -> list[str]:
    """The command line that runs `argv` under the keeper."""
    inner = max(0.2, grace * 0.7)  # the keeper kills everything before the group's SIGKILL
    return [sys.executable, "-I", "-S", str(KEEPER), "--parent", str(os.getpid()), "--grace", f"{inner:g}",
            *options, "--", *argv]


class CancelToken:
    """Cancels one step: kills every process group the step has started, now and later."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._groups: set[int] = set()
        self._callbacks: list[Callable[[], object]] = []
        self.cancelled = False

    def on_cancel(self, callback: Callable[[], object]) -> None:
        """Call `callback` when the step is cancelled (now, when it already is): a step that
        runs elsewhere (a Ray actor) is stopped there by it."""
        with self._lock:
            if not self.cancelled:
                self._callbacks.append(callback)
                return
        _call_quietly(callback)

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
            callbacks, self._callbacks = self._callbacks, []
        for pgid in groups:
            _killpg(pgid, CANCEL_SIGNAL)
        for callback in callbacks:
            _call_quietly(callback)


def _call_quietly(callback: Callable[[], object]) -> None:
    # a cancellation hook that fails (e.g. its actor is already gone) must not stop the others
    with contextlib.suppress(Exception):
        callback()


_ALL_TOKENS: set[CancelToken] = set()
_ALL_TOKENS_LOCK = threading.Lock()
_GLOBAL_TOKEN = CancelToken()


def cancel_all() -> None:
    """Kill every process group started by any step of this process (Ctrl-C)."""
    with _ALL_TOKENS_LOCK:
        tokens = list(_ALL_TOKENS)
    for token in [*tokens, _GLOBAL_TOKEN]:
        token.cancel()


def track_token(token: CancelToken) -> None:
    """Let `cancel_all` reach the processes of a step that is about to run."""
    with _ALL_TOKENS_LOCK:
        _ALL_TOKENS.add(token)


def untrack_token(token: CancelToken) -> None:
    with _ALL_TOKENS_LOCK:
        _ALL_TOKENS.discard(token)


def _killpg(pgid: int, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)


class CommandLost(AbortError):
    """The keeper running a command ended without the command's status (something killed it:
    the command's parent, a worker's own process gone, the OOM killer): a harness failure, not
    the command's outcome. A step reads it as an infrastructure failure and retries."""


def _lost_reason(rc: int | None) -> str:
    how = f"killed by signal {-rc}" if rc is not None and rc < 0 else f"ended with exit {rc}"
    return f"the process that ran the command (its keeper) was {how} before the command ended: its outcome is unknown"


def _read_report(fd: int) -> bytes:
    """What the keeper wrote to its status pipe (nothing when it died first); closes `fd`."""
    try:
        os.set_blocking(fd, False)
        return os.read(fd, 64)
    except OSError:
        return b""
    finally:
        os.close(fd)


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
    append: bool = False,
    grace: float = KILL_GRACE_S,
    keeper: Sequence[str] = (),
) -> ProcessResult:
    """Run `cmd` (a bash command line when a str) with stdout+stderr into `log`.

    The command runs under the keeper (core/keeper.py), which leads its own process group:
    when the command ends, is cancelled or times out, or the tool dies, everything it started
    dies with it, also what left the group (`setsid` daemons, double forks). On timeout the
    group gets SIGTERM and `grace` seconds before everything is killed. `keeper`: more of
    the keeper's options (limits, a folder to remove afterwards). A command that cannot be
    started is reported as a shell would (127, or 126 when not executable) with the reason
    in the log; both read as a missing tool to the classifiers. The log is opened without
    following a link (core.files.open_nofollow); `append` adds to it instead of truncating.
    A keeper killed before it reported the command's status (the command killed its parent,
    say) raises CommandLost: its exit status would read as the command's own crash.
    """
    token = token or _GLOBAL_TOKEN
    log.parent.mkdir(parents=True, exist_ok=True)
    shell = isinstance(cmd, str)
    start = time.monotonic()
    with open_nofollow(log, append=append) as out:
        if header:
            shown = cmd if shell else " ".join(str(c) for c in cmd)
            out.write(f"$ {shown}\n# cwd: {cwd}\n".encode())
            out.flush()
        if token.cancelled:
            return ProcessResult(None, 0.0, False, log, cancelled=True)
        limit = log_limit(env)
        # bounded: through a pipe that LogPump empties into the log (0: straight into the file)
        read_fd, write_fd = os.pipe() if limit else (None, None)
        argv = ["/bin/bash", "-c", cmd] if isinstance(cmd, str) else [str(c) for c in cmd]
        status_r, status_w = os.pipe()
        try:
            proc = subprocess.Popen(
                keeper_argv(argv, grace=grace, options=[*keeper, "--status-fd", str(status_w)]),
                cwd=str(cwd),
                env=dict(env),
                stdin=subprocess.DEVNULL,
                stdout=out if write_fd is None else write_fd,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                pass_fds=(status_w,),
            )
        except (FileNotFoundError, PermissionError) as exc:
            for fd in (read_fd, write_fd, status_r, status_w):
                if fd is not None:
                    os.close(fd)
            if isinstance(exc, FileNotFoundError):
                out.write(f"{exc.filename}: command not found\n".encode())
                return ProcessResult(127, time.monotonic() - start, False, log)
            out.write(f"{exc.filename}: permission denied: command not found\n".encode())
            return ProcessResult(126, time.monotonic() - start, False, log)
        os.close(status_w)
        pump = None
        if write_fd is not None and read_fd is not None:
            os.close(write_fd)
            pump = LogPump(read_fd, out, limit)
        pgid = proc.pid
        if not token._register(pgid):
            _killpg(pgid, CANCEL_SIGNAL)
        timed_out = False
        try:
            try:
                rc = proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                timed_out = True
                _killpg(pgid, signal.SIGTERM)
                try:
                    rc = proc.wait(timeout=grace)
                except subprocess.TimeoutExpired:
                    _killpg(pgid, signal.SIGKILL)
                    rc = proc.wait()
            except BaseException:
                _killpg(pgid, CANCEL_SIGNAL)
                proc.wait()
                raise
        finally:
            # nothing started by this command may outlive it
            _killpg(pgid, signal.SIGKILL)
            token._unregister(pgid)
            if pump is not None:
                pump.finish()
            reported = _read_report(status_r)
        if timed_out:
            out.write(f"\n# tritonbisect: killed after the {timeout:g} s timeout\n".encode())
        elif not reported and not token.cancelled:
            out.write(f"\n# tritonbisect: {_lost_reason(rc)}\n".encode())
            raise CommandLost(_lost_reason(rc))
    return ProcessResult(rc, time.monotonic() - start, timed_out, log, cancelled=token.cancelled)


def kill_child_groups() -> list[int]:
    """Kill the process group of every child of this process that leads its own (every
    command `run_logged` started). For a process whose only job is running one caller's
    commands, such as a Ray actor probing for compat-builder. Linux only (reads /proc)."""
    me = os.getpid()
    own = os.getpgid(0)
    killed: list[int] = []
    proc = Path("/proc")
    if not proc.is_dir():
        return killed
    for entry in proc.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            # the field after the parenthesised name: state, then ppid
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            if int(fields[1]) != me:
                continue
            pgid = os.getpgid(int(entry.name))
        except (OSError, ValueError, IndexError):
            continue
        if pgid != own:
            _killpg(pgid, CANCEL_SIGNAL)  # its keeper kills what the command started, then itself
            killed.append(pgid)
    deadline = time.monotonic() + 5.0
    while killed and time.monotonic() < deadline and any(_alive(pgid) for pgid in killed):
        time.sleep(0.02)
    for pgid in killed:
        _killpg(pgid, signal.SIGKILL)
    return killed


def _alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except (ProcessLookupError, PermissionError):
        return False
    return True


def read_tail(path: Path | None, limit: int = TAIL_BYTES) -> str:
    """The last `limit` bytes of a log, decoded leniently ("" when absent). A link in the log's
    place (a test can replace its own log) is not followed, nor is anything but a file read."""
    if path is None:
        return ""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK)
    except (OSError, ValueError):
        return ""
    try:
        with os.fdopen(fd, "rb") as f:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                return ""
            f.seek(max(0, os.fstat(fd).st_size - limit))
            return f.read(limit).decode("utf-8", "replace")
    except OSError:
        return ""


def tail_lines(path: Path | None, lines: int = 20) -> str:
    text = read_tail(path, 16 * 1024)
    return "\n".join(text.rstrip("\n").splitlines()[-lines:])



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

