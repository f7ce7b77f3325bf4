"""How LLVM is built, as command-line options: those of every command whose steps may build
llvm-project (`triton` with --llvm-dir or its descent, `llvm`, `pairs`, `hunt`)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import click

from tritonbisect.core.errors import InputError

F = TypeVar("F", bound=Callable[..., Any])

# the parameter names of llvm_options (hunt refuses them where its bisector builds no LLVM)
LLVM_OPTION_NAMES = frozenset({"llvm_assertions", "llvm_build_type", "llvm_targets", "backends", "compiler"})


def llvm_options(f: F) -> F:
    """How LLVM is built where a recipe builds it (descent, llvm, pairs, --llvm-dir)."""
    for option in reversed(
        [
            click.option("--llvm-assertions/--no-llvm-assertions", default=True, show_default=True,
                         help="-DLLVM_ENABLE_ASSERTIONS (on, as Triton's own LLVM builds)."),
            click.option("--llvm-build-type", default="Release", show_default=True, help="CMAKE_BUILD_TYPE of LLVM builds."),
            click.option("--llvm-targets", metavar="T1;T2", default=None,
                         help="LLVM_TARGETS_TO_BUILD (default host;NVPTX;AMDGPU: what real Triton links)."),
            click.option("--backends", metavar="B1,B2", default=None,
                         help="Triton backends to build LLVM for instead of --llvm-targets (nvidia, amd): "
                         "nvidia,amd gives host;NVPTX;AMDGPU."),
            click.option("--compiler", type=click.Choice(["gcc", "clang"]), default="gcc", show_default=True, help="Compiler for LLVM builds (gcc works where conda's clang++ does not)."),
        ]
    ):
        f = option(f)
    return f


def llvm_config_from_options(kwargs: dict[str, Any]) -> dict[str, Any]:
    """The LLVM build config (LLVMConfig's fields) of llvm_options' values, validated."""
    from tritonbisect.builds.llvm_build import DEFAULT_TARGETS, targets_for_backends

    if kwargs.get("llvm_targets") and kwargs.get("backends"):
        raise InputError("--llvm-targets and --backends both choose LLVM's targets; give one")
    if kwargs.get("backends"):
        names = [b.strip() for b in str(kwargs["backends"]).split(",") if b.strip()]
        targets = list(targets_for_backends(names))
    elif kwargs.get("llvm_targets"):
        targets = [t.strip() for t in str(kwargs["llvm_targets"]).replace(",", ";").split(";") if t.strip()]
        if not targets:
            raise InputError("--llvm-targets is empty: give e.g. 'host;NVPTX;AMDGPU'")
    else:
        targets = list(DEFAULT_TARGETS)
    return {
        "build_type": kwargs.get("llvm_build_type") or "Release",
        "assertions": kwargs.get("llvm_assertions", True) is not False,
        "targets": targets,
        "compiler": kwargs.get("compiler") or "gcc",
    }
