"""A backend's code generation library, built against the LLVM that backend pins.

Since late 2026 (triton PR #11485) Triton's AMD backend does code generation in a shared
library of its own (`triton/backends/amd/lib/...triton_amd_codegen...`), linked statically
against the LLVM cmake/amd-llvm-info.json pins and dlopened at run time;
TRITON_AMD_CODEGEN_PATH overrides which one is loaded. setup.py builds it (when no prebuilt
is published) as a CMake project of Triton's tree, configured with
`-DLLVM_DIR=<that LLVM>/lib/cmake/llvm -DTRITON_AMD_LLVM_REVISION=<llvm_hash>-<build_number>`.
The NVIDIA variant (#11484) is the same with NVIDIA in the names.

Here: the project is the folder under third_party/<backend>/ whose CMakeLists.txt reads
TRITON_<BACKEND>_LLVM_REVISION; it is configured like that against an LLVM install of ours,
built with ninja and installed into a staging prefix that goes into the artifact cache, keyed
by the project's own tree (its git tree hash: Triton commits that do not touch it share the
library), the LLVM's cache key and the revision. Since the library is loaded at run time, a
new one needs no Triton rebuild. An LLVM install that ships the library itself (lib/ holds
a *<backend>_codegen* shared library) is used as it is.
"""

from __future__ import annotations

import os
import shutil
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

from tritonbisect.builds.build_process import run_logged, with_writable
from tritonbisect.builds.cache import ArtifactCache, sandbox_mark
from tritonbisect.builds.failures import classify_build_log
from tritonbisect.builds.llvm_build import cached_build, run_appending
from tritonbisect.builds.store import ArtifactStore
from tritonbisect.builds.toolchain import compiler_id, missing_tools
from tritonbisect.core.gitrun import run_git
from tritonbisect.core.outcome import Kind
from tritonbisect.core.process import clean_env

RECIPE = "codegen"
ENV = {"amd": "TRITON_AMD_CODEGEN_PATH", "nvidia": "TRITON_NVIDIA_CODEGEN_PATH"}
_MAX_DEPTH = 4


@dataclass
class CodegenBuild:
    kind: Kind
    reason: str
    prefix: Path | None  # the installed prefix (lib/<library>)
    cached: bool
    seconds: float
    log: Path

    def library(self, backend: str) -> Path | None:
        return find_library(self.prefix, backend) if self.prefix else None


def revision_define(backend: str) -> str:
    return f"TRITON_{backend.upper()}_LLVM_REVISION"


def env_var(backend: str) -> str:
    return ENV.get(backend, f"TRITON_{backend.upper()}_CODEGEN_PATH")


def find_project(tree: Path, backend: str) -> Path | None:
    """The folder under third_party/<backend>/ whose CMakeLists.txt reads the revision define."""
    root = Path(tree) / "third_party" / backend
    if not root.is_dir():
        return None
    define = revision_define(backend)
    for dirpath, dirnames, filenames in os.walk(root):
        depth = len(Path(dirpath).relative_to(root).parts)
        dirnames[:] = sorted(d for d in dirnames if not d.startswith(".")) if depth < _MAX_DEPTH else []
        if "CMakeLists.txt" in filenames:
            path = Path(dirpath) / "CMakeLists.txt"
            if path.is_symlink():
                continue  # a tree may plant a link; read only its own files
            try:
                if define in path.read_text(encoding="utf-8", errors="replace"):
                    return Path(dirpath)
            except OSError:
                continue
    return None


def find_library(prefix: Path | None, backend: str) -> Path | None:
    """The codegen shared library under prefix/lib (or lib64): *<backend>_codegen*.so, as
    libtriton_amd_codegen.so."""
    if prefix is None:
        return None
    for lib in ("lib", "lib64"):
        folder = Path(prefix) / lib
        if folder.is_dir():
            for path in sorted(folder.iterdir()):
                name = path.name
                if f"{backend}_codegen" in name and (".so" in name or name.endswith(".dylib")):
                    return path
    return None


def _tree_hash(tree: Path, folder: Path) -> str | None:
    """The git tree hash of `folder` at the checkout's HEAD (None: not a git checkout)."""
    rel = folder.resolve().relative_to(Path(tree).resolve()).as_posix()
    proc = run_git(["rev-parse", f"HEAD:{rel}"], cwd=Path(tree), env=clean_env(), timeout=120)
    sha = proc.stdout.strip()
    return sha if proc.returncode == 0 and sha else None


def build_codegen(
    tree: Path,
    backend: str,
    *,
    llvm_prefix: Path,
    llvm_key: str,
    revision: str,
    cache: ArtifactStore,
    build_dir: Path,
    log: Path,
    repo_id: str,
    env: Mapping[str, str] | None = None,
    runner: Callable | None = None,
    timeout: float | None = None,
    sandboxed: bool = False,
) -> CodegenBuild:
    """The codegen library of the Triton checkout `tree` for `backend`, against the LLVM
    installed at llvm_prefix (its cache key llvm_key), or from the cache. `sandboxed`:
    `runner` is the sandbox's (the key says so: cache.sandbox_mark)."""
    start = time.monotonic()
    log = Path(log)
    shipped = find_library(llvm_prefix, backend)
    if shipped is not None:
        return CodegenBuild(Kind.PASS, f"the {backend.upper()} LLVM ships its codegen library", llvm_prefix,
                            True, 0.0, log)
    project = find_project(tree, backend)
    if project is None:
        log.parent.mkdir(parents=True, exist_ok=True)
        log.write_text(f"no CMake project reading {revision_define(backend)} under third_party/{backend}\n",
                       encoding="utf-8")
        return CodegenBuild(Kind.BUILD_FAILED, f"no {backend.upper()} codegen library project in this Triton "
                            f"(third_party/{backend}, reading {revision_define(backend)})", None, False,
                            time.monotonic() - start, log)
    env = dict(clean_env() if env is None else env)
    source = _tree_hash(tree, project) or str(project)
    key = ArtifactCache.key(repo_id, source, f"{RECIPE}-{backend}",
                            {"llvm": llvm_key, "revision": revision, **sandbox_mark(sandboxed)},
                            "none", compiler_id(None, env))
    hit = cached_build(cache, key, source, log, CodegenBuild, name=f"{backend.upper()} codegen library",
                       hit_reason="codegen library taken from the cache")
    if hit is not None:
        return hit
    missing = missing_tools(["cmake", "ninja"], env)
    if missing:
        log.parent.mkdir(parents=True, exist_ok=True)
        log.write_text(f"missing tools on PATH: {', '.join(missing)}\n", encoding="utf-8")
        return CodegenBuild(Kind.INFRA, f"missing tool: {', '.join(missing)} not found on PATH", None, False,
                            time.monotonic() - start, log)
    stage = cache.staging_dir(prefix=f"codegen-{backend}-")
    shutil.rmtree(build_dir, ignore_errors=True)  # a few files: always configured afresh
    try:
        steps = [
            ["cmake", "-G", "Ninja", "-S", str(project), "-B", str(build_dir), "-DCMAKE_BUILD_TYPE=Release",
             f"-DLLVM_DIR={Path(llvm_prefix) / 'lib' / 'cmake' / 'llvm'}",
             f"-D{revision_define(backend)}={revision}", f"-DCMAKE_INSTALL_PREFIX={stage / 'default'}"],
            ["ninja", "-C", str(build_dir)],
            ["cmake", "--install", str(build_dir), "--prefix", str(stage / "prefix")],
        ]
        log.parent.mkdir(parents=True, exist_ok=True)
        log.write_bytes(b"")
        run = with_writable(runner or run_logged, stage)
        for cmd in steps:
            remaining = None if timeout is None else max(1.0, timeout - (time.monotonic() - start))
            res = run_appending(run, cmd, project, env, log, remaining)
            if getattr(res, "cancelled", False):
                return CodegenBuild(Kind.INFRA, "cancelled", None, False, time.monotonic() - start, log)
            cls = classify_build_log(res.returncode, log, timed_out=res.timed_out)
            if cls.kind is not Kind.PASS:
                reason = f"{backend.upper()} codegen library: {cls.reason}"
                if cls.kind is Kind.BUILD_FAILED:
                    cache.record_failure(key, cls.kind.value, reason, log, commit=source,
                                         recipe=f"{RECIPE}-{backend}")
                return CodegenBuild(cls.kind, reason, None, False, time.monotonic() - start, log)
        if find_library(stage / "prefix", backend) is None:
            reason = f"{backend.upper()} codegen library: the build installed no *triton_{backend}_codegen* library"
            cache.record_failure(key, Kind.BUILD_FAILED.value, reason, log, commit=source,
                                 recipe=f"{RECIPE}-{backend}")
            return CodegenBuild(Kind.BUILD_FAILED, reason, None, False, time.monotonic() - start, log)
        stored = cache.put(key, stage / "prefix", {"commit": source, "recipe": f"{RECIPE}-{backend}",
                                                   "repo": repo_id, "llvm": llvm_key, "revision": revision},
                           move=True)
        return CodegenBuild(Kind.PASS, f"{backend.upper()} codegen library built", stored, False,
                            time.monotonic() - start, log)
    finally:
        shutil.rmtree(stage, ignore_errors=True)


__all__ = ["ENV", "CodegenBuild", "build_codegen", "env_var", "find_library", "find_project", "revision_define"]
