"""Building llvm-project (MLIR + LLVM) at a commit, cached by (commit, config, toolchain).

    cmake -G Ninja -S <src>/llvm -B <build_dir> -DLLVM_ENABLE_PROJECTS=<projects>
          -DLLVM_TARGETS_TO_BUILD=<targets> -DCMAKE_BUILD_TYPE=<type>
          -DLLVM_ENABLE_ASSERTIONS=ON|OFF [-DCMAKE_{C,CXX}_COMPILER_LAUNCHER=ccache]
          -DCMAKE_C_COMPILER=gcc -DCMAKE_CXX_COMPILER=g++
    ninja -C <build_dir> install      (into a fresh staging prefix, then moved into the cache)

The build directory is the worker's own and is kept between steps, so a step recompiles only
what changed since the worker's previous commit (and ccache serves files seen before). The
configure-time install prefix never changes (changing it would rebuild everything that
includes llvm/Config); each step installs into a fresh prefix with `cmake --install
--prefix`, so no file of an earlier commit leaks into the artifact.

The defaults are what real Triton links against, as its own LLVM scripts build it: the
host's target plus NVPTX and AMDGPU (Triton links LLVMNVPTXCodeGen, LLVMAMDGPUCodeGen and
LLVMAMDGPUAsmParser), mlir and lld (the AMD backend's find_package(LLD)), assertions on.
"""

from __future__ import annotations

import json
import os
import shutil
import time
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TypeVar

from tritonbisect.builds.build_process import ProcResult, run_logged, with_writable
from tritonbisect.builds.cache import ArtifactCache, sandbox_mark
from tritonbisect.builds.failures import classify_build_log
from tritonbisect.builds.store import ArtifactStore
from tritonbisect.builds.toolchain import COMPILERS, compiler_id, missing_tools, which
from tritonbisect.core.outcome import Kind

T = TypeVar("T")

RECIPE = "llvm"
_STAMP = ".tritonbisect-config.json"


DEFAULT_TARGETS = ("host", "NVPTX", "AMDGPU")
DEFAULT_PROJECTS = ("mlir", "lld")


@dataclass(frozen=True)
class LLVMConfig:
    build_type: str = "Release"
    assertions: bool = True
    targets: tuple[str, ...] = DEFAULT_TARGETS
    compiler: str = "gcc"
    ccache: bool = True
    projects: tuple[str, ...] = DEFAULT_PROJECTS

    def __post_init__(self) -> None:
        if self.compiler not in COMPILERS:
            raise ValueError(f"unknown compiler {self.compiler!r}; choose gcc or clang")
        object.__setattr__(self, "targets", _names(self.targets))
        object.__setattr__(self, "projects", _names(self.projects))
        if not self.targets:
            raise ValueError("no LLVM targets given; e.g. host;NVPTX;AMDGPU")

    def key_config(self) -> dict:
        """What determines the artifact (ccache does not)."""
        return {
            "build_type": self.build_type,
            "assertions": self.assertions,
            "targets": list(self.targets),
            "compiler": self.compiler,
            "projects": ";".join(self.projects),
        }

    def to_dict(self) -> dict:
        d = asdict(self)
        d["targets"] = list(self.targets)
        return d

    @classmethod
    def from_dict(cls, data: Mapping | None) -> LLVMConfig:
        data = dict(data or {})
        fields = ("build_type", "assertions", "targets", "compiler", "ccache", "projects")
        known = {k: data[k] for k in fields if data.get(k) is not None}
        if data.get("backends") and "targets" not in known:
            known["targets"] = targets_for_backends(_names(data["backends"]))
        return cls(**known)


def _names(value) -> tuple[str, ...]:
    """'a;b', 'a,b' or a sequence → ('a', 'b')."""
    items = value.replace(",", ";").split(";") if isinstance(value, str) else list(value)
    return tuple(str(v).strip() for v in items if str(v).strip())


@dataclass
class LLVMBuild:
    kind: Kind
    reason: str
    prefix: Path | None
    cached: bool
    seconds: float
    log: Path


BACKEND_TARGETS = {"nvidia": "NVPTX", "amd": "AMDGPU", "cpu": "host", "x86": "X86", "aarch64": "AArch64"}


def targets_for_backends(backends: list[str] | tuple[str, ...]) -> tuple[str, ...]:
    """LLVM targets for Triton backends: nvidia → NVPTX, amd → AMDGPU; the host ("host", as
    LLVM spells the machine's own target) is always in."""
    targets = ["host"]
    for b in backends:
        t = BACKEND_TARGETS.get(b.lower(), b)
        if t not in targets:
            targets.append(t)
    return tuple(targets)


def llvm_env(prefix: Path) -> dict[str, str]:
    """What Triton's setup.py reads to build against a custom LLVM."""
    prefix = Path(prefix)
    return {
        "LLVM_SYSPATH": str(prefix),
        "LLVM_INCLUDE_DIRS": str(prefix / "include"),
        "LLVM_LIBRARY_DIR": str(prefix / "lib"),
    }


def llvm_cache_key(repo_id: str, commit: str, config: LLVMConfig, env: Mapping[str, str] | None = None, *,
                   sandboxed: bool = False) -> str:
    cxx = COMPILERS[config.compiler][1]
    return ArtifactCache.key(repo_id, commit, RECIPE, {**config.key_config(), **sandbox_mark(sandboxed)}, "none",
                             compiler_id(cxx, env))


def cmake_args(source: Path, build_dir: Path, config: LLVMConfig, *, ccache: bool) -> list[str]:
    cc, cxx = COMPILERS[config.compiler]
    args = [
        "cmake", "-G", "Ninja", "-S", str(Path(source) / "llvm"), "-B", str(build_dir),
        f"-DCMAKE_INSTALL_PREFIX={Path(build_dir) / 'default-prefix'}",
        f"-DLLVM_ENABLE_PROJECTS={';'.join(config.projects)}",
        f"-DLLVM_TARGETS_TO_BUILD={';'.join(config.targets)}",
        f"-DCMAKE_BUILD_TYPE={config.build_type}",
        f"-DLLVM_ENABLE_ASSERTIONS={'ON' if config.assertions else 'OFF'}",
        f"-DCMAKE_C_COMPILER={cc}",
        f"-DCMAKE_CXX_COMPILER={cxx}",
    ]
    if ccache:
        args += ["-DCMAKE_C_COMPILER_LAUNCHER=ccache", "-DCMAKE_CXX_COMPILER_LAUNCHER=ccache"]
    return args


def build_llvm(
    source: Path,
    commit: str,
    *,
    cache: ArtifactStore,
    config: LLVMConfig,
    build_dir: Path,
    log: Path,
    repo_id: str,
    env: Mapping[str, str] | None = None,
    timeout: float | None = None,
    runner=None,
    jobs: int | None = None,
    sandboxed: bool = False,
) -> LLVMBuild:
    """Build LLVM at `commit` (source: a worktree already at it) or take it from the cache.

    Cache hit: no process runs and no log is written (cached=True, seconds=0). A recorded
    failure is returned as such (cached=True) without building. An LLVM build failure is
    BUILD_FAILED (recorded); a machine problem (missing cmake/ninja/compiler, disk full,
    OOM-killed compiler) is INFRA (not recorded: it is retried).
    `runner` is the process runner (default: tritonbisect.builds.build_process.run_logged), any
    callable with its signature (the engine passes one that honours step cancellation).
    `jobs`: ninja -j (the machine's share of this build when workers build at once).
    `sandboxed`: `runner` is the sandbox's (the key says so: cache.sandbox_mark).
    """
    start = time.monotonic()
    source = Path(source)
    build_dir = Path(build_dir)
    log = Path(log)
    env = dict(os.environ if env is None else env)
    key = llvm_cache_key(repo_id, commit, config, env, sandboxed=sandboxed)
    cached = cached_llvm(cache, key, commit, log)
    if cached is not None:
        return cached

    cc, cxx = COMPILERS[config.compiler]
    missing = missing_tools(["cmake", "ninja", cc, cxx], env)
    if missing:
        log.parent.mkdir(parents=True, exist_ok=True)
        log.write_text(f"missing tools on PATH: {', '.join(missing)}\n", encoding="utf-8")
        return LLVMBuild(
            Kind.INFRA, f"missing tool: {', '.join(missing)} not found on PATH", None, False,
            time.monotonic() - start, log,
        )
    if not (source / "llvm" / "CMakeLists.txt").is_file():
        log.parent.mkdir(parents=True, exist_ok=True)
        log.write_text(f"{source}/llvm/CMakeLists.txt not found\n", encoding="utf-8")
        return _failed(cache, key, commit, Kind.BUILD_FAILED,
                       f"not an llvm-project tree at {commit[:12]}: llvm/CMakeLists.txt missing",
                       log, start)

    use_ccache = config.ccache and which("ccache", env) is not None
    if use_ccache:
        env.setdefault("CCACHE_BASEDIR", str(_common_parent(source, build_dir)))
        env.setdefault("CCACHE_NOHASHDIR", "true")
    _reset_if_config_changed(build_dir, source, config, use_ccache)

    stage = cache.staging_dir(prefix=f"llvm-{commit[:12]}-")
    run = with_writable(runner or run_logged, stage)
    prefix = stage / "prefix"
    try:
        steps = [
            (cmake_args(source, build_dir, config, ccache=use_ccache), "configure"),
            (["ninja", "-C", str(build_dir), *(["-j", str(jobs)] if jobs else [])], "build"),
            (["cmake", "--install", str(build_dir), "--prefix", str(prefix)], "install"),
        ]
        log.parent.mkdir(parents=True, exist_ok=True)
        log.write_bytes(b"")
        for i, (cmd, what) in enumerate(steps):
            remaining = None if timeout is None else max(1.0, timeout - (time.monotonic() - start))
            res: ProcResult = run_appending(run, cmd, source, env, log, remaining)
            if getattr(res, "cancelled", False):
                return LLVMBuild(Kind.INFRA, "cancelled", None, False, time.monotonic() - start, log)
            cls = classify_build_log(res.returncode, log, timed_out=res.timed_out)
            if cls.kind is not Kind.PASS:
                if i == 0 and cls.kind is Kind.BUILD_FAILED:
                    # a stale build dir can break configure: retry once from scratch
                    shutil.rmtree(build_dir, ignore_errors=True)
                    res = run_appending(run, cmd, source, env, log, remaining)
                    cls = classify_build_log(res.returncode, log, timed_out=res.timed_out)
                    if cls.kind is Kind.PASS:
                        _write_stamp(build_dir, source, config, use_ccache)
                        continue
                return _failed(cache, key, commit, cls.kind, f"LLVM {what}: {cls.reason}", log, start)
            if i == 0:
                _write_stamp(build_dir, source, config, use_ccache)
        stored = cache.put(
            key, prefix,
            {"commit": commit, "recipe": RECIPE, "repo": repo_id, "config": config.key_config(),
             "toolchain": compiler_id(cxx, env), **sandbox_mark(sandboxed)},
            move=True,
        )
        return LLVMBuild(Kind.PASS, "LLVM built", stored, False, time.monotonic() - start, log)
    finally:
        shutil.rmtree(stage, ignore_errors=True)


def cached_llvm(cache: ArtifactStore, key: str, commit: str, log: Path) -> LLVMBuild | None:
    """The LLVM of `key` from the cache (or its recorded failure); None when it must be
    built. Callers that need a source checkout only to build ask this first."""
    return cached_build(cache, key, commit, log, LLVMBuild, name="LLVM",
                        hit_reason="LLVM taken from the cache")


def cached_build(cache: ArtifactStore, key: str, commit: str, log: Path, result: Callable[..., T],
                 *, name: str, hit_reason: str) -> T | None:
    """The cached artifact of `key` or its recorded failure, as `result(kind, reason, artifact,
    cached, seconds, log)`; None when it has to be built. Shared by the LLVM, Triton and
    PyTorch builds."""
    hit = cache.get(key)
    if hit is not None:
        return result(Kind.PASS, hit_reason, hit, True, 0.0, log)
    failed = cache.failure(key)
    if failed is not None:
        return result(Kind(failed.kind), f"{name} {commit[:12]} failed to build before: {failed.reason}",
                      None, True, 0.0, failed.log or log)
    return None


def _failed(cache: ArtifactStore, key: str, commit: str, kind: Kind, reason: str, log: Path,
            start: float) -> LLVMBuild:
    if kind is Kind.BUILD_FAILED:
        cache.record_failure(key, kind.value, reason, log, commit=commit, recipe=RECIPE)
    return LLVMBuild(kind, reason, None, False, time.monotonic() - start, log)


def run_appending(run, cmd, cwd: Path, env: Mapping[str, str], log: Path, timeout: float | None):
    """Run one build command, appending its output to `log` (runners truncate their log)."""
    part = log.with_name(log.name + ".part")
    try:
        res = run(cmd, cwd=cwd, env=env, log=part, timeout=timeout)
    finally:
        if part.exists():
            with open(log, "ab") as out, open(part, "rb") as src:
                shutil.copyfileobj(src, out)
            part.unlink()
    res.log = log
    return res


def _common_parent(a: Path, b: Path) -> Path:
    try:
        return Path(os.path.commonpath([str(Path(a).absolute()), str(Path(b).absolute())]))
    except ValueError:
        return Path("/")


def _stamp(source: Path, config: LLVMConfig, use_ccache: bool) -> dict:
    return {"source": str(Path(source).absolute()), "config": config.key_config(), "ccache": use_ccache}


def _reset_if_config_changed(build_dir: Path, source: Path, config: LLVMConfig, use_ccache: bool) -> None:
    """A build dir configured for another source tree, compiler or config is wiped: CMake
    refuses a changed compiler in an existing cache."""
    stamp = build_dir / _STAMP
    if not build_dir.exists():
        return
    try:
        old = json.loads(stamp.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        old = None
    if old != _stamp(source, config, use_ccache):
        shutil.rmtree(build_dir, ignore_errors=True)


def _write_stamp(build_dir: Path, source: Path, config: LLVMConfig, use_ccache: bool) -> None:
    build_dir.mkdir(parents=True, exist_ok=True)
    (build_dir / _STAMP).write_text(json.dumps(_stamp(source, config, use_ccache)), encoding="utf-8")
