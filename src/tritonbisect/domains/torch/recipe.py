"""PyTorch at a commit → a wheel (cached) → installed with the Triton it pins → tested.

    <python> -m pip wheel --no-build-isolation --no-deps -w <staging> <torch worktree>
    env: the user's USE_* flags (e.g. USE_CUDA=0), MAX_JOBS, DEBUG=1 with --debug

The Triton commit a PyTorch commit needs is read from `.ci/docker/ci_commit_pins/triton.txt`
at that commit (the device decides, as PyTorch's build_triton_wheel.py does: rocm reads
triton-rocm.txt where that file exists, xpu reads triton-xpu.txt, which pins Intel's Triton:
--triton-dir must then be that repository); its wheel comes from the artifact cache, built once (in a Triton worktree
this worker owns, made from `triton_dir`) when missing. Without `triton_dir`, the Triton
already in the target environment is left alone. With `llvm_dir`, that Triton is built
against the LLVM it pins, built from llvm_dir (TritonRecipe.pinned_llvm, same cache keys as
a "triton" step); without it, Triton's setup.py finds its LLVM (LLVM_SYSPATH from --env, or
a download into TRITON_HOME).

Recipe config (the "torch" recipe): the "triton" recipe's keys (test, debug, max_jobs,
python, venv, ...) plus
  triton_dir   the Triton repository to build pinned commits from (optional)
  llvm_dir     an llvm-project checkout to build each pinned Triton's pinned LLVM from
               (optional; with `llvm`: LLVMConfig fields)
  use          {"USE_CUDA": "0", ...}: build flags, part of the wheel's cache key
  device       "cuda" (default), "rocm" or "xpu": which Triton pin file is read

Before a build, the tree's submodules are checked out at the commits it records, from local
mirrors under <workdir>/mirrors (submodules.py): each fetched over the network once.
"""

from __future__ import annotations

import os
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from tritonbisect.builds.cache import ArtifactCache, sandbox_mark
from tritonbisect.builds.env import EnvError
from tritonbisect.builds.llvm_build import cached_build
from tritonbisect.builds.recipes import PrepareResult, StepContext
from tritonbisect.builds.store import ArtifactStore
from tritonbisect.builds.submodules import MIRRORS, SubmoduleError, update_submodules
from tritonbisect.builds.toolchain import compiler_id, which
from tritonbisect.core.outcome import Kind
from tritonbisect.domains.triton.recipe import (
    GitFailure,
    TritonRecipe,
    _python_abi,
    base_build_env,
    checkout_worktree,
    default_max_jobs,
    ensure_build_requirements,
    pip_wheel_to_cache,
    project_dir,
    resolve_commit,
)

RECIPE = "torch"
PINS_DIR = ".ci/docker/ci_commit_pins"
TRITON_PIN = f"{PINS_DIR}/triton.txt"
# the pin files each device reads, first present wins (triton-rocm.txt was dropped later)
DEVICE_PINS = {
    "cuda": (TRITON_PIN,),
    "rocm": (f"{PINS_DIR}/triton-rocm.txt", TRITON_PIN),
    "xpu": (f"{PINS_DIR}/triton-xpu.txt",),
}


def pin_files(device: str) -> tuple[str, ...]:
    try:
        return DEVICE_PINS[device]
    except KeyError:
        raise ValueError(f"unknown device {device!r}; choose {', '.join(DEVICE_PINS)}") from None


def read_triton_pin(worktree: Path, device: str = "cuda") -> str | None:
    """The Triton commit the PyTorch tree pins for `device`, or None."""
    for rel in pin_files(device):
        try:
            text = (Path(worktree) / rel).read_text(encoding="utf-8").strip()
        except OSError:
            continue
        return text.split()[0] if text else None
    return None


def build_torch_wheel(
    source: Path,
    commit: str,
    *,
    cache: ArtifactStore,
    log: Path,
    repo_id: str,
    use: Mapping[str, str],
    python: str,
    python_abi: str | None = None,
    debug: bool = False,
    max_jobs: int | None = None,
    base_env: Mapping[str, str] | None = None,
    timeout: float | None = None,
    runner=None,
    pip: list[str] | None = None,
    sandboxed: bool = False,
):
    """The PyTorch wheel of `source` at `commit`, from the cache or built (see module doc).
    Returns a triton_recipe.WheelBuild. `sandboxed`: `runner` is the sandbox's (the key says
    so: cache.sandbox_mark)."""
    from tritonbisect.domains.triton.recipe import WheelBuild

    start = time.monotonic()
    env = dict(os.environ if base_env is None else base_env)
    env.update({k: str(v) for k, v in use.items()})
    abi = python_abi or _python_abi(python)
    key = ArtifactCache.key(repo_id, commit, RECIPE,
                            {"use": dict(sorted(use.items())), "debug": debug, **sandbox_mark(sandboxed)},
                            abi, compiler_id(None, env))
    cached = cached_build(cache, key, commit, log, WheelBuild, name="PyTorch",
                          hit_reason="torch wheel taken from the cache")
    if cached is not None:
        return cached
    proj = project_dir(source) if not (Path(source) / "setup.py").is_file() else Path(source)
    log.parent.mkdir(parents=True, exist_ok=True)
    if proj is None:
        log.write_text(f"no setup.py in {source}\n", encoding="utf-8")
        reason = f"no setup.py at {commit[:12]}"
        cache.record_failure(key, Kind.BUILD_FAILED.value, reason, log, commit=commit, recipe=RECIPE)
        return WheelBuild(Kind.BUILD_FAILED, reason, None, False, time.monotonic() - start, log)
    env["PYTHONNOUSERSITE"] = "1"
    env["PATH"] = f"{Path(python).parent}{os.pathsep}{env.get('PATH', os.defpath)}"
    if max_jobs:
        env["MAX_JOBS"] = str(max_jobs)
    if debug:
        env["DEBUG"] = "1"
    if which("ccache", env):
        env.setdefault("USE_CCACHE", "1")
    meta = {"commit": commit, "recipe": RECIPE, "repo": repo_id, "python_abi": abi, "use": dict(use),
            **sandbox_mark(sandboxed)}
    return pip_wheel_to_cache(proj, commit, cache=cache, key=key, meta=meta, log=log, env=env,
                              pip=pip or [python, "-m", "pip"], runner=runner, timeout=timeout,
                              start=start, name="PyTorch", stage_prefix="torch")


class TorchRecipe(TritonRecipe):
    """The "torch" recipe: the bisected repository is PyTorch."""

    name = RECIPE

    def __init__(self, config: Mapping[str, Any]) -> None:
        super().__init__(config)
        self.triton_dir = Path(config["triton_dir"]) if config.get("triton_dir") else None
        self.use: dict[str, str] = {k: str(v) for k, v in (config.get("use") or {}).items()}
        self.device = str(config.get("device") or "cuda")
        pin_files(self.device)  # an unknown device is refused before any step

    def prepare_triton(self, commit: str, ctx: StepContext) -> PrepareResult | None:
        """Install the Triton pinned at this PyTorch commit (from the cache; built once when
        missing, against the LLVM it pins when llvm_dir is set). None without triton_dir."""
        if self.triton_dir is None:
            return None
        pin = read_triton_pin(ctx.worktree, self.device)
        files = " or ".join(pin_files(self.device))
        if pin is None:
            return PrepareResult(Kind.BUILD_FAILED, f"{files} is missing at {commit[:12]}: "
                                 f"cannot tell which Triton this PyTorch needs on {self.device}")
        try:
            triton_sha = resolve_commit(self.triton_dir, pin,
                                        what=f"Triton commit {pin[:12]} (pinned in {files})")
            tree = checkout_worktree(
                self.triton_dir,
                self.workdir(ctx) / "worktrees" / f"triton-{self.repo_id(self.triton_dir)[:12]}"
                / f"for-{self.worker_tag(ctx)}",
                triton_sha,
            )
        except GitFailure as exc:
            return PrepareResult(Kind.INFRA, str(exc))
        res = self.build_and_install(tree, triton_sha, ctx, log_name="triton-build.log")
        if res.kind is not Kind.PASS:
            # the pinned Triton does not build: this PyTorch commit cannot be tested
            res.reason = f"pinned Triton {triton_sha[:12]}: {res.reason}"
        return res

    def prepare(self, commit: str, ctx: StepContext) -> PrepareResult:
        start = time.monotonic()
        ctx.log_dir.mkdir(parents=True, exist_ok=True)
        try:
            env = self.target_env(ctx)
        except EnvError as exc:
            return PrepareResult(Kind.INFRA, f"target environment: {exc}", seconds=time.monotonic() - start)
        triton = self.prepare_triton(commit, ctx)
        if triton is not None and triton.kind is not Kind.PASS:
            triton.seconds = time.monotonic() - start
            return triton
        entry = (self._config.get("wheels") or {}).get(commit)
        if entry is not None:  # a published nightly of this very commit: an install, no build
            from tritonbisect.domains.torch.nightly_install import install_published_torch

            cache = self.cache(ctx)
            root = Path(getattr(cache, "root", self.workdir(ctx) / "cache"))
            res = install_published_torch(entry, ctx, env, root, start=start,
                                          index_urls=None if triton is not None else self._config.get("wheel_index"))
            if triton is not None and not triton.cached:  # the pinned Triton was built for it: a build
                res.reason = f"pinned Triton: {triton.reason}; {res.reason}"
                res.cached = False
            return res
        triton_cached = triton is None or triton.cached
        try:  # the submodules at this commit's, from local mirrors (a stale third_party breaks builds)
            subs = update_submodules(ctx.worktree, self.workdir(ctx) / MIRRORS, env=base_build_env())
        except SubmoduleError as exc:
            return PrepareResult(Kind.INFRA, f"submodules: {exc}", seconds=time.monotonic() - start)
        ok, reason = ensure_build_requirements(env, ctx.worktree, ctx.log_dir / "install.log")
        if not ok:
            return PrepareResult(Kind.INFRA, f"build requirements: {reason}",
                                 seconds=time.monotonic() - start, log=ctx.log_dir / "install.log")
        base = base_build_env()
        base.update(ctx.env)
        wb = build_torch_wheel(
            ctx.worktree, commit, cache=self.cache(ctx), log=ctx.log_dir / "build.log",
            repo_id=self.repo_id(ctx.worktree), use=self.use, python=str(env.python),
            python_abi=env.python_abi(), debug=self.triton_config.debug,
            max_jobs=self.triton_config.max_jobs or default_max_jobs(ctx.workers),
            base_env=base, timeout=self.build_timeout,
            runner=self.runner(ctx, ctx.worktree), pip=env.pip_command(), sandboxed=self.sandboxed(ctx),
        )
        cached = wb.cached and triton_cached
        if wb.kind is not Kind.PASS or wb.wheel is None:
            return PrepareResult(wb.kind, wb.reason, cached=cached, seconds=time.monotonic() - start, log=wb.log)
        try:
            ok, reason = env.install_wheel(wb.wheel, log=ctx.log_dir / "install.log",
                                           digest=self.cache(ctx).recorded_sha256(wb.wheel))
        except EnvError as exc:
            ok, reason = False, str(exc)
        if not ok:
            return PrepareResult(Kind.INFRA, f"install: {reason}", cached=cached,
                                 seconds=time.monotonic() - start, log=ctx.log_dir / "install.log")
        said = "; ".join(p for p in (wb.reason, subs.describe()) if p)
        return PrepareResult(Kind.PASS, said, cached=cached, seconds=time.monotonic() - start,
                             log=None if wb.cached else wb.log)
