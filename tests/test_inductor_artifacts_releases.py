"""The oracles made from what PyTorch 2.11 / Triton 3.6 wrote on an H200 (tests/data/inductor_artifacts)
pass with the Triton that wrote them, 3.6.0 from PyPI, on this CPU-only machine: every Triton kernel
of each output_code.py (compile oracle, cross-compiled for sm90), every TRITON_KERNEL_DUMP kernel
folder and every TRITON_REPRODUCER_PATH file (IR oracles); where the config is known, the TTIR the
compile oracle makes is the one the H200 dumped. The runtime oracle of an Inductor kernel (inputs
seeded from the wrapper's harness) records its golden at one Triton, passes at another and
catches a planted change; a minifier's repro script, run as a test, reports its compile error."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from compile_support import run_oracle
from inductor_artifacts import KERNELS, PROGRAMS, artifacts, output_codes  # noqa: F401 - the fixture (the tests' argument redefines it)
from oracle_support import cli, needs_torch_triton
from real_triton import triton_release_python
from tritonbisect.mlir.normalise import normalise

pytestmark = [pytest.mark.slow]


def compile_ok(folder: Path, python: Path, keep: Path | None = None) -> dict:
    args = ("--keep", str(keep)) if keep else ()
    proc, result = run_oracle(folder, *args, python=str(python), timeout=600)
    assert proc.returncode == 0 and result.get("status") == "pass", (folder, proc.stdout[-500:], proc.stderr[-2000:])
    return result


@pytest.mark.parametrize("program", PROGRAMS)
def test_every_kernel_of_each_output_code_compiles(artifacts: Path, program: str, tmp_path: Path) -> None:  # noqa: F811
    python = triton_release_python("3.6.0")
    for code in output_codes(artifacts, program):
        listed = json.loads(cli("info", str(code), "--json").stdout)
        for kernel in [k["name"] for k in listed["kernels"]]:
            out = tmp_path / f"{code.parent.name}-{kernel}"
            proc = cli("repro", str(code), "--kernel", kernel, "--mode", "compile", "--out", str(out))
            assert proc.returncode == 0, proc.stderr
            compile_ok(out, python)


@pytest.mark.parametrize("program", PROGRAMS)
def test_every_kernel_dump_folder_and_reproducer_compiles(artifacts: Path, program: str, tmp_path: Path) -> None:  # noqa: F811
    python = triton_release_python("3.6.0")
    sources = sorted(p for p in (artifacts / program / "kernel_dump").iterdir() if p.is_dir())
    sources += sorted((artifacts / program / "reproducer").glob("*.repro.mlir"))
    assert len(sources) >= 4
    for i, source in enumerate(sources):
        out = tmp_path / f"o{i}"
        proc = cli("repro", str(source), "--out", str(out))  # IR alone: the IR oracle, no --mode needed
        assert proc.returncode == 0, proc.stderr
        compile_ok(out, python)


def test_the_compile_oracle_makes_the_ttir_the_h200_dumped(artifacts: Path, tmp_path: Path) -> None:  # noqa: F811
    """With the config known (TORCH_TRACE's only_config, a user kernel's and a template's
    decorator), the kernel cut out of the output code compiles to the TTIR Triton dumped on the
    H200, locations aside."""
    python = triton_release_python("3.6.0")
    dumped: dict[str, list[str]] = {}
    for program in PROGRAMS:
        for ttir in (artifacts / program / "kernel_dump").glob("*/*.ttir"):
            dumped.setdefault(ttir.stem, []).append(normalise(ttir.read_text()))
    checked = []
    for program, kernel, launch in (("pointwise_reduction", "triton_per_fused_add_mul_relu_sum_0", 0),
                                    ("pointwise_reduction", "triton_red_fused_amax_1", 0),
                                    ("pointwise_reduction", "triton_per_fused_amax_2", 0),
                                    ("pointwise_reduction", "scaled_add_0", 1),
                                    ("matmul_epilogue", "triton_tem_fused_mm_0", 0),
                                    ("softmax_layernorm", KERNELS["softmax_layernorm"][0], 0)):
        out, keep = tmp_path / kernel, tmp_path / f"{kernel}-ir"
        proc = cli("repro", str(artifacts / program / "torch_trace"), "--kernel", kernel, "--mode", "compile",
                   "--launch-id", str(launch), "--out", str(out))
        assert proc.returncode == 0, proc.stderr
        compile_ok(out, python, keep)
        ours = normalise(next(keep.rglob("*.ttir")).read_text())
        function = "scaled_add" if kernel == "scaled_add_0" else kernel
        ours = ours.replace("@scaled_add_0(", "@scaled_add(")  # the oracle binds it under Inductor's name
        assert ours in dumped[function], kernel
        checked.append(kernel)
    assert len(checked) == 6


@needs_torch_triton
def test_runtime_oracle_of_an_inductor_kernel_compares_two_tritons(artifacts: Path, tmp_path: Path) -> None:  # noqa: F811
    good, other = triton_release_python("3.6.0"), triton_release_python("3.5.1")
    out = tmp_path / "rt"
    proc = cli("repro", str(artifacts / "pointwise_reduction" / "torch_trace"), "--kernel", "triton_red_fused_amax_1",
               "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    env = {**{k: v for k, v in os.environ.items() if k != "TRITONBISECT_RESULT"}, "TRITON_INTERPRET": "1"}

    def run(python: Path, *args: str) -> subprocess.CompletedProcess:
        return subprocess.run([str(python), str(out / "repro.py"), *args], capture_output=True, text=True, env=env,
                              timeout=600)

    golden = out / "golden.pt"
    assert run(good, "--record-golden", str(golden)).returncode == 0
    compared = run(other, "--golden", str(golden))
    assert compared.returncode == 0, compared.stdout + compared.stderr
    script = (out / "repro.py").read_text()
    planted = script.replace("tmp3 = triton_helpers.maximum(_tmp2, tmp1)", "tmp3 = triton_helpers.minimum(_tmp2, tmp1)")
    assert planted != script
    (out / "repro.py").write_text(planted)  # a wrong combine: the running max becomes a min
    bad = run(other, "--golden", str(golden))
    assert bad.returncode == 1 and "MISMATCH" in bad.stdout, bad.stdout + bad.stderr


@needs_torch_triton
def test_a_minifier_repro_run_as_a_test_reports_its_compile_error(artifacts: Path, tmp_path: Path) -> None:  # noqa: F811
    """The repro.py PyTorch's minifier wrote for a planted Inductor bug (its C++ backend, so it runs
    here), run through the test `repro` writes: exit 1, status compile_error."""
    script = tmp_path / "repro.py"
    text = (artifacts / "minifier_cpu" / "repro.py").read_text()
    script.write_text(text.replace("/tmp/cap_work/minifier", str(tmp_path / "run")))  # where it writes its caches
    proc = cli("repro", str(script), "--out", str(tmp_path / "t"))
    assert proc.returncode == 0, proc.stderr
    result = tmp_path / "result.json"
    run = subprocess.run([sys.executable, str(tmp_path / "t" / "minifier_test.py"), "--result", str(result)],
                         capture_output=True, text=True, timeout=900)
    data = json.loads(result.read_text())
    assert run.returncode == 1 and data["status"] == "compile_error", run.stdout[-2000:]
