"""Where narrowing gets the culprit's and the parent's compiler from: the artifact cache only.

    CommandBuild   `run --build CMD --artifact PATH`: the cached PATH, restored into a scratch
                   checkout; the session's --env applies there (relative PYTHONPATH included)
    WheelBuild     `wheels` sessions: the published wheel of the version, from the download cache;
                   `triton` (and `llvm`/`pairs` phases building Triton): the cached Triton wheel
                   of the commit (for an LLVM commit: the Triton wheel built against it), installed (--no-deps) into a scratch venv that sees the
                   session's Python packages (an overlay venv: builds/env.py)

`builds_for(session, phase)` picks one; `.environment(commit, scratch)` gives (python, env, cwd)
or raises InputError when the cache has no build of the commit: narrowing never builds.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from tritonbisect.builds.cache import sandbox_mark
from tritonbisect.builds.env import EnvError, TargetEnv
from tritonbisect.builds.gitutil import base_build_env
from tritonbisect.builds.store import open_cache
from tritonbisect.core.errors import InputError
from tritonbisect.core.history import root_identity
from tritonbisect.core.secrets import redact_env
from tritonbisect.session.session import Session

if TYPE_CHECKING:  # pragma: no cover
    from tritonbisect.session.phases import PhaseState

Environment = tuple[str, dict[str, str], Path]  # python, env, cwd of one compile


def _no_build(commit: str) -> InputError:
    return InputError(f"no cached build of {commit[:12]}: narrow never builds (bisect with the same --workdir "
                      "or --cache-dir, whose confirmation built the culprit and its parent)")


class CommandBuild:
    def __init__(self, session: Session, phase: PhaseState) -> None:
        self.cfg = phase.spec.recipe_config
        self.settings = session.settings
        self.store = open_cache(session.settings.executor.cache_dir, workdir=Path(session.settings.workdir))
        self.repo_id = root_identity(phase.spec.repo) or str(phase.spec.repo)

    def environment(self, commit: str, scratch: Path) -> Environment:
        rel = Path(self.cfg["artifact"])
        config = {"build": self.cfg["build"], "artifact": rel.as_posix(),
                  "env": redact_env(dict(sorted(self.settings.executor.env.items()))),
                  **sandbox_mark(self.settings.executor.sandbox)}
        hit = self.store.get(self.store.key(self.repo_id, commit, "command", config, "any", ""))
        if hit is None:
            raise _no_build(commit)
        target = scratch / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        if hit.is_dir():
            shutil.copytree(hit, target, symlinks=True)
        else:
            shutil.copy2(hit, target, follow_symlinks=False)
        env = base_build_env()
        for key, value in self.settings.executor.env.items():
            if key == "PYTHONPATH":  # relative entries are relative to the checkout
                value = os.pathsep.join(str(scratch / p) if p and not os.path.isabs(p) else p
                                        for p in value.split(os.pathsep))
            env[key] = value
        env["TRITONBISECT_COMMIT"] = commit
        return shutil.which("python", path=env.get("PATH")) or sys.executable, env, scratch


class WheelBuild:
    def __init__(self, session: Session, phase: PhaseState) -> None:
        self.cfg = phase.spec.recipe_config
        self.settings = session.settings
        self.repo = phase.spec.repo
        self.published = phase.spec.recipe_name == "wheel"  # a `wheels` session's version ladder
        self.store = open_cache(self.cfg.get("cache_dir") or session.settings.executor.cache_dir,
                                workdir=Path(session.settings.workdir))

    def _published(self, commit: str) -> Path:
        """The published wheel of a version-ladder commit, from the download cache (a published
        wheel is not a build: fetched again only if the cache lost it)."""
        from tritonbisect.builds.wheel_fetch import FetchError, fetch_wheel
        from tritonbisect.core.history import History

        text = History(self.repo).file_at(commit, "WHEEL.json")
        if text is None:
            raise InputError(f"version-ladder commit {commit[:12]} has no WHEEL.json")
        wheel = json.loads(text)
        root = Path(getattr(self.store, "root", Path(self.settings.workdir) / "cache"))
        try:
            return fetch_wheel(wheel["url"], wheel["filename"], wheel.get("sha256"), root).path
        except FetchError as exc:
            raise InputError(f"{wheel['filename']}: {exc}") from None

    def _wheel(self, commit: str) -> Path:
        """The Triton wheel of `commit`: a Triton commit's own, or (an LLVM-phase culprit) the
        wheel of the Triton commit built against that LLVM commit."""
        entries = getattr(self.store, "entries", None)
        found = [e for e in (entries() if entries else []) if str(e.path).endswith(".whl") and
                 (e.commit == commit or ((e.meta or {}).get("extra") or {}).get("llvm") == commit)]
        if not found:
            raise _no_build(commit)
        return max(found, key=lambda e: e.last_used).path

    def environment(self, commit: str, scratch: Path) -> Environment:
        wheel = self._published(commit) if self.published else self._wheel(commit)
        try:
            venv = TargetEnv.from_python(self.cfg.get("python") or sys.executable).overlay(scratch / "venv")
        except EnvError as exc:
            raise InputError(f"cannot make a scratch venv for the cached wheel {wheel.name}: {exc}") from None
        # --ignore-installed: the same version seen through the overlay (two builds both
        # called 3.6.0, or the session's own Triton) must not skip it
        proc = subprocess.run([sys.executable, "-m", "pip", "--python", str(venv.python), "install", "-q",
                               "--no-deps", "--no-index", "--ignore-installed", str(wheel)],
                              capture_output=True, text=True, check=False)  # fmt: skip
        if proc.returncode != 0:
            raise InputError(f"cannot install the cached wheel {wheel.name} into a scratch venv: "
                             f"{(proc.stderr.strip().splitlines() or ['?'])[-1][:200]}")
        env = base_build_env()
        env.update(self.settings.executor.env)
        env["TRITONBISECT_COMMIT"] = commit
        return str(venv.python), env, scratch


def builds_for(session: Session, phase: PhaseState) -> CommandBuild | WheelBuild:
    cfg = phase.spec.recipe_config
    if phase.spec.recipe_name == "command":
        if not cfg.get("artifact") or not cfg.get("build"):
            raise InputError("narrow needs cached builds: this `run` session has no --build with --artifact, so "
                             "nothing of the culprit or its parent was kept")
        return CommandBuild(session, phase)
    return WheelBuild(session, phase)
