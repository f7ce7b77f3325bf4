"""Turn `--repro TRACE --kernel K [--launch-id I]` into the TestSpec of a bisect step.

Contract used by `tritonbisect run/triton/llvm`: `repro_test_spec(...)` generates the oracle
folder under `out_dir` and returns a TestSpec whose `record_command` records the golden at
the good endpoint and whose `command` compares every later step against it.

Both commands run `python` from PATH (the target environment's, first on PATH) and write the
structured result to $TRITONBISECT_RESULT, which the engine's classifier reads:
pass | mismatch | compile_error | runtime_error | env_unusable | timeout.
"""

from __future__ import annotations

import shlex
from pathlib import Path

from tritonbisect.builds.recipes import TestSpec
from tritonbisect.oracles.runtime import SCRIPT_NAME, generate_oracle

GOLDEN_NAME = "golden.pt"


def oracle_commands(out_dir: Path, *, timeout: float | None = None) -> TestSpec:
    """The record/compare commands of an oracle folder already generated."""
    out = Path(out_dir).resolve()
    script = shlex.quote(str(out / SCRIPT_NAME))
    golden = shlex.quote(str(out / GOLDEN_NAME))
    extra = ""
    if timeout:
        # leave the engine's own timeout room to see the oracle's structured "timeout" result
        inner = max(1.0, min(timeout - 5.0, timeout * 0.95))
        extra = f" --timeout {inner:g}"
    return TestSpec(
        command=f"python {script} --golden {golden}{extra}",
        record_command=f"python {script} --record-golden {golden}{extra}",
    )


def repro_test_spec(
    trace: Path, kernel: str, launch_id: int | None, out_dir: Path, *, timeout: float | None = None
) -> TestSpec:
    generate_oracle(trace, kernel, out_dir, launch_id=launch_id, timeout=timeout)
    return oracle_commands(out_dir, timeout=timeout)
