"""Turn `--repro TRACE --kernel K [--launch-id I]` into the TestSpec of a bisect step.

Contract used by `tritonbisect run/triton/llvm`: `repro_test_spec(...)` generates the oracle
folder under `out_dir` and returns a TestSpec whose `record_command` records the golden at
the good endpoint and whose `command` compares every later step against it.
"""

from __future__ import annotations

from pathlib import Path

from tritonbisect.build.recipes import TestSpec


def repro_test_spec(
    trace: Path, kernel: str, launch_id: int | None, out_dir: Path, *, timeout: float | None = None
) -> TestSpec:
    raise NotImplementedError("filled by the oracle owner")
