"""Running build and test processes: output to a log file, a timeout that kills the whole group."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

TAIL_BYTES = 256 * 1024


@dataclass
class ProcResult:
    returncode: int | None  # negative: killed by that signal (subprocess convention)
    seconds: float
    timed_out: bool
    log: Path


def run_logged(
    cmd: Sequence[str] | str,
    *,
    cwd: Path,
    env: Mapping[str, str],
    log: Path,
    timeout: float | None = None,
    append: bool = False,
    header: bool = True,
) -> ProcResult:
    """Run `cmd` (a shell string when a str) with stdout+stderr into `log`.

    The process gets its own session; on timeout the whole process group gets SIGTERM, then
    SIGKILL after 10 seconds, so compilers and test children do not linger.
    A command that cannot be started (missing executable) is reported as exit 127 with the
    reason written to the log, as a shell would.
    """
    log.parent.mkdir(parents=True, exist_ok=True)
    shell = isinstance(cmd, str)
    start = time.monotonic()
    with open(log, "ab" if append else "wb") as out:
        if header:
            shown = cmd if shell else " ".join(str(c) for c in cmd)
            out.write(f"$ {shown}\n# cwd: {cwd}\n".encode())
            out.flush()
        try:
            proc = subprocess.Popen(
                cmd if shell else [str(c) for c in cmd],
                shell=shell,
                executable="/bin/bash" if shell else None,
                cwd=str(cwd),
                env=dict(env),
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        except FileNotFoundError as exc:
            out.write(f"{exc.filename}: command not found\n".encode())
            return ProcResult(127, time.monotonic() - start, False, log)
        except PermissionError as exc:
            out.write(f"{exc.filename}: permission denied: command not found\n".encode())
            return ProcResult(126, time.monotonic() - start, False, log)
        timed_out = False
        try:
            rc = proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            timed_out = True
            kill_group(proc)
            rc = proc.returncode
        except BaseException:
            kill_group(proc)
            raise
        if timed_out:
            out.write(f"\n# tritonbisect: killed after the {timeout:g} s timeout\n".encode())
    return ProcResult(rc, time.monotonic() - start, timed_out, log)


def kill_group(proc: subprocess.Popen, grace: float = 10.0) -> None:
    """SIGTERM the process group, then SIGKILL it when it does not exit within `grace`."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGTERM)
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(timeout=grace)
    # the leader may be gone; no child of its group may survive it
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()


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


def prepend_path(env: Mapping[str, str], directory: Path) -> str:
    old = env.get("PATH", os.defpath)
    return f"{directory}{os.pathsep}{old}" if old else str(directory)
