"""The target environment of each worker: the venv a step's build is installed into and its
test runs with, and the build requirements a source tree needs in it.

Default: a venv per worker under <workdir>/venvs, named after the worker's worktree (which
the engine locks to it), reused across sessions. A user's own venv (--venv), or the venv of
--python, is used by one worker at a time (a lock file under the workdir); other workers get
overlay venvs of it. A bare interpreter (--python, not a venv) gets a venv per worker made
with it.
"""

from __future__ import annotations

import contextlib
import hashlib
import re
import sys
import threading
from pathlib import Path

from tritonbisect.builds.env import EnvError, TargetEnv
from tritonbisect.builds.recipes import StepContext
from tritonbisect.builds.toolchain import build_requires
from tritonbisect.core.lock import FileLock


class EnvPool:
    """One TargetEnv per worker, made on first use and kept while the recipe lives."""

    def __init__(self, venv: str | None, python: str | None) -> None:
        self.venv = venv
        self.python = python
        self._envs: dict[int, TargetEnv] = {}
        self._locks: list[FileLock] = []
        self._mutex = threading.Lock()
        self._described: dict[Path, str] = {}

    def get(self, ctx: StepContext) -> TargetEnv:
        with self._mutex:
            env = self._envs.get(ctx.worker)
            if env is None:
                env = self._make(ctx)
                self._envs[ctx.worker] = env
            self._describe(env, ctx)
            return env

    def _describe(self, env: TargetEnv, ctx: StepContext) -> None:
        """Say whose environment a step uses and where its torch comes from: in the step's
        folder (environment.txt), and once on stderr for an environment the tool made."""
        line = self._described.get(env.root)
        if line is None:
            try:
                line = env.describe()
            except (EnvError, OSError) as exc:
                line = f"target environment {env.root}: {exc}"
            self._described[env.root] = line
            if env.owned and ctx.worker == 0:
                print(f"tritonbisect: note: {line}", file=sys.stderr)
        with contextlib.suppress(OSError):
            Path(ctx.log_dir).mkdir(parents=True, exist_ok=True)
            (Path(ctx.log_dir) / "environment.txt").write_text(line + "\n", encoding="utf-8")

    def _workdir(self, ctx: StepContext) -> Path:
        return Path(ctx.workdir) if ctx.workdir else ctx.worktree.parent

    def _make(self, ctx: StepContext) -> TargetEnv:
        workdir = self._workdir(ctx)
        if not self.venv and not self.python:
            # the worktree lock makes <repo_id>-w<i> this worker's alone
            name = f"{ctx.worktree.parent.name}-{ctx.worktree.name}"
            return TargetEnv.ensure(workdir / "venvs" / name)
        if self.venv:
            base = TargetEnv.existing(Path(self.venv))
        else:
            assert self.python is not None
            base = TargetEnv.from_python(self.python)
            if not (base.root / "pyvenv.cfg").exists():
                # a bare interpreter: make the session's venv with it, per worker
                name = f"{ctx.worktree.parent.name}-{ctx.worktree.name}-" + hashlib.sha256(
                    str(base.python).encode()).hexdigest()[:8]
                return TargetEnv.ensure(workdir / "venvs" / name, python=str(base.python))
        if self._claim(workdir, base.root):
            return base
        return base.for_worker(max(1, ctx.worker), workdir / "venvs")

    def _claim(self, workdir: Path, root: Path) -> bool:
        locks = workdir / "locks"
        locks.mkdir(parents=True, exist_ok=True)
        digest = hashlib.sha256(str(root).encode()).hexdigest()[:16]
        lock = FileLock(locks / f"venv-{digest}.lock")
        try:
            if not lock.acquire(wait=False):
                return False
        except OSError:
            return False
        self._locks.append(lock)  # held while this recipe lives
        return True

    def close(self) -> None:
        for lock in self._locks:
            with contextlib.suppress(OSError):
                lock.release()
        self._locks.clear()

    def __del__(self) -> None:
        self.close()


def project_dir(source: Path) -> Path | None:
    """The folder pip builds: where setup.py is (the repository root from mid-2025, python/
    through Triton 3.3), else the folder whose pyproject.toml declares a build system. A stub
    python/pyproject.toml (tool settings only) beside a root setup.py does not count."""
    source = Path(source)
    for proj in (source, source / "python"):
        if (proj / "setup.py").is_file():
            return proj
    for proj in (source / "python", source):
        if _declares_build_system(proj / "pyproject.toml"):
            return proj
    return None


def _declares_build_system(pyproject: Path) -> bool:
    try:
        text = pyproject.read_text(encoding="utf-8")
    except OSError:
        return False
    return any(line.strip().replace(" ", "") == "[build-system]" for line in text.splitlines())


def ensure_build_requirements(env: TargetEnv, source: Path, log: Path, *,
                              binary_only: bool = False) -> tuple[bool, str]:
    """Install into env what the source needs to build without isolation (once; no-op when
    everything is there). Old setuptools (< 70.1) also needs `wheel` for bdist_wheel.
    `binary_only`: wheels only (pip --only-binary :all:), never an sdist's build code."""
    proj = project_dir(source)
    if proj is None:
        return True, ""
    reqs = build_requires(proj)
    try:
        ok, reason = env.ensure_packages(reqs, log=log, binary_only=binary_only)
        if not ok:
            return False, reason
        st = env.installed_versions(["setuptools", "wheel"])
        setuptools = st.get("setuptools")
        if setuptools and st.get("wheel") is None and _older(setuptools, (70, 1)):
            return env.ensure_packages(["wheel"], log=log, binary_only=binary_only)
    except EnvError as exc:
        return False, str(exc)
    return True, ""


def _older(version: str, than: tuple[int, ...]) -> bool:
    nums = tuple(int(x) for x in re.findall(r"\d+", version)[: len(than)])
    return nums < than


__all__ = ["EnvPool", "ensure_build_requirements", "project_dir"]
