"""Running build processes: `bisect.process.run_logged` with the build layer's defaults.

One runner serves the engine and the build layer (process group, log capture, timeout,
cancellation); builds get a longer kill grace (a compiler may need it to flush) and a
larger log tail, and each call outside the engine gets its own cancel token, so a Ctrl-C
of an engine session in the same process does not cancel builds started directly.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path

from tritonbisect.bisect.process import CancelToken, ProcessResult
from tritonbisect.bisect.process import read_tail as _read_tail
from tritonbisect.bisect.process import run_logged as _run_logged

TAIL_BYTES = 256 * 1024
KILL_GRACE_S = 10.0

ProcResult = ProcessResult  # the name the build modules use


def run_logged(
    cmd: Sequence[str] | str,
    *,
    cwd: Path,
    env: Mapping[str, str],
    log: Path,
    timeout: float | None = None,
    append: bool = False,
    header: bool = True,
    token: CancelToken | None = None,
) -> ProcResult:
    """Run `cmd` (a bash command line when a str) with stdout+stderr into `log`; see
    `tritonbisect.bisect.process.run_logged`."""
    return _run_logged(
        cmd, cwd=cwd, env=env, log=log, timeout=timeout, token=token or CancelToken(),
        header=header, append=append, grace=KILL_GRACE_S,
    )


def read_tail(path: Path | None, limit: int = TAIL_BYTES) -> str:
    """The last `limit` bytes of a log, decoded leniently ("" when absent)."""
    return _read_tail(path, limit)


def prepend_path(env: Mapping[str, str], directory: Path) -> str:
    old = env.get("PATH", os.defpath)
    return f"{directory}{os.pathsep}{old}" if old else str(directory)
