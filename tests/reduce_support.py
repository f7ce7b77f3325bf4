"""Shared by the reduce tests: a runtime oracle of reduce_programs/several_things.py, traced
with the running Python's Triton under TRITON_INTERPRET=1."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
PROGRAM = HERE / "reduce_programs" / "several_things.py"
NEGATE = HERE / "reduce_programs" / "negate.py"
ROW_REDUCTIONS = HERE / "reduce_programs" / "row_reductions.py"


def interpret_env() -> dict[str, str]:
    return {**os.environ, "TRITON_INTERPRET": "1"}


def cli(*args: str, timeout: float = 900) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "tritonbisect.cli", *args], capture_output=True, text=True,
                          env=interpret_env(), timeout=timeout)  # fmt: skip


def traced_oracle(root: Path, program: Path = PROGRAM, kernel: str = "several_things", *repro_args: str) -> Path:
    """root/oracle: the oracle of the one launch of `kernel` in `program`."""
    root.mkdir(parents=True, exist_ok=True)
    shutil.copy(program, root / "app.py")
    proc = subprocess.run([sys.executable, "-m", "tritonbisect.cli", "trace", "--out", str(root / "trace"), "--",
                           sys.executable, str(root / "app.py")], capture_output=True, text=True,
                          env=interpret_env(), cwd=root, timeout=300)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    proc = cli("repro", str(root / "trace"), "--kernel", kernel, "--out", str(root / "oracle"), *repro_args)
    assert proc.returncode == 0, proc.stderr
    return root / "oracle"
