"""The Python a published wheel is installed for (--python, --venv) and the platform tags
it accepts: what `wheels` and `triton|torch --wheel-index` choose wheels by."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING

from tritonbisect.core.errors import InputError

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


def target_platform(python: str) -> Platform:
    """The wheel tags `python` accepts; InputError when it cannot be run."""
    from tritonbisect.builds.wheel_index import WheelIndexError, platform_of

    try:
        return platform_of(python)
    except WheelIndexError:
        raise InputError(f"cannot run the target python {python!r}; give --python PY or --venv DIR") from None
