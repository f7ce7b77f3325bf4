"""The backend codegen libraries a Triton step loads at run time (`--amd-llvm-dir DIR`).

A Triton commit whose AMD backend pins an LLVM of its own (cmake/amd-llvm-info.json) does
AMD code generation in a shared library built against that LLVM and dlopened at run time.
With the backend's LLVM checkout given, each step gets that library built from the commit's
own pin: the backend LLVM at the pinned commit (builds/llvm_build.py, cached by commit and options,
with the backend's targets: host and AMDGPU, and lld), then the library from the Triton tree
against it (llvm/codegen_lib.py, cached by its sources, that LLVM and the revision). The test
runs with TRITON_AMD_CODEGEN_PATH pointing at it. The wheel is built with the variable set
(to /dev/null) so setup.py neither downloads nor builds a library of its own, and the wheel
is the same whichever backend LLVM a step uses: a new backend LLVM needs no Triton rebuild.

`backend_llvm: core` builds the library against the step's core LLVM instead (the A/B that
tells a backend-LLVM regression from a Triton one). A backend descent step gives its own
LLVM (`Override`) in place of the tree's pin.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from tritonbisect.builds.codegen_lib import build_codegen, env_var
from tritonbisect.builds.gitutil import GitFailure, base_build_env, checkout_worktree
from tritonbisect.builds.llvm_build import (
    LLVMBuild,
    LLVMConfig,
    build_llvm,
    cached_llvm,
    llvm_cache_key,
    targets_for_backends,
)
from tritonbisect.builds.recipes import StepContext
from tritonbisect.core.outcome import Kind
from tritonbisect.domains.triton.llvm_pin import PinError, tree_reader
from tritonbisect.domains.triton.pin_set import info_file, read_pin_set

PINNED, CORE = "pinned", "core"
BACKEND_PROJECTS = ("lld",)  # the codegen library links LLD (HSACO linking moved into it)


@dataclass(frozen=True)
class Override:
    """The backend LLVM a descent step builds the library against, instead of the pin."""

    prefix: Path
    key: str
    revision: str


@dataclass
class BackendLibs:
    kind: Kind = Kind.PASS
    reason: str = ""
    env: dict[str, str] = field(default_factory=dict)  # the test's TRITON_<B>_CODEGEN_PATH
    built: list[str] = field(default_factory=list)  # "llvm-amd", "codegen-amd"
    notes: list[str] = field(default_factory=list)
    log: Path | None = None


def backend_config(core: LLVMConfig, backend: str) -> LLVMConfig:
    """How a backend's LLVM is built: the core options, the backend's own targets, lld."""
    return replace(core, targets=targets_for_backends([backend]), projects=BACKEND_PROJECTS)


def skip_bundling(tree: Path, backends: dict) -> dict[str, str]:
    """The wheel build's variables that stop setup.py fetching or building a codegen library
    of its own, for the backends this tree pins an LLVM for."""
    return {env_var(b): os.devnull for b in backends if (Path(tree) / info_file(b)).is_file()}


# `recipe` is the step's TritonRecipe (recipe.py imports this module: not named here)
def backend_llvm(recipe: Any, backend: str, repo: Path, commit: str, ctx: StepContext,
                 worktree: Path | None = None) -> tuple[LLVMBuild, str]:
    """The backend's LLVM at `commit` (from `repo`; in `worktree` when the step already has
    one at it), and its cache key. GitFailure when the commit is not in `repo`."""
    config = backend_config(recipe.llvm_config, backend)
    tag = recipe.worker_tag(ctx)
    env = {**base_build_env(), **ctx.env}
    wt = worktree or (recipe.workdir(ctx) / "worktrees" / f"llvm-{backend}-{recipe.repo_id(repo)[:12]}"
                      / f"for-{tag}")
    if worktree is None:
        commit = recipe.resolve_pin(repo, commit, what=f"{backend.upper()} LLVM commit {commit[:12]}")
        if (wt / ".git").exists():
            key = llvm_cache_key(recipe.repo_id(wt), commit, config, env, sandboxed=recipe.sandboxed(ctx))
            hit = cached_llvm(recipe.cache(ctx), key, commit, ctx.log_dir / f"llvm-{backend}-build.log")
            if hit is not None:
                return hit, key
        checkout_worktree(repo, wt, commit)
    key = llvm_cache_key(recipe.repo_id(wt), commit, config, env, sandboxed=recipe.sandboxed(ctx))
    build_dir = recipe.workdir(ctx) / "llvm-build" / f"{backend}-{tag}"
    built = build_llvm(wt, commit, cache=recipe.cache(ctx), config=config, build_dir=build_dir,
                       log=ctx.log_dir / f"llvm-{backend}-build.log", repo_id=recipe.repo_id(wt), env=env,
                       timeout=recipe.build_timeout, runner=recipe.runner(ctx, wt, build_dir),
                       sandboxed=recipe.sandboxed(ctx))
    return built, key


def prepare_backends(recipe: Any, tree: Path, ctx: StepContext, *, core_commit: str | None,
                     core: LLVMBuild | None, overrides: dict[str, Override]) -> BackendLibs:
    """Build (or take from the cache) each configured backend's codegen library for the Triton
    tree; the test's variables, or the failure."""
    out = BackendLibs()
    try:
        pins = read_pin_set(tree_reader(tree))
    except PinError as exc:
        return BackendLibs(Kind.BUILD_FAILED, f"{exc}: cannot tell which backend LLVM to build")
    for backend, spec in recipe.backends.items():
        pin = pins.get(backend) if pins is not None else None
        label = backend.upper()
        if backend in overrides:
            o = overrides[backend]
            prefix, key, revision, what = o.prefix, o.key, o.revision, f"{label} LLVM {o.revision[:12]}"
        elif pin is None:
            continue  # this commit's backend uses the core LLVM
        elif recipe.backend_source == CORE:
            if core is None or core.prefix is None or core_commit is None:
                return BackendLibs(Kind.INFRA, "--backend-llvm core builds the codegen library against "
                                               "the core LLVM: give --llvm-dir")
            prefix, key, revision = core.prefix, f"core-{core_commit}", f"{core_commit}-core"
            what = f"the core LLVM {core_commit[:12]} (in place of {pin.describe()})"
        else:
            try:
                llvm, key = backend_llvm(recipe, backend, Path(spec["dir"]), pin.commit, ctx)
            except GitFailure as exc:
                return BackendLibs(Kind.INFRA, str(exc))
            if llvm.kind is not Kind.PASS or llvm.prefix is None:
                return BackendLibs(llvm.kind, f"{label} LLVM {pin.commit[:12]}: {llvm.reason}", log=llvm.log)
            if not llvm.cached:
                out.built.append(f"llvm-{backend}")
            prefix, revision = llvm.prefix, pin.revision()
            what = f"{label} LLVM {pin.commit[:12]} {'cached' if llvm.cached else 'built'}"
        build_dir = recipe.workdir(ctx) / "codegen-build" / f"{backend}-{recipe.worker_tag(ctx)}"
        lib = build_codegen(tree, backend, llvm_prefix=prefix, llvm_key=key, revision=revision,
                            cache=recipe.cache(ctx), build_dir=build_dir, log=ctx.log_dir / f"codegen-{backend}.log",
                            repo_id=recipe.repo_id(tree), env={**base_build_env(), **ctx.env},
                            runner=recipe.runner(ctx, tree, build_dir), timeout=recipe.build_timeout,
                            sandboxed=recipe.sandboxed(ctx))
        library = lib.library(backend)
        if lib.kind is not Kind.PASS or library is None:
            return BackendLibs(lib.kind if lib.kind is not Kind.PASS else Kind.BUILD_FAILED,
                               f"against {what}: {lib.reason}", log=lib.log)
        if not lib.cached:
            out.built.append(f"codegen-{backend}")
            out.log = lib.log
        out.env[env_var(backend)] = str(library)
        out.notes.append(f"{what}; {lib.reason}")
    return out


__all__ = ["CORE", "PINNED", "BackendLibs", "Override", "backend_config", "backend_llvm", "prepare_backends",
           "skip_bundling"]
