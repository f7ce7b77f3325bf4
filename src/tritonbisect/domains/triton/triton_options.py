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
    )
