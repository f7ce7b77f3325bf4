"""Running build processes: `bisect.process.run_logged` with the build layer's defaults,
and the same runner with every command in a sandbox (`SandboxedRunner`).

One runner serves the engine and the build layer (process group, log capture, timeout,
cancellation); builds get a longer kill grace (a compiler may need it to flush) and a
larger log tail, and each call outside the engine gets its own cancel token, so a Ctrl-C
of an engine session in the same process does not cancel builds started directly.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path

from tritonbisect.builds.sandbox import Layout, Sandbox, wrap
from tritonbisect.core.process import CancelToken, ProcessResult
from tritonbisect.core.process import read_tail as _read_tail
from tritonbisect.core.process import run_logged as _run_logged

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
    `tritonbisect.core.process.run_logged`."""
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


class SandboxedRunner:
    """A process runner (`run_logged`'s signature) that runs every command in `sandbox`.

    `writable`: the only folders its commands may write (the worktree, build folders, the
    cache's staging area, caches such as ccache's); `readable`, `network`, `keep_env`: see
    `sandbox.Layout`. Each command gets a fresh private $HOME and /tmp, removed when it ends."""

    def __init__(self, runner, sandbox: Sandbox, *, writable: Sequence[Path] = (),
                 readable: Sequence[Path] = (), network: bool = False, keep_env: Sequence[str] = (),
                 extra_env: Mapping[str, str] | None = None,
                 files: Sequence[tuple[Path, Path]] = ()) -> None:
        self.runner = runner
        self.sandbox = sandbox
        self.writable = tuple(Path(p) for p in writable)
        self.readable = tuple(Path(p) for p in readable)
        self.network = network
        self.keep_env = tuple(keep_env)
        self.extra_env = dict(extra_env or {})
        self.files = tuple((Path(a), Path(b)) for a, b in files)

    def __call__(self, cmd: Sequence[str] | str, *, cwd: Path, env: Mapping[str, str], log: Path,
                 timeout: float | None = None, **kwargs) -> ProcResult:
        argv = ["/bin/bash", "-c", cmd] if isinstance(cmd, str) else [str(c) for c in cmd]
        scratch = Path(tempfile.mkdtemp(prefix="tritonbisect-sandbox-"))
        try:
            (scratch / "home").mkdir()
            (scratch / "tmp").mkdir()
            for path in self.writable:
                path.mkdir(parents=True, exist_ok=True)
            layout = Layout(home=scratch / "home", tmp=scratch / "tmp",
                            writable=self.writable, readable=self.readable,
                            network=self.network, keep_env=(*self.keep_env, *self.extra_env),
                            files=self.files)
            full, senv = wrap(self.sandbox, argv, {**env, **self.extra_env}, cwd=Path(cwd), layout=layout)
            append = bool(kwargs.pop("append", False))
            if kwargs.pop("header", True):
                Path(log).parent.mkdir(parents=True, exist_ok=True)
                shown = cmd if isinstance(cmd, str) else " ".join(argv)
                with open(log, "ab" if append else "wb") as out:
                    out.write(f"$ {shown}\n# cwd: {cwd}\n# sandbox: {self.sandbox.kind}\n".encode())
                append = True
            return self.runner(full, cwd=cwd, env=senv, log=log, timeout=timeout, header=False,
                               append=append, **kwargs)
        finally:
            shutil.rmtree(scratch, ignore_errors=True)

