"""Triton at a commit → a wheel (cached) → installed into the target environment → tested.

    <python> -m pip wheel --no-build-isolation --no-deps -w <staging> <src>/python   (older
                                                  layouts; <src> when setup.py is at the root)
    env: TRITON_BUILD_WITH_CCACHE=true and CCACHE_BASEDIR=<workdir> (hits across worktrees),
         TRITON_HOME=<workdir>/triton-home/<worker> whose downloads are links into the shared
         <workdir>/downloads (downloads.py: each download once, never deleted under a running
         build), MAX_JOBS (default: the CPUs divided among the workers), DEBUG=1 with
         --debug, TRITON_BUILD_WITH_CLANG_LLD=true with --clang-lld, REL_WITH_DEB_INFO=1 or
         TRITON_REL_BUILD_WITH_ASSERTS=1 with --triton-build-type, LLVM_SYSPATH...
    TRITON_OFFLINE_BUILD=1 (--env): no download; the stored prebuilt of the pin is given as
         LLVM_SYSPATH (a step without one is INFRA, with the fix).

The wheel is built by the target environment's own interpreter (the wheel's ABI must be the
one the tests run with), after making sure the source's build requirements are installed
there (builds run without isolation). Registered here: "triton" (bisect Triton: build the
commit's wheel, install it, test). Built on it: "llvm-triton" (llvm_triton_recipe.py) and
"torch" (torch_recipe.py); the per-worker venvs are in venv_pool.py, git helpers in gitutil.py.

Recipe config (JSON, saved in session.json; unknown keys are ignored):
  test          TestSpec.to_dict()                        (required)
  debug         bool: DEBUG=1 build with assertions
  max_jobs      int: MAX_JOBS for the build (default: CPUs // workers building at once)
  build_type    "" (setup.py's default), "RelWithDebInfo" or "TritonRelBuildWithAsserts"
  clang_lld     bool: TRITON_BUILD_WITH_CLANG_LLD=true (faster links)
  ccache        bool (default true)
  python        interpreter to make the target venv with, or the user's own (--python)
  venv          the user's own venv (--venv); default: a venv per worker under
                <workdir>/venvs, reused across sessions, Triton purged at every install
  build_timeout seconds for one build (default: none)
  cache_dir     artifact cache root (default: the session's --cache-dir, else <workdir>/cache)
  llvm_dir      an llvm-project checkout: build the LLVM each Triton commit pins
                (cmake/llvm-info.json or cmake/llvm-hash.txt) from it (cached) and build
                Triton against it
                (LLVM_SYSPATH); without it Triton's setup.py finds LLVM itself
  llvm          LLVMConfig fields (build_type, assertions, targets, compiler, ccache)
  backends      {"amd": {"dir": ROCm llvm-project checkout}}: each step's codegen library built
                from the commit's backend pin, loaded by the test (backend_libs.py)
  backend_llvm  "pinned" (default) or "core": the library built against the core LLVM
  test_env      variables for the test only (not the build): an A/B step's previous ptxas
  wheels        {commit: {filename, url, sha256, version}}: commits with a published nightly
                wheel (+git<sha>), installed instead of built (domains/wheels/nightlies.py)
"""

from __future__ import annotations

import dataclasses
import functools
import os
import re
import shutil
import subprocess
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tritonbisect.builds.build_process import (
    default_runner,
    plain_runner,
    sandboxed_runner,
    with_writable,
)
from tritonbisect.builds.cache import ArtifactCache, sandbox_mark
from tritonbisect.builds.downloads import (
    adopt_downloads,
    find_prebuilt,
    keep_only_shared,
    link_shared,
    store_dir,
    worker_home,
)
from tritonbisect.builds.env import EnvError, TargetEnv
from tritonbisect.builds.failures import classify_build_log
from tritonbisect.builds.gitutil import (
    GitFailure,
    PinMissing,
    base_build_env,
    checkout_worktree,
    resolve_commit,
)
from tritonbisect.builds.install_check import WheelUnreadable, startup_hooks
from tritonbisect.builds.llvm_build import (
    LLVMBuild,
    LLVMConfig,
    build_llvm,
    cached_build,
    cached_llvm,
    llvm_cache_key,
    llvm_env,
)
from tritonbisect.builds.recipes import (
    PrepareResult,
    StepContext,
    TestRun,
    TestSpec,
)
from tritonbisect.builds.store import ArtifactStore, open_cache
from tritonbisect.builds.target_test import run_test
from tritonbisect.builds.toolchain import compiler_id, which
from tritonbisect.builds.venv_pool import EnvPool, ensure_build_requirements, project_dir
from tritonbisect.core.history import root_identity
from tritonbisect.core.outcome import Kind
from tritonbisect.domains.triton.llvm_pin import PIN_FILES_TEXT, PinError, read_pin, tree_reader

RECIPE = "triton"

# --env variables that change what a build produces, so they are part of the wheel's key
_BUILD_ENV = re.compile(
    r"^(TRITON_BUILD_\w+|TRITON_APPEND_CMAKE_ARGS|TRITON_CODEGEN_BACKENDS|TRITON_\w+_PATH|"
    r"LLVM_\w+|CC|CXX|CFLAGS|CXXFLAGS|LDFLAGS|DEBUG|REL_WITH_DEB_INFO|TRITON_WHEEL_VERSION_SUFFIX|"
    r"TRITON_PLUGIN_DIRS|TRITON_WHEEL_NAME|TRITON_EXT_ENABLED|TRITON_STABLE_ABI|\w+_SYSPATH|"
    r"TRITON_OFFLINE_BUILD|TRITON_REL_BUILD_WITH_ASSERTS|TRITON_BUILD_WITH_O1)$"
)
BUILD_TYPES = {"": {}, "RelWithDebInfo": {"REL_WITH_DEB_INFO": "1"},
               "TritonRelBuildWithAsserts": {"TRITON_REL_BUILD_WITH_ASSERTS": "1"}}
_TRUE = ("1", "true", "on", "yes")


@dataclass(frozen=True)
class TritonConfig:
    debug: bool = False
    max_jobs: int | None = None
    ccache: bool = True
    build_type: str = ""
    clang_lld: bool = False

    def __post_init__(self) -> None:
        if self.build_type not in BUILD_TYPES:
            raise ValueError(f"unknown Triton build type {self.build_type!r}; choose one of "
                             f"{', '.join(repr(b) for b in BUILD_TYPES)}")

    def key_config(self) -> dict:
        # MAX_JOBS and ccache do not change the artifact; the build type and linker do
        key: dict[str, Any] = {"debug": self.debug}
        if self.build_type:
            key["build_type"] = self.build_type
        if self.clang_lld:
            key["clang_lld"] = True
        return key

    def env(self, workers: int) -> dict[str, str]:
        """The variables these settings give a build."""
        out = dict(BUILD_TYPES[self.build_type])
        out["MAX_JOBS"] = str(self.max_jobs or default_max_jobs(workers))
        if self.debug:
            out["DEBUG"] = "1"
        if self.clang_lld:
            out["TRITON_BUILD_WITH_CLANG_LLD"] = "true"
        return out


def default_max_jobs(workers: int, cpus: int | None = None) -> int:
    """The machine's CPUs divided among the builds running at once (Triton's setup.py would
    otherwise give each build twice the CPUs, times the number of workers)."""
    cpus = cpus or os.cpu_count() or 1
    return max(1, cpus // max(1, workers))


@dataclass
class WheelBuild:
    kind: Kind
    reason: str
    wheel: Path | None
    cached: bool
    seconds: float
    log: Path


def build_env_key(env: Mapping[str, str]) -> dict[str, str]:
    return {k: v for k, v in sorted(env.items()) if _BUILD_ENV.match(k)}


def build_triton_wheel(
    source: Path,
    commit: str,
    *,
    cache: ArtifactStore,
    config: TritonConfig,
    log: Path,
    repo_id: str,
    triton_home: Path,
    extra_env: Mapping[str, str] = {},  # noqa: B006
    extra_key: Mapping = {},  # noqa: B006
    python: str | Path | None = None,
    python_abi: str | None = None,
    base_env: Mapping[str, str] | None = None,
    timeout: float | None = None,
    runner: Callable | None = None,
    recipe: str = RECIPE,
    pip: list[str] | None = None,
    downloads: Path | None = None,
    workers: int = 1,
    ccache_base: Path | None = None,
    sandboxed: bool = False,
) -> WheelBuild:
    """Build the wheel of the Triton tree at `source` (a worktree at `commit`), or take it
    from the cache. Cache hit: nothing runs and no log is written (cached=True).
    `pip` is the pip command to use (default: `<python> -m pip`). `downloads`: the shared
    download store (downloads.py) that triton_home links into; `workers`: how many builds
    share the machine (MAX_JOBS); `ccache_base`: CCACHE_BASEDIR (a folder above every
    worktree). `sandboxed` (the runner is the sandbox's): the wheel's key says so
    (cache.sandbox_mark), and TRITON_HOME holds nothing but links into the download store,
    before the build and after it: what the build put there is never adopted nor kept."""
    import sys

    start = time.monotonic()
    log = Path(log)
    python = str(python or sys.executable)
    env = dict(os.environ if base_env is None else base_env)
    env.update(extra_env)
    abi = python_abi or _python_abi(python)
    key = ArtifactCache.key(
        repo_id, commit, recipe,
        {**config.key_config(), "extra": dict(extra_key), "env": build_env_key(env), **sandbox_mark(sandboxed)},
        abi, compiler_id(None, env),
    )
    cached = cached_build(cache, key, commit, log, WheelBuild, name="Triton",
                          hit_reason="wheel taken from the cache")
    if cached is not None:
        return cached

    proj = project_dir(Path(source))
    log.parent.mkdir(parents=True, exist_ok=True)
    if proj is None:
        log.write_text(f"no setup.py or pyproject.toml in {source} or {source}/python\n", encoding="utf-8")
        reason = f"no setup.py at {commit[:12]} (neither python/setup.py nor setup.py)"
        cache.record_failure(key, Kind.BUILD_FAILED.value, reason, log, commit=commit, recipe=recipe)
        return WheelBuild(Kind.BUILD_FAILED, reason, None, False, time.monotonic() - start, log)

    env["PYTHONNOUSERSITE"] = "1"
    env["PATH"] = f"{Path(python).parent}{os.pathsep}{env.get('PATH', os.defpath)}"
    if config.ccache and which("ccache", env):
        env["TRITON_BUILD_WITH_CCACHE"] = "true"
        env.setdefault("CCACHE_BASEDIR", str(ccache_base or Path(source).resolve().parent))
        env.setdefault("CCACHE_NOHASHDIR", "true")
    triton_home = Path(triton_home)
    triton_home.mkdir(parents=True, exist_ok=True)
    env["TRITON_HOME"] = str(triton_home)
    for name, value in config.env(workers).items():
        if name == "MAX_JOBS" and not config.max_jobs and env.get("MAX_JOBS"):
            continue  # the user's own --env MAX_JOBS
        env[name] = value
    if downloads is not None:
        if sandboxed:
            keep_only_shared(triton_home, downloads)
        link_shared(triton_home, downloads)
        offline = _offline_llvm(Path(source), env, downloads)
        if offline is not None:
            log.write_text(offline + "\n", encoding="utf-8")
            return WheelBuild(Kind.INFRA, offline, None, False, time.monotonic() - start, log)

    meta = {"commit": commit, "recipe": recipe, "repo": repo_id, "python_abi": abi,
            "config": config.key_config(), "extra": dict(extra_key), **sandbox_mark(sandboxed)}
    built = pip_wheel_to_cache(proj, commit, cache=cache, key=key, meta=meta, log=log, env=env,
                               pip=pip or [python, "-m", "pip"], runner=runner, timeout=timeout,
                               start=start, name="Triton", stage_prefix="wheel")
    if downloads is not None and sandboxed:
        keep_only_shared(triton_home, downloads)  # the sandbox has no network: nothing was downloaded
    elif downloads is not None:
        fetched = adopt_downloads(triton_home, downloads)
        if fetched:
            built.reason += f"; downloaded {', '.join(fetched)} (now shared)"
    return built


def _offline_llvm(source: Path, env: dict[str, str], downloads: Path) -> str | None:
    """With TRITON_OFFLINE_BUILD on and no LLVM given, point LLVM_SYSPATH at the stored
    prebuilt of the tree's pin; the reason it cannot (INFRA), or None."""
    if env.get("TRITON_OFFLINE_BUILD", "").strip().lower() not in _TRUE or env.get("LLVM_SYSPATH"):
        return None
    try:
        pin = read_pin(tree_reader(source))
    except PinError as exc:
        return f"offline build: {exc}"
    if pin is None:
        return None  # no pin: setup.py says what it needs
    suffix = "" if pin.build_number is None else f"-{pin.build_number}"
    found = find_prebuilt(downloads, f"llvm-{pin.hash[:8]}-", suffix)
    if found is None:
        return (f"offline build (TRITON_OFFLINE_BUILD): no prebuilt for {pin.describe()} in "
                f"{downloads}/llvm; build one step of this pin online first, or pass "
                "--env LLVM_SYSPATH=<an LLVM install>")
    env.update(llvm_env(found))
    return None


def pip_wheel_to_cache(proj: Path, commit: str, *, cache: ArtifactStore, key: str,
                       meta: Mapping[str, Any], log: Path, env: Mapping[str, str],
                       pip: list[str], runner: Callable | None, timeout: float | None,
                       start: float, name: str, stage_prefix: str) -> WheelBuild:
    """`pip wheel` the project at `proj` into the cache under `key` (Triton and PyTorch).

    A BUILD_FAILED is recorded in the cache; INFRA and a cancelled build are not (retried)."""
    stage = cache.staging_dir(prefix=f"{stage_prefix}-{commit[:12]}-")
    try:
        cmd = [*pip, "wheel", "--no-build-isolation", "--no-deps",
               "--disable-pip-version-check", "-w", str(stage), str(proj)]
        res = with_writable(runner or default_runner(), stage)(cmd, cwd=proj, env=env, log=log, timeout=timeout)
        seconds = time.monotonic() - start
        if getattr(res, "cancelled", False):
            return WheelBuild(Kind.INFRA, "cancelled", None, False, seconds, log)
        cls = classify_build_log(res.returncode, log, timed_out=res.timed_out)
        # only plain files: a build may leave a link there (to a file of yours)
        wheels = sorted(w for w in stage.glob("*.whl") if w.is_file() and not w.is_symlink())
        if cls.kind is Kind.PASS and not wheels:
            cls = type(cls)(Kind.BUILD_FAILED, "pip wheel produced no wheel")
        if cls.kind is not Kind.PASS:
            reason = f"{name} build: {cls.reason}"
            if cls.kind is Kind.BUILD_FAILED:
                cache.record_failure(key, cls.kind.value, reason, log, commit=commit,
                                     recipe=meta["recipe"])
            return WheelBuild(cls.kind, reason, None, False, seconds, log)
        stored = cache.put(key, wheels[0], meta, move=True)
        return WheelBuild(Kind.PASS, f"{name} wheel built", stored, False, time.monotonic() - start, log)
    finally:
        shutil.rmtree(stage, ignore_errors=True)


@functools.lru_cache(maxsize=16)
def _python_abi(python: str) -> str:
    out = subprocess.run(
        [python, "-c", "import sys, sysconfig; print(sys.implementation.cache_tag + '-' + sysconfig.get_platform())"],
        capture_output=True, text=True, timeout=120,
    )
    return out.stdout.strip().replace("_", "-") or "unknown"


# --- recipes ----------------------------------------------------------------------------


class TritonRecipe:
    """The "triton" recipe: the bisected repository is Triton.

    With `llvm_dir` in the config, the LLVM each Triton commit pins (llvmpin.read_pin) is
    built from that llvm-project checkout (cached by commit + config) and the wheel is built
    against it; without it, Triton's setup.py gets its LLVM as usual (download into
    TRITON_HOME, or LLVM_SYSPATH from --env)."""

    name = RECIPE
    caches_builds = True  # every wheel goes to the artifact cache

    def __init__(self, config: Mapping[str, Any]) -> None:
        self._config = dict(config)
        self.test_spec = TestSpec.from_dict(config["test"])
        self.triton_config = TritonConfig(
            debug=bool(config.get("debug", False)),
            max_jobs=config.get("max_jobs"),
            ccache=bool(config.get("ccache", True)),
            build_type=str(config.get("build_type") or ""),
            clang_lld=bool(config.get("clang_lld", False)),
        )
        self.build_timeout = config.get("build_timeout")
        self.llvm_dir = Path(config["llvm_dir"]) if config.get("llvm_dir") else None
        self.llvm_config = LLVMConfig.from_dict(config.get("llvm"))
        self._envs = EnvPool(config.get("venv"), config.get("python"))
        self._repo_ids: dict[str, str] = {}
        self._pins: dict[tuple[str, str], str] = {}
        # --amd-llvm-dir: {backend: {"dir": checkout}}; "pinned" or "core" (backend_libs.py)
        self.backends: dict[str, dict] = dict(config.get("backends") or {})
        self.backend_source = str(config.get("backend_llvm") or "pinned")
        self.backend_overrides: dict = {}  # a backend descent step's own LLVM
        self._test_env: dict[str, dict[str, str]] = {}  # per worker: the codegen libraries

    def config(self) -> dict[str, Any]:
        return dict(self._config)

    # shared helpers

    def workdir(self, ctx: StepContext) -> Path:
        return Path(ctx.workdir) if ctx.workdir else ctx.worktree.parent

    def worker_tag(self, ctx: StepContext) -> str:
        """Names this worker's private dirs (its worktree is locked to it by the engine)."""
        return f"{ctx.worktree.parent.name}-{ctx.worktree.name}"

    def cache(self, ctx: StepContext) -> ArtifactStore:
        """The recipe's own cache_dir (compat-builder's probes), else the session's
        --cache-dir, else <workdir>/cache."""
        return open_cache(self._config.get("cache_dir") or ctx.cache_dir, workdir=self.workdir(ctx))

    def target_env(self, ctx: StepContext) -> TargetEnv:
        return self._envs.get(ctx)

    def sandboxed(self, ctx: StepContext) -> bool:
        """Whether this step builds and tests in the sandbox (ctx.sandbox, or the config's)."""
        return bool(ctx.sandbox or self._config.get("sandbox"))

    def runner(self, ctx: StepContext, *writable: Path) -> Callable:
        """The step's process runner; sandboxed with ctx.sandbox (or the config's "sandbox")."""
        run = plain_runner(ctx)
        if not self.sandboxed(ctx):
            return run
        return sandboxed_runner(run, ctx, writable)

    def repo_id(self, repo: Path) -> str:
        """The repository's identity for cache keys, as `History.repo_id` gives it."""
        key = str(repo)
        if key not in self._repo_ids:
            self._repo_ids[key] = root_identity(repo, env=base_build_env()) or str(repo)
        return self._repo_ids[key]

    def build_wheel(self, source: Path, commit: str, ctx: StepContext, env: TargetEnv, *,
                    log: Path, extra_env: Mapping[str, str] = {},  # noqa: B006
                    extra_key: Mapping = {}) -> WheelBuild:  # noqa: B006
        base = base_build_env()
        base.update(ctx.env)
        home = worker_home(self.workdir(ctx), self.worker_tag(ctx))
        return build_triton_wheel(
            source, commit,
            cache=self.cache(ctx), config=self.triton_config, log=log,
            repo_id=self.repo_id(source),
            triton_home=home, sandboxed=self.sandboxed(ctx),
            extra_env=extra_env, extra_key=extra_key, python=env.python,
            python_abi=env.python_abi(), base_env=base, timeout=self.build_timeout,
            runner=self.runner(ctx, source, home), pip=env.pip_command(),
            downloads=store_dir(self.workdir(ctx)), workers=ctx.workers,
            ccache_base=self.workdir(ctx).resolve(),
        )

    def build_llvm_at(self, source: Path, llvm_commit: str, ctx: StepContext) -> LLVMBuild:
        """LLVM at llvm_commit (source: a worktree at it), in this worker's kept build dir."""
        return build_llvm(
            source, llvm_commit, cache=self.cache(ctx), config=self.llvm_config,
            build_dir=self.workdir(ctx) / "llvm-build" / self.worker_tag(ctx),
            log=ctx.log_dir / "llvm-build.log", repo_id=self.repo_id(source), sandboxed=self.sandboxed(ctx),
            env={**base_build_env(), **ctx.env}, timeout=self.build_timeout,
            runner=self.runner(ctx, source, self.workdir(ctx) / "llvm-build" / self.worker_tag(ctx)),
            jobs=default_max_jobs(ctx.workers) if ctx.workers > 1 else None,
        )

    def resolve_pin(self, repo: Path, pin: str, *, what: str) -> str:
        """resolve_commit, once per full-sha pin (consecutive commits mostly share a pin)."""
        key = (str(repo), pin)
        sha = self._pins.get(key)
        if sha is None:
            sha = resolve_commit(repo, pin, what=what)
            if re.fullmatch(r"[0-9a-f]{40}", pin):  # a name (branch, tag) may move: not kept
                self._pins[key] = sha
        return sha

    def pinned_llvm(self, tree: Path, ctx: StepContext) -> tuple[str, LLVMBuild]:
        """Build the LLVM the Triton tree pins, from llvm_dir. Raises GitFailure (INFRA).
        A cached LLVM is taken without checking llvm-project out (a checkout is seconds)."""
        assert self.llvm_dir is not None
        try:
            found = read_pin(tree_reader(tree))
        except PinError as exc:
            raise PinMissing(f"{exc}: cannot tell which LLVM to build") from None
        if found is None:
            raise PinMissing(f"no LLVM pin ({PIN_FILES_TEXT}): cannot tell which LLVM to build")
        pin = found.hash
        sha = self.resolve_pin(self.llvm_dir, pin,
                               what=f"LLVM commit {pin[:12]} (pinned in {found.file})")
        wt = (self.workdir(ctx) / "worktrees" / f"llvm-{self.repo_id(self.llvm_dir)[:12]}"
              / f"for-{self.worker_tag(ctx)}")
        if (wt / ".git").exists():
            # the key build_llvm_at(wt) uses (repo_id of the worktree, memoized per path)
            key = llvm_cache_key(self.repo_id(wt), sha, self.llvm_config,
                                 {**base_build_env(), **ctx.env}, sandboxed=self.sandboxed(ctx))
            hit = cached_llvm(self.cache(ctx), key, sha, ctx.log_dir / "llvm-build.log")
            if hit is not None:
                return sha, hit
        llvm_tree = checkout_worktree(self.llvm_dir, wt, sha)
        return sha, self.build_llvm_at(llvm_tree, sha, ctx)

    def install(self, env: TargetEnv, wheel: Path, commit: str, ctx: StepContext) -> tuple[bool, str]:
        """Install and verify; pip is skipped when the env already holds this very wheel
        (its digest comes from the cache entry, which the lookup just verified)."""
        if self.sandboxed(ctx):
            # the install and its checks run the environment's python outside the sandbox
            try:
                hooks = startup_hooks(wheel)
            except WheelUnreadable as exc:
                return False, str(exc)
            if hooks:
                return False, (f"the wheel would run code at every python start-up ({', '.join(hooks[:3])}); "
                               "a sandboxed build's wheel is not installed with one")
        try:
            return env.install_triton(wheel, commit, log=ctx.log_dir / "install.log",
                                      digest=self.cache(ctx).recorded_sha256(wheel))
        except EnvError as exc:
            return False, str(exc)

    def build_and_install(self, tree: Path, triton_commit: str, ctx: StepContext, *,
                          llvm_commit: str | None = None, llvm: LLVMBuild | None = None,
                          start: float | None = None, log_name: str = "build.log") -> PrepareResult:
        """Wheel of the Triton tree at triton_commit (against `llvm` when given; else the
        pinned LLVM when llvm_dir is set), installed into the worker's env and verified."""
        start = time.monotonic() if start is None else start
        ctx.log_dir.mkdir(parents=True, exist_ok=True)

        def result(kind: Kind, reason: str, cached: bool, log: Path | None) -> PrepareResult:
            return PrepareResult(kind, reason, cached=cached, seconds=time.monotonic() - start, log=log)

        try:
            env = self.target_env(ctx)
            if llvm is None and self.llvm_dir is not None:
                llvm_commit, llvm = self.pinned_llvm(tree, ctx)
        except PinMissing as exc:
            return result(Kind.BUILD_FAILED, str(exc), False, None)
        except (EnvError, GitFailure) as exc:
            return result(Kind.INFRA, str(exc), False, None)
        extra_env: dict[str, str] = {}
        if self.backends:  # no codegen library of setup.py's own: the test gets ours
            from tritonbisect.domains.triton.backend_libs import skip_bundling

            extra_env.update(skip_bundling(tree, self.backends))
        extra_key: dict[str, Any] = {}
        llvm_cached = True
        if llvm is not None:
            llvm_cached = llvm.cached
            if llvm.kind is not Kind.PASS or llvm.prefix is None:
                return result(llvm.kind, llvm.reason, llvm.cached, llvm.log)
            extra_env.update(llvm_env(llvm.prefix))
            extra_key = {"llvm": llvm_commit, "llvm_config": self.llvm_config.key_config()}
        install_log = ctx.log_dir / "install.log"
        # sandboxed: the tree may be untrusted, so its build requirements come as wheels only
        # (installing a wheel runs none of its code; building an sdist would, unsandboxed)
        ok, reason = ensure_build_requirements(env, tree, install_log,
                                               binary_only=self.sandboxed(ctx))
        if not ok:
            return result(Kind.INFRA, f"build requirements: {reason}", False, install_log)
        wb = self.build_wheel(tree, triton_commit, ctx, env, log=ctx.log_dir / log_name,
                              extra_env=extra_env, extra_key=extra_key)
        cached = wb.cached and llvm_cached
        if wb.kind is not Kind.PASS or wb.wheel is None:
            if llvm is not None:
                reason = f"Triton {triton_commit[:12]} against LLVM {str(llvm_commit)[:12]}: {wb.reason}"
            else:
                reason = wb.reason
            return result(wb.kind, reason, cached, wb.log)
        ok, how = self.install(env, wb.wheel, triton_commit, ctx)
        if not ok:
            return result(Kind.INFRA, f"install: {how}", cached, install_log)
        built = ([] if llvm_cached else ["llvm"]) + ([] if wb.cached else ["triton"])
        parts = []
        if llvm is not None:
            parts.append(f"LLVM {str(llvm_commit)[:12]} {'cached' if llvm.cached else 'built'}")
        parts += [wb.reason, how]
        log = wb.log if not wb.cached else (llvm.log if llvm is not None and not llvm.cached else None)
        if self.backends:  # the codegen libraries the test loads at run time
            from tritonbisect.domains.triton.backend_libs import prepare_backends

            libs = prepare_backends(self, tree, ctx, core_commit=llvm_commit, core=llvm,
                                    overrides=self.backend_overrides)
            if libs.kind is not Kind.PASS:
                return result(libs.kind, libs.reason, cached and not libs.built, libs.log)
            self._test_env[self.worker_tag(ctx)] = libs.env
            built += libs.built
            cached = cached and not libs.built
            parts += libs.notes
            log = log or libs.log
        done = result(Kind.PASS, "; ".join(parts), cached, log)
        done.built = tuple(built)
        return done

    def test_context(self, ctx: StepContext, worktree: Path) -> StepContext:
        """The step's context for a test in `worktree`, with the codegen libraries it loads
        and the config's `test_env` (an A/B step's previous toolchain)."""
        return dataclasses.replace(ctx, worktree=worktree,
                                   env={**ctx.env, **self._test_env.get(self.worker_tag(ctx), {}),
                                        **dict(self._config.get("test_env") or {})})

    # the Recipe protocol

    def prepare(self, commit: str, ctx: StepContext) -> PrepareResult:
        entry = (self._config.get("wheels") or {}).get(commit)
        if entry is not None:  # a published nightly of this very commit: an install, no build
            from tritonbisect.builds.published import install_published

            cache = self.cache(ctx)
            root = Path(getattr(cache, "root", self.workdir(ctx) / "cache"))
            return install_published(entry, commit, ctx, lambda: self.target_env(ctx), root)
        return self.build_and_install(ctx.worktree, commit, ctx)

    def test(self, commit: str, ctx: StepContext, *, record: bool = False) -> TestRun:
        return run_test(self.target_env(ctx), self.test_spec, commit, self.test_context(ctx, ctx.worktree),
                        record=record, runner=self.runner(ctx, ctx.worktree))


__all__ = [
    "EnvPool", "GitFailure", "PinMissing", "TritonConfig",
    "TritonRecipe", "WheelBuild", "base_build_env", "build_triton_wheel", "checkout_worktree",
    "ensure_build_requirements", "project_dir", "resolve_commit", "run_test",
]
