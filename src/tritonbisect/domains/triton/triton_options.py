"""How Triton is built, as command-line options: those of every command whose steps build
Triton into the target environment (`triton`, `llvm`, `pairs`, `torch`, `hunt`)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click

from tritonbisect.core.errors import InputError

if TYPE_CHECKING:  # pragma: no cover
    from tritonbisect.domains.triton.bisector import TritonBuildOptions

F = TypeVar("F", bound=Callable[..., Any])

_dir = click.Path(file_okay=False, path_type=Path)

# the parameter names of build_options (hunt refuses them where its bisector builds no Triton)
BUILD_OPTION_NAMES = frozenset({"python", "venv", "debug", "max_jobs", "triton_build_type", "clang_lld"})


def build_options(f: F) -> F:
    """Options of every recipe that builds Triton into the target environment."""
    for option in reversed(
        [
            click.option("--python", metavar="PY", help="Interpreter for the target venv, or the user's own env's python."),
            click.option("--venv", type=_dir, help="Use this existing virtual environment as the target (default: one per worker under the workdir)."),
            click.option("--debug", is_flag=True, help="DEBUG=1 Triton builds (assertions on)."),
            click.option("--max-jobs", type=click.IntRange(min=1), metavar="N",
                         help="MAX_JOBS for builds (default: the CPUs divided among the workers)."),
            click.option("--triton-build-type", type=click.Choice(["default", "RelWithDebInfo", "TritonRelBuildWithAsserts"]),
                         default="default", show_default=True,
                         help="Triton's CMake build type (REL_WITH_DEB_INFO=1 or TRITON_REL_BUILD_WITH_ASSERTS=1); "
                         "--debug gives Debug."),
            click.option("--clang-lld", is_flag=True, help="TRITON_BUILD_WITH_CLANG_LLD=true: build Triton with clang and link with lld (faster links)."),
        ]
    ):
        f = option(f)
    return f


BACKEND_OPTION_NAMES = frozenset({"amd_llvm_dir", "nvidia_llvm_dir", "backend_llvm"})


def backend_options(f: F) -> F:
    """The backends' own LLVMs (late 2026): `triton`, `llvm` and `pairs`."""
    for option in reversed(
        [
            click.option("--amd-llvm-dir", type=_dir, metavar="DIR",
                         help="ROCm's llvm-project checkout: each step's AMD codegen library is built from the "
                         "commit's cmake/amd-llvm-info.json pin (loaded at run time, TRITON_AMD_CODEGEN_PATH); "
                         "a culprit that bumps that pin is bisected in it."),
            click.option("--nvidia-llvm-dir", type=_dir, metavar="DIR",
                         help="The same for the NVIDIA backend's own LLVM (cmake/nvidia-llvm-info.json)."),
            click.option("--backend-llvm", type=click.Choice(["pinned", "core"]), default="pinned",
                         show_default=True,
                         help="core: at a culprit that moves a backend's LLVM pin, first test it once with the "
                         "backend's codegen library built from the core LLVM (tells a backend-LLVM regression "
                         "from a Triton one)."),
        ]
    ):
        f = option(f)
    return f


def backends_from_options(kwargs: dict[str, Any]) -> dict[str, dict[str, str]]:
    out = {}
    for name in ("amd", "nvidia"):
        value = kwargs.get(f"{name}_llvm_dir")
        if value is None:
            continue
        path = Path(value)
        if not path.is_dir():
            raise InputError(f"--{name}-llvm-dir {path}: no such directory")
        if not (path / ".git").exists():
            raise InputError(f"--{name}-llvm-dir {path}: not a git checkout (of the {name.upper()} backend's "
                             "llvm-project)")
        out[name] = {"dir": str(path.resolve())}
    return out


def build_from_options(kwargs: dict[str, Any]) -> TritonBuildOptions:
    """The validated TritonBuildOptions of build_options' values."""
    from tritonbisect.domains.triton.bisector import TritonBuildOptions

    if kwargs.get("python") and kwargs.get("venv"):
        raise InputError("--python and --venv are mutually exclusive; give one")
    venv = kwargs.get("venv")
    if venv is not None and not (Path(venv) / "pyvenv.cfg").is_file():
        raise InputError(f"--venv {venv}: not a virtual environment (no pyvenv.cfg)")
    return TritonBuildOptions(
        debug=bool(kwargs.get("debug")),
        max_jobs=kwargs.get("max_jobs"),
        build_type="" if kwargs.get("triton_build_type") in (None, "default") else kwargs["triton_build_type"],
        clang_lld=bool(kwargs.get("clang_lld")),
        python=kwargs.get("python"),
        venv=str(Path(venv).resolve()) if venv else None,
        backends=backends_from_options(kwargs),
        backend_llvm=str(kwargs.get("backend_llvm") or "pinned"),
    )
