"""Compile time as a metric: the compile oracle's `--check compile-time`, where the time goes
(tb_timing: stages timed inside the child, MLIR's and LLVM's own timing reports), and the
comparison `narrow --time` makes of two sets of timed compiles.

The timing reports are what real releases printed (tests/data/compile_time: Triton 3.2.0 and
3.8.0 compiling the H100 trace's matmul for sm_90 with MLIR_ENABLE_TIMING=1 and
LLVM_ENABLE_TIMING=1; the LLVM reports cut to their first rows). The oracle tests compile that
matmul with the Triton installed here, and with planted changes that make a stage slower or
make the compiler die.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from compile_support import needs_triton, plant, run_oracle
from oracle_support import scenario
from tritonbisect.narrow.time_compare import compare_times, floors
from tritonbisect.oracles.compile.standalone import tb_timing
from tritonbisect.reports.where import time_line, time_lines

DATA = Path(__file__).resolve().parent / "data" / "compile_time"


def _reports(name: str) -> list[dict]:
    return tb_timing.parse_reports((DATA / name).read_text())


def test_the_reports_of_real_releases_are_read():
    for name in ("triton-3.2.0-sm90-matmul.stderr", "triton-3.8.0-sm90-matmul.stderr"):
        reports = _reports(name)
        # one MLIR report per pass manager (ttir, ttgir, llir), then LLVM's code generator's two
        assert [r["kind"] for r in reports] == ["mlir"] * 3 + ["llvm"] * 2, name
        names = [n for r in reports for n, _ in r["passes"]]
        assert "ConvertTritonGPUToLLVM" in names and "Rest" in names
        # pipelines hold passes, analyses are inside passes: neither is a pass of its own
        assert not any(n.endswith(" Pipeline") or n.startswith("(A)") or n == "Total" for n in names)
    llir = _reports("triton-3.8.0-sm90-matmul.stderr")[2]["passes"]
    assert ("TritonGPUProxyFenceInsertion", 0.0014) in llir and ("Rest", 0.0896) in llir
    codegen = dict(_reports("triton-3.8.0-sm90-matmul.stderr")[4]["passes"])
    assert codegen["NVPTX DAG->DAG Pattern Instruction Selection"] == 0.0276  # the wall column
    old = dict(_reports("triton-3.2.0-sm90-matmul.stderr")[0]["passes"])
    assert "Canonicalizer" in old and "CanonicalizerPass" not in old  # MLIR's older pass names


def test_each_report_goes_to_the_stage_that_printed_it():
    text = (DATA / "triton-3.8.0-sm90-matmul.stderr").read_text()
    heads = [r["offset"] for r in tb_timing.parse_reports(text)]
    size = len(text.encode())
    stages = [  # the byte offsets of the child's stderr around each stage, as Timer records them
        {"stage": "frontend", "wall": 0.02, "cpu": 0.02, "err_start": 0, "err_end": 0},
        {"stage": "ttir", "wall": 0.01, "cpu": 0.01, "err_start": 0, "err_end": heads[1]},
        {"stage": "ttgir", "wall": 0.10, "cpu": 0.08, "err_start": heads[1], "err_end": heads[2]},
        {"stage": "llir", "wall": 0.50, "cpu": 0.30, "err_start": heads[2], "err_end": heads[3]},
        {"stage": "ptx", "wall": 0.09, "cpu": 0.08, "err_start": heads[3], "err_end": size},
        {"stage": "cubin", "wall": 0.20, "cpu": 0.19, "err_start": size, "err_end": size},
    ]
    parts = {p["name"]: p for p in tb_timing.breakdown({"stages": stages}, text)}
    assert parts["TritonGPUProxyFenceInsertion"]["stage"] == "llir"
    assert parts["TritonGPURemoveLayoutConversions"]["stage"] == "ttgir"
    assert parts["NVPTX DAG->DAG Pattern Instruction Selection"]["kind"] == "llvm"
    assert parts["NVPTX DAG->DAG Pattern Instruction Selection"]["stage"] == "ptx"
    rest = parts["MLIR time outside the passes, llir stage (the report's Rest)"]
    assert (rest["seconds"], rest["stage"], rest["kind"]) == (0.0896, "llir", "rest")
    # a stage's time outside its timed passes: ptxas is the whole cubin stage
    assert parts["ptxas (cubin stage)"]["seconds"] == 0.2
    llir_timed = sum(seconds for _, seconds in tb_timing.parse_reports(text)[2]["passes"])
    assert parts["LLVM IR translation and optimization (llir stage)"]["seconds"] == pytest.approx(0.5 - llir_timed)
    assert parts["CanonicalizerPass"]["stage"] == "several" and parts["CanonicalizerPass"]["runs"] > 1


def _run(parts: dict[str, float]) -> list[dict]:
    return [{"name": n, "kind": "stage" if n.startswith("ptxas") else "mlir", "stage": "llir", "seconds": s, "runs": 1}
            for n, s in parts.items()]


def test_the_part_that_grew_most_by_the_fastest_compiles():
    parent = [_run({"Canonicalizer": 0.05, "ConvertTritonGPUToLLVM": 0.30, "ptxas (cubin stage)": 0.40}),
              _run({"Canonicalizer": 0.09, "ConvertTritonGPUToLLVM": 0.90, "ptxas (cubin stage)": 0.41})]
    culprit = [_run({"CanonicalizerPass": 0.06, "ConvertTritonGPUToLLVM": 0.31, "ptxas (cubin stage)": 0.90,
                     "TritonNvidiaGPUMembar": 0.12}),
               _run({"CanonicalizerPass": 0.05, "ConvertTritonGPUToLLVM": 0.35, "ptxas (cubin stage)": 0.95,
                     "TritonNvidiaGPUMembar": 0.20})]
    # a busy machine slowed the parent's second compile: its floors do not see it
    assert floors(parent)[("mlir", "ConvertTritonGPUToLLVM")]["seconds"] == 0.30
    result = compare_times(parent, culprit)
    grew = result["grew_most"]
    assert (grew["name"], grew["parent"], grew["culprit"]) == ("ptxas (cubin stage)", 0.40, 0.90)
    names = [p["name"] for p in result["parts"]]
    assert "TritonNvidiaGPUMembar" in names  # only in the culprit's compiles
    assert not any(p["name"].startswith("Canonicalizer") and abs(p["change"]) > 0.02 for p in result["parts"])
    line = time_line(result)
    assert line.startswith("ptxas (cubin stage): 0.400 s → 0.900 s (+0.500 s")
    assert "fastest of 2 and 2 compiles" in line
    lines = "\n".join(time_lines({**result, "kernel": "k", "parent": "a" * 40, "culprit": "b" * 40}))
    assert "### Where the compile time grew" in lines and "| ptxas (cubin stage) | 0.400 | 0.900 | +0.500 |" in lines
    assert compare_times(parent, parent)["grew_most"] is None


# --- the oracle, with the Triton installed here -----------------------------------------------


@pytest.fixture(scope="module")
def matmul_oracle(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("matmul") / "oracle"
    proc = subprocess.run([sys.executable, "-m", "tritonbisect.cli", "repro", str(scenario("matmul")), "--kernel",
                           "matmul_kernel",
                           "--mode", "compile", "--out", str(out)], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    return out


@needs_triton
def test_check_compile_time_reports_the_compile_as_a_metric(matmul_oracle):
    proc, res = run_oracle(matmul_oracle, "--check", "compile-time", "--no-limits")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    metric = res["metric"]
    assert f"TRITONBISECT_METRIC={metric!r}" in proc.stdout.splitlines()
    timing = res["compile_time"]
    assert timing["clock"] == "cpu" and metric == timing["cpu_seconds"] > 0 and timing["seconds"] > 0
    stages = [s["stage"] for s in timing["stages"]]
    assert stages == ["frontend", "ttir", "ttgir", "llir", "ptx", "cubin"]
    assert sum(s["cpu"] for s in timing["stages"]) <= metric * 1.01
    assert "stats" not in res  # only the time was asked for: no cuobjdump
    assert "compile time" in res["reason"] and "of CPU" in res["reason"]

    proc, res = run_oracle(matmul_oracle, "--check", "compile-time", "--compile-clock", "wall", "--pass-times")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert res["metric"] == res["compile_time"]["seconds"]
    kinds = {p["kind"] for p in res["compile_time"]["passes"]}
    assert kinds == {"mlir", "llvm", "rest", "stage"}
    assert "slowest passes:" in res["reason"]
    assert res["stats"]["regs"] > 0  # the launch limits were checked: the statistics are there

    proc, res = run_oracle(matmul_oracle, "--pass-times")
    assert proc.returncode == 2 and "--pass-times goes with --check compile-time" in proc.stdout


@needs_triton
def test_a_hip_target_is_timed_too(matmul_oracle):
    proc, res = run_oracle(matmul_oracle, "--check", "compile-time", "--pass-times", "--compile-target", "hip:gfx942")
    if res.get("status") == "usage_error" and "ld.lld" in res.get("reason", ""):
        pytest.skip("this Triton links HIP code objects with ROCm's ld.lld, which this machine lacks")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    stages = [s["stage"] for s in res["compile_time"]["stages"]]
    assert stages == ["frontend", "ttir", "ttgir", "llir", "amdgcn", "hsaco"]
    parts = {p["name"]: p for p in res["compile_time"]["passes"]}
    assert parts["ConvertTritonAMDGPUToLLVM"]["stage"] == "llir"
    assert parts["linking the code object (hsaco stage)"]["kind"] == "stage"
    assert any(p["kind"] == "llvm" and p["stage"] == "amdgcn" for p in parts.values())  # AMDGPU's code generator


@needs_triton
def test_a_slower_stage_is_where_the_time_grew(matmul_oracle, tmp_path):
    # the ttgir stage spins 0.4 s of CPU first: a pass grown slow, as the MLIR timings do not see it
    slow = ('"""Planted compile-time regression: the ttgir stage spins first."""\nimport time\n'
            + _stage_patch("ttgir", "        end = time.process_time() + 0.4\n"
                                    "        while time.process_time() < end:\n            pass"))
    _, base = run_oracle(matmul_oracle, "--check", "compile-time", "--no-limits", "--pass-times")
    proc, res = run_oracle(matmul_oracle, "--check", "compile-time", "--no-limits", "--pass-times",
                           env=plant(tmp_path / "slow", slow))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert res["metric"] > base["metric"] + 0.35
    ttgir = {s["stage"]: s for s in res["compile_time"]["stages"]}["ttgir"]
    assert ttgir["cpu"] >= 0.4
    result = compare_times([base["compile_time"]["passes"]], [res["compile_time"]["passes"]])
    assert result["grew_most"]["name"] == "TTGIR stage outside its timed passes"


def _stage_patch(stage: str, body: str) -> str:
    from compile_support import _STAGE_PATCH

    return _STAGE_PATCH.format(stage=stage, body=body)


@needs_triton
def test_a_kernel_that_does_not_compile_has_no_time(matmul_oracle, tmp_path):
    from compile_support import PLANTS

    proc, res = run_oracle(matmul_oracle, "--check", "compile-time", env=plant(tmp_path / "abort", PLANTS["abort"]))
    assert proc.returncode == 4 and res["status"] == "crash"
    assert "metric" not in res and "TRITONBISECT_METRIC" not in proc.stdout
    assert res["reason"].endswith("no compile time: it did not compile")


# --- the command line --------------------------------------------------------------------


def _cli(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("TRITONBISECT_RESULT", "TRITON_INTERPRET")}
    return subprocess.run([sys.executable, "-m", "tritonbisect.cli", *args], capture_output=True, text=True, env=env,
                          timeout=120, cwd=cwd)


@pytest.mark.parametrize(("args", "said"), [
    (["--test", "true", "--regress", "compile-time"], "--regress compile-time times the compile oracle's compile"),
    (["--test", "true", "--compile-clock", "wall"], "--compile-clock goes with --regress compile-time"),
    (["--test", "true", "--regress", "crash", "--perf-threshold", "5%"], "--perf-threshold goes with --regress perf"),
])
def test_misuse_is_one_line(tmp_path, args, said):
    proc = _cli("run", "--repo", str(tmp_path), "--good", "HEAD~1", "--bad", "HEAD", *args, "--workdir",
                str(tmp_path / "home"))
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert proc.returncode == 2 and len(lines) == 1 and said in lines[0], proc.stderr


def test_the_oracle_command_of_a_compile_time_bisect(tmp_path):
    from tritonbisect.oracles.compile.folder import compile_commands
    from tritonbisect.session.judging import TestSettings

    settings = TestSettings(repro="t", kernel="k", oracle="compile", check=["compile-time"], compile_clock="wall")
    spec = compile_commands(tmp_path, check=settings.check, extra=settings.oracle_args())
    assert spec.command.endswith("--check compile-time --no-limits --compile-clock wall")
    assert spec.record_command is None and "--golden" not in spec.command  # no golden to record
    both = TestSettings(check=["codegen", "compile-time"])
    spec = compile_commands(tmp_path, check=both.check, extra=both.oracle_args())
    assert "--golden" in spec.command and spec.record_command and "--no-limits" not in spec.command
    assert json.loads(json.dumps(both.oracle_args())) == []
