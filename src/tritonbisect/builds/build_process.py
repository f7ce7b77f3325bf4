"""Running build processes: `bisect.process.run_logged` with the build layer's defaults,
and the same runner with every command in a sandbox (`SandboxedRunner`).

One runner serves the engine and the build layer (process group, log capture, timeout,
cancellation); builds get a longer kill grace (a compiler may need it to flush) and a
larger log tail, and each call outside the engine gets its own cancel token, so a Ctrl-C
of an engine session in the same process does not cancel builds started directly.
"""

from __future__ import annotations

import copy
import functools
import os
import shutil
import tempfile
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from tritonbisect.builds.confine import limits_from_env
from tritonbisect.builds.downloads import store_dir
from tritonbisect.builds.gitutil import base_build_env
from tritonbisect.builds.recipes import StepContext
from tritonbisect.builds.sandbox import Layout, Sandbox, git_checkouts, require, wrap
from tritonbisect.builds.toolchain import ccache_dir
from tritonbisect.core.files import open_nofollow, read_nofollow
from tritonbisect.core.gitrun import restore_dotgit
from tritonbisect.core.outcome import RESULT_ENV_VAR
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
    keeper: Sequence[str] = (),
) -> ProcResult:
    """Run `cmd` (a bash command line when a str) with stdout+stderr into `log`; see
    `tritonbisect.core.process.run_logged`."""
    return _run_logged(
        cmd, cwd=cwd, env=env, log=log, timeout=timeout, token=token or CancelToken(),
        header=header, append=append, grace=KILL_GRACE_S, keeper=keeper,
    )


def read_tail(path: Path | None, limit: int = TAIL_BYTES) -> str:
    """The last `limit` bytes of a log, decoded leniently ("" when absent)."""
    return _read_tail(path, limit)


def prepend_path(env: Mapping[str, str], directory: Path) -> str:
    old = env.get("PATH", os.defpath)
    return f"{directory}{os.pathsep}{old}" if old else str(directory)


# A test's structured result, written inside to its private /tmp and copied out afterwards
# by the tool (the step's log folder is not writable inside)
_RESULT_INSIDE = "tritonbisect-result.json"
_RESULT_MAX = 16 * 1024 * 1024


class SandboxedRunner:
    """A process runner (`run_logged`'s signature) that runs every command in `sandbox`.

    `writable`: the only folders its commands may write (the worktree, build folders, caches
    such as ccache's); `readable`, `network`, `keep_env`: see `sandbox.Layout`. Each command
    gets a fresh private $HOME and /tmp, removed when it ends. The log is the tool's (opened
    outside, never writable inside); the $TRITONBISECT_RESULT a test writes goes to its
    private /tmp and is copied to where the tool asked once it has ended. A command's own
    TRITON_CACHE_DIR (a fresh folder under one of `scratch_roots`) is writable for it."""

    def __init__(self, runner, sandbox: Sandbox, *, writable: Sequence[Path] = (),
                 readable: Sequence[Path] = (), network: bool = False, keep_env: Sequence[str] = (),
                 extra_env: Mapping[str, str] | None = None,
                 files: Sequence[tuple[Path, Path]] = (), scratch_roots: Sequence[Path] = ()) -> None:
        self.runner = runner
        self.sandbox = sandbox
        self.writable = tuple(Path(p) for p in writable)
        self.readable = tuple(Path(p) for p in readable)
        self.network = network
        self.keep_env = tuple(keep_env)
        self.extra_env = dict(extra_env or {})
        self.files = tuple((Path(a), Path(b)) for a, b in files)
        self.scratch_roots = tuple(Path(p).absolute() for p in scratch_roots)
        self.limits = limits_from_env()

    def also_writable(self, *paths: Path) -> SandboxedRunner:
        """The same runner, its commands also writing `paths` (a build's own staging folder)."""
        clone = copy.copy(self)
        clone.writable = (*self.writable, *(Path(p) for p in paths))
        return clone

    def _own_folders(self, env: Mapping[str, str]) -> list[Path]:
        """The folders of this one command (its TRITON_CACHE_DIR) it may write."""
        value = env.get("TRITON_CACHE_DIR")
        if not value:
            return []
        path = Path(value).absolute()
        return [path] if any(root in path.parents for root in self.scratch_roots) else []

    def __call__(self, cmd: Sequence[str] | str, *, cwd: Path, env: Mapping[str, str], log: Path,
                 timeout: float | None = None, **kwargs) -> ProcResult:
        argv = ["/bin/bash", "-c", cmd] if isinstance(cmd, str) else [str(c) for c in cmd]
        scratch = Path(tempfile.mkdtemp(prefix="tritonbisect-sandbox-"))
        result = env.get(RESULT_ENV_VAR)
        try:
            (scratch / "home").mkdir()
            (scratch / "tmp").mkdir()
            writable = (*self.writable, *self._own_folders(env))
            for path in writable:
                path.mkdir(parents=True, exist_ok=True)
            for pinned in git_checkouts(writable):
                if pinned.made:  # whatever an earlier command left as its `.git`
                    restore_dotgit(pinned)
            layout = Layout(home=scratch / "home", tmp=scratch / "tmp",
                            writable=writable, readable=self.readable,
                            network=self.network, keep_env=(*self.keep_env, *self.extra_env),
                            files=self.files)
            inner = {**env, **self.extra_env}
            if result:
                inner[RESULT_ENV_VAR] = f"/tmp/{_RESULT_INSIDE}"
            full, senv = wrap(self.sandbox, argv, inner, cwd=Path(cwd), layout=layout)
            append = bool(kwargs.pop("append", False))
            if kwargs.pop("header", True):
                Path(log).parent.mkdir(parents=True, exist_ok=True)
                shown = cmd if isinstance(cmd, str) else " ".join(argv)
                with open_nofollow(Path(log), append=append) as out:
                    out.write(f"$ {shown}\n# cwd: {cwd}\n# sandbox: {self.sandbox.kind}\n".encode())
                append = True
            # the keeper applies the limits and removes the private folders even when the
            # tool is killed (kill -9) before this `finally` runs
            keeper = [*self.limits.keeper_options(), "--remove", str(scratch)]
            return self.runner(full, cwd=cwd, env=senv, log=log, timeout=timeout, header=False,
                               append=append, keeper=keeper, **kwargs)
        finally:
            if result:
                data = read_nofollow(scratch / "tmp" / _RESULT_INSIDE, _RESULT_MAX)
                if data is not None:
                    with open_nofollow(Path(result)) as out:
                        out.write(data)
            shutil.rmtree(scratch, ignore_errors=True)


def with_writable(runner: Callable, *paths: Path) -> Callable:
    """`runner`, its sandboxed commands also writing `paths` (a build's own staging folder:
    the staging area as a whole is not writable inside, so that one build cannot put its
    wheel where another build's is awaited)."""
    return runner.also_writable(*paths) if isinstance(runner, SandboxedRunner) else runner


def default_runner() -> Callable:
    """The build layer's runner (its own cancel token per call): for processes outside a step."""
    return run_logged


def step_runner(ctx: StepContext, *writable: Path, env: Mapping[str, str] | None = None) -> Callable:
    """The process runner of a step, bound to its cancel token.

    With ctx.sandbox, every command runs in the sandbox (builds/sandbox.py), writing only
    `writable` (the tree being built or tested, its build folder), the sandboxed builds' own
    ccache folder (`sandbox_ccache`; when ccache is found for `env`) and, per command, its
    own TRITON_CACHE_DIR and the staging folder a recipe names (`with_writable`)."""
    run = plain_runner(ctx)
    if not ctx.sandbox:
        return run
    return sandboxed_runner(run, ctx, writable, env)


def plain_runner(ctx: StepContext) -> Callable:
    """The step's process runner, unsandboxed: bound to its cancel token when it has one."""
    if ctx.token is None:
        return default_runner()
    return functools.partial(_run_logged, token=ctx.token)


SANDBOX_CCACHE = "ccache-sandboxed"


def sandbox_ccache(workdir: Path) -> tuple[Path, Path]:
    """The ccache folder of sandboxed builds (never the one builds with your rights use: an
    object a hostile build put there, with CCACHE_PREFIX say, would be linked into them) and
    the configuration file it reads instead of one in that folder (a `prefix_command` a
    build wrote there would run in later builds); the tool writes the file, outside."""
    folder = Path(workdir) / SANDBOX_CCACHE
    config = Path(workdir) / f"{SANDBOX_CCACHE}.conf"
    folder.mkdir(parents=True, exist_ok=True)
    want = "# written by tritonbisect: the sandboxed builds' ccache reads no configuration of its cache folder\n"
    try:
        current = config.read_text(encoding="utf-8") if not config.is_symlink() else None
    except OSError:
        current = None
    if current != want:
        with open_nofollow(config) as out:
            out.write(want.encode())
    return folder, config


def sandboxed_runner(run: Callable, ctx: StepContext, writable: Sequence[Path],
                     env: Mapping[str, str] | None = None) -> Callable:
    """`run` in the sandbox, writing only `writable` and the caches of sandboxed builds."""
    workdir = Path(ctx.workdir) if ctx.workdir else ctx.worktree.parent
    caches: list[Path] = []
    extra_env: dict[str, str] = {}
    if ccache_dir({**base_build_env(), **(env or {}), **ctx.env}) is not None:  # ccache is there
        folder, config = sandbox_ccache(workdir)
        caches.append(folder)
        extra_env.update(CCACHE_DIR=str(folder), CCACHE_CONFIGPATH=str(config))
    # the shared downloads (prebuilt LLVM…) are linked into TRITON_HOME: readable, never
    # writable, so a build cannot change what later builds will use
    return SandboxedRunner(run, require(), writable=[*writable, *caches], readable=[store_dir(workdir)],
                           keep_env=tuple(ctx.env), extra_env=extra_env,
                           scratch_roots=[workdir / "triton-cache", ctx.log_dir])
