"""Narrowing a codegen regression to a pass: the MLIR ops that stand for a changed statistic
are counted after every aligned pass of both pipelines."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from compile_support import needs_triton
from oracle_support import cli, needs_traces, scenario
from tritonbisect.mlir.passes import PassDump
from tritonbisect.narrow.codegen import count_ops, proxy_of, statistic_passes
from tritonbisect.narrow.narrowing import (
    _compile_with_dumps,
    _oracle_job,
    codegen_changes,
    oracle_job,
)

DOT = "%r = ttng.warp_group_dot %a, %b, %c {inputPrecision = 0 : i32} : tensor<64x64xf16> -> tensor<64x64xf32>\n"
COPY = '%t = ttg.async_copy_global_to_local %p, %s mask %m : tensor<32x64x!tt.ptr<f16>> -> <32x64xf16>\n'


def _pipeline(*irs: str) -> list[PassDump]:
    names = ["Canonicalizer", "TritonGPUAccelerateMatmul", "TritonGPUPipeline", "ConvertTritonGPUToLLVM"]
    return [PassDump(i, names[i], names[i].lower(), "builtin.module", f"module {{\n{ir}}}\n")
            for i, ir in enumerate(irs)]


def test_ops_are_counted_in_custom_and_generic_form() -> None:
    assert count_ops(DOT * 3 + COPY, ("ttng.warp_group_dot",)) == 3
    assert count_ops('"nvvm.wgmma.mma_async"(%0) : () -> ()\nnvvm.wgmma.mma_async %1\n', ("nvvm.wgmma.mma_async",)) == 2
    assert count_ops("rocdl.mfma.f32.32x32x8f16 %a\n", ("rocdl.mfma",)) == 1
    assert count_ops("// ttng.warp_group_dotx is another op\n%x = tt.dot %a\n", ("ttng.warp_group_dot",)) == 0
    assert proxy_of("sass.HGMMA")[0] == proxy_of("ptx.wgmma")[0] == "warp-group MMA ops"
    assert proxy_of("regs") is None and proxy_of("sass.UTMALDG")[0] == "TMA copies"


def test_the_pass_that_drops_the_stand_in_ops_is_named() -> None:
    parent = _pipeline("", "", DOT, DOT + COPY)  # the IR before each pass: Accelerate made the dot
    culprit = _pipeline("", "", "", COPY)         # ... at the culprit it did not
    changes = [{"metric": "ptx.wgmma", "old": 64, "new": 0, "text": "PTX wgmma instructions 64 → 0"},
               {"metric": "ptx.cp.async", "old": 20, "new": 0, "text": "PTX cp.async instructions 20 → 0"},
               {"metric": "regs", "old": 40, "new": 90, "text": "registers 40 → 90"}]
    wgmma, cp, regs = statistic_passes(parent, culprit, changes)
    assert wgmma["pass"] == "TritonGPUAccelerateMatmul (tritongpuacceleratematmul)"
    assert wgmma["counts"] == {"parent": 1, "culprit": 0}
    assert cp["pass"] is None and "after them" in cp["note"]  # equal after every dumped pass
    assert regs["pass"] is None and "no MLIR op" in regs["note"]
    # stand-in ops that differ before the first pass: the frontend
    first, = statistic_passes(_pipeline(DOT, DOT), _pipeline("", ""), changes[:1])
    assert first["pass"].startswith("(the frontend")


def test_a_pass_only_the_culprit_runs_is_blamed_not_the_next_aligned_one() -> None:
    def dumps(*steps: tuple[str, str]) -> list[PassDump]:
        return [PassDump(i, name, name.lower(), "builtin.module", f"module {{\n{ir}}}\n")
                for i, (name, ir) in enumerate(steps)]

    parent = dumps(("A", ""), ("B", ""), ("C", ""), ("D", ""))
    culprit = dumps(("A", ""), ("X", ""), ("B", DOT), ("C", DOT), ("D", DOT))  # X made the dot
    hit, = statistic_passes(parent, culprit, [{"metric": "ptx.wgmma", "old": 0, "new": 8}])
    assert hit["pass"] == "(a pass only one pipeline runs, before B (b): X (x))"
    assert hit["counts"] == {"parent": 0, "culprit": 1}


@needs_triton
@needs_traces
def test_real_matmul_losing_its_pipelining_names_the_passes(tmp_path: Path) -> None:
    """The H100 matmul compiled for sm90 by this Python's Triton, with num_stages 3 (the parent)
    and 1 (the culprit): cp.async/LDGSTS and one wgmma are lost; the dumps name the passes."""
    folder = tmp_path / "oracle"
    proc = cli("repro", str(scenario("matmul")), "--kernel", "matmul_kernel", "--mode", "compile", "--out", str(folder))
    assert proc.returncode == 0, proc.stderr
    job = oracle_job(folder)
    env = {k: v for k, v in os.environ.items() if k != "TRITONBISECT_RESULT"}
    parent = _compile_with_dumps(job, sys.executable, env, tmp_path, tmp_path / "p", 300)
    job["options"]["num_stages"] = 1
    culprit = _compile_with_dumps(job, sys.executable, env, tmp_path, tmp_path / "c", 300)
    changes = codegen_changes(parent, culprit)
    found = {s["metric"]: s for s in statistic_passes(parent["dumps"], culprit["dumps"], changes)}
    assert found["ptx.cp.async"]["new"] == 0 and found["ptx.cp.async"]["pass"], found["ptx.cp.async"]
    assert found["ptx.cp.async"]["counts"]["parent"] > 0 == found["ptx.cp.async"]["counts"]["culprit"]
    assert found["ptx.cp.async"]["pass"].startswith("TritonGPU")
    assert found["regs"]["pass"] is None


@needs_traces
def test_the_session_s_codegen_thresholds_are_the_ones_narrowed_with(tmp_path: Path) -> None:
    """narrow reads the session's oracle command: its --check codegen and --threshold values."""
    from types import SimpleNamespace

    from tritonbisect.oracles.compile.folder import compile_commands

    folder = tmp_path / "o"
    proc = cli("repro", str(scenario("vadd")), "--kernel", "add_kernel", "--mode", "compile", "--out", str(folder))
    assert proc.returncode == 0, proc.stderr

    def phase(command: str) -> SimpleNamespace:
        return SimpleNamespace(spec=SimpleNamespace(recipe_config={"test": {"command": command}}))

    checked = compile_commands(folder, check=["codegen"], thresholds=["regs=0", "sass.*=5%"]).command
    job, found, thresholds = _oracle_job(phase(checked))
    assert found == folder.resolve() and thresholds == ["regs=0", "sass.*=5%"]
    assert os.path.isabs(job["what"]["file"])
    assert _oracle_job(phase(compile_commands(folder).command))[2] is None


def test_the_report_and_the_command_show_the_pass_behind_each_statistic(capsys) -> None:
    from tritonbisect.commands.narrow import echo_narrowing
    from tritonbisect.reports.where import where_lines

    parent = _pipeline("", "", DOT, DOT)
    culprit = _pipeline("", "", "", "")
    codegen = statistic_passes(parent, culprit, [{"metric": "ptx.wgmma", "old": 64, "new": 0,
                                                  "text": "PTX wgmma instructions 64 → 0"},
                                                 {"metric": "regs", "old": 40, "new": 90, "text": "registers 40 → 90"}])
    data = {"kernel": "matmul_kernel", "parent": "a" * 40, "culprit": "b" * 40, "first_difference": None,
            "passes": {"parent": 4, "culprit": 4}, "seconds": 0.5, "builds": 0,
            "compiles": {"parent": {"status": "pass"}, "culprit": {"status": "pass"}}, "codegen": codegen}
    md = "\n".join(where_lines(data))
    assert "- **PTX wgmma instructions 64 → 0:** first differs after `TritonGPUAccelerateMatmul" in md
    assert "- **registers 40 → 90:** no dumped pass (no MLIR op stands for this statistic" in md
    echo_narrowing(data)
    err = capsys.readouterr()
    text = err.out + err.err
    assert "PTX wgmma instructions 64 → 0: first differs after TritonGPUAccelerateMatmul" in text
