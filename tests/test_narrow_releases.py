"""Narrowing between two real releases from the package index (slow: two venvs), on a
layernorm of our own compiled for sm90 on the CPU.

Triton 3.4.0's printer reuses value names in the two `tt.reduce` combiners; 3.5.1 names values
after the source. The IR first really differs where the TTGIR is lowered to the LLVM dialect,
and the pipelines differ by a moved pass (triton-nvidia-mma-lowering), a pass renamed with its
argument (allocate-shared-memory -> allocate-shared-memory-nv) and passes 3.5 added.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from compile_support import needs_triton
from real_triton import triton_release_python
from tritonbisect.mlir.normalise import drop_locations
from tritonbisect.narrow.narrowing import narrow_compiles, write_lit_test

pytestmark = [pytest.mark.slow, needs_triton]

KERNEL = '''import triton
import triton.language as tl


@triton.jit
def layernorm_kernel(x_ptr, w_ptr, b_ptr, y_ptr, n_cols, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * n_cols + cols, mask=mask, other=0.0).to(tl.float32)
    mean = tl.sum(x, axis=0) / n_cols
    xc = tl.where(mask, x - mean, 0.0)
    var = tl.sum(xc * xc, axis=0) / n_cols
    rstd = 1.0 / tl.sqrt(var + eps)
    w = tl.load(w_ptr + cols, mask=mask)
    b = tl.load(b_ptr + cols, mask=mask)
    tl.store(y_ptr + row * n_cols + cols, xc * rstd * w + b, mask=mask)
'''


def _job(path: Path) -> dict:
    ptr = {"kind": "pointer", "type": "*fp16", "divisible_16": True}
    params = [{"name": n, **ptr} for n in ("x_ptr", "w_ptr", "b_ptr", "y_ptr")] + [
        {"name": "n_cols", "kind": "int", "type": "i32", "divisible_16": True, "equal_to_1": False},
        {"name": "eps", "kind": "float", "type": "fp32"},
        {"name": "BLOCK", "kind": "constexpr", "value": 1024},
    ]
    return {"what": {"kind": "python", "file": str(path), "kernel": "layernorm_kernel", "params": params},
            "target": {"backend": "cuda", "arch": 90, "warp_size": 32}, "options": {"num_warps": 4}}


def test_layernorm_3_4_0_to_3_5_1_parts_ways_at_the_llvm_lowering(tmp_path: Path) -> None:
    kernel = tmp_path / "layernorm.py"
    kernel.write_text(KERNEL)
    env = {k: v for k, v in os.environ.items() if k != "TRITONBISECT_RESULT"}
    old = (str(triton_release_python("3.4.0")), env, tmp_path)
    new = (str(triton_release_python("3.5.1")), env, tmp_path)
    result, runs = narrow_compiles(_job(kernel), old, new, tmp_path, codegen=None)
    assert [runs[r]["triton_version"] for r in ("parent", "culprit")] == ["3.4.0", "3.5.1"]
    first = result["first_difference"]
    assert first is not None and first["pass"].startswith("ConvertTritonGPUToLLVM"), first
    assert first["note"] == "same input, different output"
    # everything before it agrees, printers aside (Canonicalizer included)
    assert result["last_agreeing"].startswith("TritonGPUGlobalScratchAllocationPass")
    assert result["moved"] == ["TritonNvidiaGPUMMALoweringPass (triton-nvidia-mma-lowering)"]
    assert ["AllocateSharedMemory (allocate-shared-memory)",
            "AllocateSharedMemoryNv (allocate-shared-memory-nv)"] in result["renamed"]
    assert not set(result["added"]) & set(result["removed"])
    assert "CSE (cse)" in result["added"]


def test_narrowing_writes_the_lit_test_of_the_first_differing_pass(tmp_path: Path) -> None:
    """The lit test beside the answer: `triton-opt %s -convert-triton-gpu-to-llvm`, its input the
    IR both Tritons gave that pass, its CHECK lines matched by the good Triton's output and not by
    the culprit's — as the `filecheck` package (a Python port of LLVM's FileCheck) reads them."""
    kernel = tmp_path / "layernorm.py"
    kernel.write_text(KERNEL)
    env = {k: v for k, v in os.environ.items() if k != "TRITONBISECT_RESULT"}
    old = (str(triton_release_python("3.4.0")), env, tmp_path)
    new = (str(triton_release_python("3.5.1")), env, tmp_path)
    result, runs = narrow_compiles(_job(kernel), old, new, tmp_path, codegen=None)
    path = write_lit_test(result, tmp_path / "narrow")
    assert path is not None and result["lit_test"]["path"] == str(path)
    text = path.read_text()
    assert text.startswith("// RUN: triton-opt %s -convert-triton-gpu-to-llvm")
    assert "| FileCheck %s" in text.splitlines()[0]
    i = result["first_difference"]["parent_position"]
    parent, culprit = runs["parent"]["dumps"], runs["culprit"]["dumps"]
    assert drop_locations(parent[i].ir).strip() in text  # the input just before the pass
    j = result["first_difference"]["position"]
    for name, output, expected in (("good", parent[i + 1].ir, 0), ("bad", culprit[j + 1].ir, 1)):
        (tmp_path / name).write_text(drop_locations(output))  # as triton-opt prints it (no debug info)
        check = subprocess.run([sys.executable, "-m", "filecheck", str(path), "--input-file", str(tmp_path / name)],
                               capture_output=True, text=True)
        assert check.returncode == expected, (name, check.stdout[-2000:], check.stderr[-2000:])
