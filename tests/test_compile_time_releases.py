"""Compile-time regressions between real Triton releases from the package index (slow: release
venvs, downloads, many compiles).

Measured on this machine (bench/compile_time_bench.py): Triton 3.9.0 compiles the H100 trace's
matmul for sm_90 about 40% slower than 3.8.0 (CPU seconds), in its llir stage, where
TritonGPUProxyFenceInsertion went from about a millisecond to about a tenth of a second and
TritonNvidiaGPUMembar became a pass of its own; 3.8.0 compiles flash-attn's forward about a third
slower than 3.7.x, in the llir stage's MLIR time outside its passes; 3.2.0 crashes on that
forward kernel for sm_90.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from bisectors_world import run_json
from oracle_support import scenario

pytestmark = [pytest.mark.slow, pytest.mark.timeout(1200)]  # a bisect of paired compiles, then narrowing
GREW_IN_3_9 = {"TritonGPUProxyFenceInsertion", "TritonNvidiaGPUMembar"}


@pytest.fixture(scope="module")
def matmul_trace() -> Path:
    return scenario("matmul")


@pytest.fixture(scope="module")
def matmul_oracle(tmp_path_factory, matmul_trace) -> Path:
    from real_kernels import cli

    out = tmp_path_factory.mktemp("matmul") / "oracle"
    proc = cli("repro", str(matmul_trace), "--kernel", "matmul_kernel", "--mode", "compile", "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    return out


def _time(python: Path, oracle: Path, *args: str) -> tuple[int, dict, str]:
    result = oracle.parent / f"result-{python.parent.parent.name}.json"
    env = {k: v for k, v in os.environ.items() if k not in ("TRITONBISECT_RESULT", "TRITON_INTERPRET")}
    env["TRITON_DEFAULT_FP_FUSION"] = "1"  # 3.9 warns without it
    proc = subprocess.run([str(python), str(oracle / "compile_repro.py"), "--check", "compile-time", "--result",
                           str(result), *args], capture_output=True, text=True, timeout=900, env=env)
    return proc.returncode, json.loads(result.read_text()), proc.stdout


def test_where_the_time_goes_in_two_releases(matmul_oracle):
    from real_triton import triton_release_python

    parts = {}
    for version in ("3.8.0", "3.9.0"):
        code, res, out = _time(triton_release_python(version), matmul_oracle, "--pass-times")
        assert (code, res["status"]) == (0, "pass"), out
        assert res["triton_version"] == version and f"TRITONBISECT_METRIC={res['metric']!r}" in out
        assert [s["stage"] for s in res["compile_time"]["stages"]] == ["frontend", "ttir", "ttgir", "llir", "ptx",
                                                                        "cubin"]
        parts[version] = {p["name"]: p for p in res["compile_time"]["passes"]}
    # the passes each release's own MLIR report names, in the stage that ran them
    assert parts["3.9.0"]["TritonNvidiaGPUMembar"]["stage"] == "llir" and "TritonNvidiaGPUMembar" not in parts["3.8.0"]
    assert all(parts[v]["TritonGPUProxyFenceInsertion"]["stage"] == "llir" for v in parts)
    assert all(parts[v]["NVPTX DAG->DAG Pattern Instruction Selection"]["kind"] == "llvm" for v in parts)
    assert all(parts[v]["ptxas (cubin stage)"]["seconds"] > 0 for v in parts)


def test_a_release_that_crashes_on_the_kernel_has_no_time(tmp_path):
    from real_kernels import FLASH_ATTN_FWD, flash_attn_triton, traced_compile_oracle
    from real_triton import triton_release_python

    oracle = traced_compile_oracle(tmp_path, FLASH_ATTN_FWD, "_fwd_kernel", "cuda:90", str(flash_attn_triton()))
    code, res, out = _time(triton_release_python("3.2.0"), oracle)
    assert (code, res["status"]) == (4, "crash"), out
    assert "metric" not in res and "TRITONBISECT_METRIC" not in out
    assert "no compile time: it did not compile" in res["reason"]


def test_wheels_names_the_release_and_narrow_the_pass(matmul_trace, tmp_path, capsys):
    from real_triton import make_linked_venv

    venv = tmp_path / "venv"
    make_linked_venv(venv)
    home = tmp_path / "home"
    code, res, err = run_json(
        ["wheels", "--good", "3.7.1", "--bad", "3.9.0", "--venv", str(venv), "--repro", str(matmul_trace),
         "--kernel", "matmul_kernel", "--oracle", "compile", "--regress", "compile-time", "--perf-threshold", "25%",
         "--narrow", "--workdir", str(home), "--env", "TRITON_DEFAULT_FP_FUSION=1"], capsys)
    assert code == 0, err[-3000:]
    assert (res["last_good"], res["first_bad"]) == ("3.8.0", "3.9.0")
    journal = [json.loads(line) for line in (Path(res["session_dir"]) / "journal.jsonl").read_text().splitlines()]
    slow = [r for r in journal if r.get("kind") == "perf"]
    assert slow and all(r["reason"].startswith("compile-time regression: +") for r in slow)
    grew = res["narrow"]["grew_most"]
    assert grew["name"] in GREW_IN_3_9 and grew["stage"] == "llir" and grew["culprit"] > grew["parent"] * 5
    named = {p["name"] for p in res["narrow"]["parts"][:3]}
    assert named >= GREW_IN_3_9  # both listed at the top, whichever grew a little more
    session = json.loads((Path(res["session_dir"]) / "session.json").read_text())
    assert session["extra"]["narrow_time"]["grew_most"]["name"] == grew["name"]
