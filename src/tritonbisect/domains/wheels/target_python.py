"""The Python a published wheel is installed for (--python, --venv) and the platform tags
it accepts: what `wheels` and `triton|torch --wheel-index` choose wheels by."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING

from tritonbisect.core.errors import InputError
from tritonbisect.oracles.kinds import compiles

if TYPE_CHECKING:  # pragma: no cover
    from tritonbisect.builds.wheel_index import Platform


def target_python(python: str | None, venv: Path | None) -> str:
    """The interpreter of --python or --venv (this one without either), checked."""
    if python and venv:
        raise InputError("--python and --venv are mutually exclusive; give one")
    if venv is not None:
        if not (venv / "pyvenv.cfg").is_file():
            raise InputError(f"--venv {venv}: not a virtual environment (no pyvenv.cfg)")
        return str(venv / "bin" / "python")
    return python or sys.executable


def check_torch(repro: str | None, oracle: str, python: str | None, venv: Path | None) -> None:
    """--repro's runtime oracle runs the kernel on torch tensors: before anything is listed or
    installed, the environment the test will run in must have torch (InputError, one line)."""
    if not repro or compiles(oracle):
        return  # a test of the user's, or a compile/IR oracle (no torch)
    either = "--venv DIR of a virtual environment with your torch (its triton is replaced at each step)"
    if venv is None and python is None:
        raise InputError(f"--repro runs the kernel with torch, and the environment tritonbisect makes for the "
                         f"installs has none: give {either}, or --oracle compile (compiles only, no torch)")
    from tritonbisect.builds.env import EnvError, TargetEnv

    try:
        env = TargetEnv.existing(venv) if venv is not None else TargetEnv.from_python(str(python))
        own = (env.root / "pyvenv.cfg").is_file()
        missing = not own or env.torch_origin() == "no torch in it"
    except (EnvError, OSError):
        return  # target_platform says what is wrong with it
    if missing:
        given = f"--venv {venv}" if venv is not None else f"--python {python}"
        why = "has no torch" if own else "is not a virtual environment: the one tritonbisect makes with it has no torch"
        raise InputError(f"--repro runs the kernel with torch, and {given} {why}: give {either}")


def target_platform(python: str) -> Platform:
    """The wheel tags `python` accepts; InputError when it cannot be run."""
    from tritonbisect.builds.wheel_index import WheelIndexError, platform_of

    try:
        return platform_of(python)
    except WheelIndexError:
        raise InputError(f"cannot run the target python {python!r}; give --python PY or --venv DIR") from None
