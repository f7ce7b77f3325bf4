"""Pass-level narrowing against real Triton wheels (CPU compiles for sm90, no GPU).

  * the dump parser reads a real MLIR_ENABLE_DUMP=1 compile of this Python's Triton (the
    headers of newer MLIR carry the pass options: `Name: arg{opt=value}`);
  * (slow: venvs) the recorded TTIR of the H100 trace compiled by two releases whose TTGIR
    differs: narrowing names the pass where their IR parts ways.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from compile_support import needs_triton
from oracle_support import needs_traces, scenario
from tritonbisect.mlir.passes import parse_dumps
from tritonbisect.narrow.narrowing import DUMP_ENV, narrow_compiles, oracle_job
from tritonbisect.oracles.compile.standalone import tb_runner
from tritonbisect.traces.reader import load_trace

TTGIR = Path(__file__).resolve().parent / "data" / "ir" / "add_kernel.ttgir"
JOB = {"target": {"backend": "cuda", "arch": 90, "warp_size": 32}, "options": {"num_warps": 4}}


def _vadd_ttir(tmp_path: Path) -> Path:
    comp = next(c for c in load_trace(scenario("vadd") / "logs").compilations.values() if c.name == "add_kernel")
    path = tmp_path / "add_kernel.ttir"
    path.write_text(comp.ir["ttir"])
    return path


@needs_triton
def test_the_parser_reads_a_real_dump(tmp_path: Path) -> None:
    job = {**JOB, "what": {"kind": "ir", "file": str(TTGIR)}}
    res = tb_runner.compile_in_child(job, str(tmp_path / "w"), timeout=300, env={**os.environ, **DUMP_ENV}, keep=True)
    assert res.status == "pass", res.reason
    text = (tmp_path / "w" / "child.stderr").read_text()
    dumps = parse_dumps(text)
    assert len(dumps) == text.count("IR Dump Before") >= 10
    names = [d.name for d in dumps]
    assert "AllocateSharedMemoryNv" in names and "ConvertTritonGPUToLLVM" in names  # the llir pipeline of a TTGIR
    assert all(d.arg and d.op for d in dumps)
    assert all(d.ir.lstrip().startswith(("#", "module")) for d in dumps), [d.ir[:40] for d in dumps]


@pytest.mark.slow
@needs_traces
def test_two_releases_part_ways_at_a_named_pass(tmp_path: Path) -> None:
    from real_triton import triton_release_python

    job = {**JOB, "what": {"kind": "ir", "file": str(_vadd_ttir(tmp_path))}}
    env = {k: v for k, v in os.environ.items() if k != "TRITONBISECT_RESULT"}
    old = (str(triton_release_python("3.6.0")), env, tmp_path)
    new = (str(triton_release_python("3.9.0")), env, tmp_path)
    result, runs = narrow_compiles(job, old, new, tmp_path)
    assert [runs[r]["triton_version"] for r in ("parent", "culprit")] == ["3.6.0", "3.9.0"]
    first = result["first_difference"]
    assert first is not None, result
    # 3.9 replaced 3.6's CTA planning pass; the IR parts ways in the passes around it
    assert any("triton-nvidia-gpu-plan-cta" in x for x in first["parent_only"])
    assert any("triton-nvidia-gpu-assign-cga-layouts" in x for x in first["culprit_only"])
    assert first["pass"] in first["culprit_only"] + first["parent_only"]
    assert result["last_agreeing"].startswith("TritonGPUF32DotTC")
    assert "#blocked1" in first["input_diff"]


if __name__ == "__main__":  # pragma: no cover
    sys.exit(pytest.main([__file__, "-q"]))


@pytest.mark.slow
@needs_traces
def test_the_matmul_register_change_of_3_4_is_in_the_loop_scheduler(tmp_path: Path) -> None:
    """`wheels --good 3.3.1 --bad 3.9.0 --oracle compile --check codegen --codegen-threshold regs=0`
    on the H100 matmul names 3.4.0 (registers moved). Between 3.3.1 and 3.4.0 the IR parts ways
    where the new software-pipelining passes (latency assignment, loop schedule) replaced the
    warp-specialization ones, not in the frontend (its helper-name mangling changed, which does
    not count). By 3.6.0 tl.cdiv itself changed ((x + 31) // 32): the frontend differs first."""

    from oracle_support import cli
    from real_triton import triton_release_python

    folder = tmp_path / "oracle"
    proc = cli("repro", str(scenario("matmul")), "--kernel", "matmul_kernel", "--mode", "compile", "--out", str(folder))
    assert proc.returncode == 0, proc.stderr
    job = oracle_job(folder)
    env = {k: v for k, v in os.environ.items() if k != "TRITONBISECT_RESULT"}
    old = (str(triton_release_python("3.3.1")), env, tmp_path)
    result, _ = narrow_compiles(job, old, (str(triton_release_python("3.4.0")), env, tmp_path), tmp_path)
    first = result["first_difference"]
    assert first is not None and first["pass"].startswith("TritonGPUAssignLatencies"), first
    assert any("tritongpu-warp-spec" in x for x in first["parent_only"])
    assert result["last_agreeing"].startswith("TritonGPUCombineTensorSelectAndIf")
    result, _ = narrow_compiles(job, old, (str(triton_release_python("3.6.0")), env, tmp_path), tmp_path)
    first = result["first_difference"]
    assert first["pass"].startswith("(the frontend") and "arith.constant 31 : i32" in first["input_diff"]
