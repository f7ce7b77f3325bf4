"""`narrow --time`: compile the kernel several times with the parent's and the culprit's
compiler, with MLIR's and LLVM's pass timings on, and name the part of the compile whose time
grew most (narrow/time_compare.py).

Each compile runs in its own fresh child process with a fresh TRITON_CACHE_DIR and
TRITON_ALWAYS_COMPILE=1 (the compile oracle's child, tb_runner), MLIR_ENABLE_TIMING=1 and
LLVM_ENABLE_TIMING=1; the sides take turns (parent, culprit, culprit, parent, ...), so that
a machine busy for a while slows both alike.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

from tritonbisect.core.errors import InputError
from tritonbisect.narrow.compilers import Environment
from tritonbisect.narrow.time_compare import compare_times
from tritonbisect.oracles.compile.standalone import tb_runner, tb_timing

TIME_ENV = {**tb_timing.TIMING_ENV, "TRITON_ALWAYS_COMPILE": "1"}
DEFAULT_SAMPLES = 5


def _timed_compile(job: dict[str, Any], env: Environment, work: Path, timeout: float, role: str) -> dict[str, Any]:
    python, environ, cwd = env
    res = tb_runner.compile_in_child(job, str(work), timeout=timeout, python=python, env={**environ, **TIME_ENV},
                                     keep=True, cwd=str(cwd))
    try:
        if not res.ok:
            raise InputError(f"the {role}'s compile ended {res.status} ({res.reason}): a compile that fails has no "
                             "time to compare")
        stderr = (work / "child.stderr").read_text(encoding="utf-8", errors="replace")
        timing = res.child.get("timing") or {}
        return {
            "breakdown": tb_timing.breakdown(timing, stderr),
            "totals": {"seconds": res.child.get("compile_seconds"), "cpu_seconds": res.child.get("compile_cpu_seconds"),
                       "stages": timing.get("stages") or []},
            "triton_version": res.triton_version,
        }
    finally:
        shutil.rmtree(work, ignore_errors=True)


def time_compiles(job: dict[str, Any], parent: Environment, culprit: Environment, scratch: Path, *,
                  samples: int = DEFAULT_SAMPLES, timeout: float = 600.0) -> dict[str, Any]:
    """`samples` timed compiles on each side, in turns; where the time grew (compare_times)."""
    if samples < 1:
        raise InputError("--samples must be at least 1")
    job = {**job, "timing": True}
    runs: dict[str, list[dict[str, Any]]] = {"parent": [], "culprit": []}
    envs = {"parent": parent, "culprit": culprit}
    for i in range(samples):
        for role in (("parent", "culprit") if i % 2 == 0 else ("culprit", "parent")):
            runs[role].append(_timed_compile(job, envs[role], scratch / f"{role}-time-{i}", timeout, role))
    result = compare_times([r["breakdown"] for r in runs["parent"]], [r["breakdown"] for r in runs["culprit"]],
                           parent_totals=[r["totals"] for r in runs["parent"]],
                           culprit_totals=[r["totals"] for r in runs["culprit"]])
    result["triton_versions"] = {role: runs[role][0]["triton_version"] for role in runs}
    return result
