"""A compiler crash, the most common Triton bug report, from a trace to a reduced kernel, on the
CPU and through the CLI as a user types it: trace (compile only: no GPU, no launch) → repro
--mode compile → wheels → narrow → reduce, with the real releases from the package index.

The kernel is triton-lang/triton#5557's (tests/crash_programs/compile_only.py), compiled for
sm_103: Triton 3.5.0 aborts in LLVM's NVPTX instruction selection (triton-lang/triton#8473),
after every MLIR pass ran; 3.4.0 compiles it. 3.4.0's own ptxas (CUDA 12.8) does not know
sm_103a, so the bisect gives both the ptxas of the Triton running the tests (CUDA 12.9), as the
issue says users of 3.4 on GB300 did (TRITON_PTXAS_PATH).
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

HERE = Path(__file__).resolve().parent
PROGRAM = HERE / "crash_programs" / "compile_only.py"


def _ptxas_for_sm103() -> Path:
    """The ptxas of the Triton running the tests, when it knows sm_103a (CUDA 12.9 on)."""
    spec = importlib.util.find_spec("triton")
    if spec is None or not spec.origin:
        pytest.skip("no triton in the environment running the tests")
    ptxas = Path(spec.origin).parent / "backends" / "nvidia" / "bin" / "ptxas"
    if not ptxas.is_file():
        pytest.skip(f"no ptxas in {ptxas.parent}")
    version = subprocess.run([str(ptxas), "--version"], capture_output=True, text=True).stdout
    if "cuda_12.8" in version or "release 12.8" in version:
        pytest.skip("the running Triton's ptxas (CUDA 12.8) does not know sm_103a")
    return ptxas


def tb(*args: str, cwd: Path, timeout: float = 1200) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "tritonbisect.cli", *args], cwd=cwd, capture_output=True,
                          text=True, timeout=timeout, env=dict(os.environ))


def _no_traceback(proc: subprocess.CompletedProcess[str]) -> None:
    assert "Traceback (most recent call last)" not in proc.stderr + proc.stdout, proc.stderr[-3000:]


@pytest.mark.timeout(1800)  # two releases downloaded, four compiles per reduction candidate
def test_a_compiler_crash_from_a_compile_only_trace_to_a_reduced_kernel(tmp_path: Path) -> None:
    ptxas = _ptxas_for_sm103()
    home = tmp_path / "home"
    # 1. the trace: the program only compiles (for a GPU this machine does not have)
    traced = tb("trace", "--out", "trace", "--", sys.executable, str(PROGRAM), "cuda:103", cwd=tmp_path)
    assert traced.returncode == 0, traced.stderr[-3000:]
    assert "1 compilation recorded" in traced.stderr and "no launch" in traced.stderr
    # 2. the compile oracle of that compilation (its target is the traced one)
    repro = tb("repro", "trace", "--kernel", "matmul_kernel", "--mode", "compile", "--out", "oracle", cwd=tmp_path)
    assert repro.returncode == 0, repro.stderr[-3000:]
    assert json.loads((tmp_path / "oracle" / "compile_context.json").read_text())["launch"] is None
    # 3. the published releases: 3.5.0 crashes where 3.4.0 compiles
    wheels = tb("wheels", "--good", "3.4.0", "--bad", "3.5.0", "--repro", "trace", "--kernel", "matmul_kernel",
                "--oracle", "compile", "--env", f"TRITON_PTXAS_PATH={ptxas}", "--workdir", str(home), "--json",
                cwd=tmp_path)
    _no_traceback(wheels)
    assert wheels.returncode == 0, wheels.stderr[-3000:]
    found = json.loads(wheels.stdout.strip().splitlines()[-1])
    assert (found["last_good"], found["first_bad"]) == ("3.4.0", "3.5.0")
    assert [t["outcome"] for t in found["tested"] if t["version"] == "3.5.0"][0] == "crash"
    # 4. narrow: every MLIR pass ran; it failed after them, in LLVM's backend, with LLVM's message
    narrowed = tb("narrow", "--workdir", str(home), cwd=tmp_path)
    _no_traceback(narrowed)
    assert narrowed.returncode == 0, narrowed.stderr[-3000:]
    said = narrowed.stdout + narrowed.stderr
    assert "running when the culprit failed" not in said  # LLVMDIScope, the last MLIR pass, is not the place
    assert "the culprit failed after the MLIR pipeline, in LLVM's backend (LLVM IR to PTX), Triton's make_ptx stage" in said
    assert "LLVM ERROR: Cannot select: intrinsic %llvm.nvvm.tcgen05.wait.st" in said
    report = tb("report", "--workdir", str(home), cwd=tmp_path)
    assert "**Where the culprit's compile failed:** after the MLIR pipeline, in LLVM's backend" in report.stdout
    # 5. reduce: a smaller kernel that still crashes 3.5.0 and compiles with 3.4.0, no traceback
    reduced = tb("reduce", "--session", found["session"], "--workdir", str(home), "--out", "small", "--json",
                 cwd=tmp_path, timeout=2400)
    _no_traceback(reduced)
    assert reduced.returncode == 0, reduced.stderr[-3000:]
    result = json.loads(reduced.stdout)
    assert "Cannot select: intrinsic %llvm.nvvm.tcgen05.wait.st" in result["signature"]
    assert (result["good_triton"], result["bad_triton"]) == ("3.4.0", "3.5.0")
    assert result["after"]["kernel_lines"] <= result["before"]["kernel_lines"]
    issue = (tmp_path / "small" / "issue.py").read_text()
    assert "@triton.jit" in issue and "GPUTarget('cuda', 103, 32)" in issue
    assert "Triton 3.5.0 than by 3.4.0" in issue
    assert "tl.dot" in issue  # the crash needs the dot: it stays


def test_a_traced_gemm_of_another_issue_crashes_the_same_release(tmp_path: Path) -> None:
    # triton-lang/triton#11526's tf32x3 GEMM, traced as the limits tests trace it (under the
    # interpreter, with its launch), compiled for sm_103: the same abort in 3.5.0, not in 3.4.0
    from real_kernels import TF32X3_GEMM, traced_compile_oracle
    from real_triton import triton_release_python

    ptxas = _ptxas_for_sm103()
    oracle = traced_compile_oracle(tmp_path, TF32X3_GEMM, "gemm_tf32x3", "cuda:103", "128", "64", "64", "4", "3")
    for version, code, status in (("3.4.0", 0, "pass"), ("3.5.0", 4, "crash")):
        result = tmp_path / f"{version}.json"
        proc = subprocess.run([str(triton_release_python(version)), str(oracle / "compile_repro.py"),
                               "--result", str(result)], capture_output=True, text=True, timeout=900,
                              env={**os.environ, "TRITON_PTXAS_PATH": str(ptxas)})  # fmt: skip
        assert (proc.returncode, json.loads(result.read_text())["status"]) == (code, status), proc.stdout
    assert "LLVM ERROR: Cannot select: intrinsic %llvm.nvvm.tcgen05.wait.st" in proc.stdout
