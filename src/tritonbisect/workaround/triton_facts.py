"""Ask a Triton under test what it lets a user switch (facts_main.py, run by its own Python)."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Mapping
from pathlib import Path

from tritonbisect.core.errors import InputError
from tritonbisect.workaround.changes import DOCUMENTED_SWITCHES, Facts

PROBE = Path(__file__).with_name("facts_main.py")


def probe(python: str, env: Mapping[str, str] | None = None, *, role: str = "bad") -> Facts:
    """The Facts of the Triton `python` imports; InputError (one line) when it does not import."""
    try:
        proc = subprocess.run([python, str(PROBE), *DOCUMENTED_SWITCHES], capture_output=True, text=True,
                              timeout=300, env=dict(env) if env is not None else None)  # fmt: skip
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise InputError(f"--{role}-python {python}: cannot run it ({exc}); give the python of an environment "
                         "with that Triton") from None
    line = next((text for text in reversed(proc.stdout.splitlines()) if text.startswith("{")), "")
    if proc.returncode != 0 or not line:
        last = (proc.stderr.strip().splitlines() or ["no output"])[-1][:300]
        raise InputError(f"--{role}-python {python}: its triton does not import ({last}); give the python of an "
                         "environment with a working Triton")
    data = json.loads(line)
    return Facts(version=str(data.get("triton_version") or "?"), fingerprint=str(data.get("fingerprint") or ""),
                 knobs=dict(data.get("knobs") or {}), cache_invalidating=data.get("cache_invalidating"),
                 llvm_flags=list(data.get("llvm_flags") or []), ptxas=dict(data.get("ptxas") or {}))
