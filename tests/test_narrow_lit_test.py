"""The lit test narrowing writes, on a real TTGIR (tests/data/ir/add_kernel.ttgir, Triton 3.6): its
RUN line names the pass and its options, its input is the IR before the pass, and its CHECK
lines — read by the `filecheck` package, a Python port of LLVM's FileCheck — pass on the good
output and fail on the culprit's, FileCheck's own `[[`/`{{` in the IR escaped."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tritonbisect.mlir.normalise import drop_locations
from tritonbisect.mlir.passes import PassDump
from tritonbisect.narrow.lit_test import check_pattern, lit_test

IR = (Path(__file__).parent / "data" / "ir" / "add_kernel.ttgir").read_text()


def filecheck(check: Path, text: str, tmp_path: Path) -> int:
    target = tmp_path / f"in-{len(list(tmp_path.iterdir()))}"
    target.write_text(drop_locations(text))
    return subprocess.run([sys.executable, "-m", "filecheck", str(check), "--input-file", str(target)],
                          capture_output=True, text=True).returncode


def test_a_changed_op_is_checked_and_the_culprits_is_refused(tmp_path: Path) -> None:
    before = PassDump(index=3, name="TritonGPUCoalesce", arg="tritongpu-coalesce", op="builtin.module", ir=IR)
    good = IR
    bad = IR.replace("arith.addf %x_5, %y_7", "arith.subf %x_5, %y_7")
    lit = lit_test(before, good, bad)
    assert lit is not None
    assert lit.run == "// RUN: triton-opt %s -tritongpu-coalesce | FileCheck %s"
    assert drop_locations(IR).strip() in lit.text
    assert "// CHECK-LABEL: @add_kernel(" in lit.text
    assert "// CHECK-NOT: %{{[A-Za-z0-9_$.#-]+}} = arith.subf" in lit.text
    check = tmp_path / "t.mlir"
    check.write_text(lit.text)
    assert filecheck(check, good, tmp_path) == 0
    assert filecheck(check, bad, tmp_path) == 1
    renamed = good.replace("%x_5", "%xx").replace("%y_7", "%yy")  # printer names do not count
    assert filecheck(check, renamed, tmp_path) == 0
    assert lit_test(before, good, renamed) is None


def test_options_and_filechecks_own_syntax(tmp_path: Path) -> None:
    before = PassDump(index=0, name="TritonGPUF32DotTC", arg="tritongpu-F32DotTC", op="builtin.module", ir=IR,
                      options="{emu-tf32=true}")
    assert lit_test(before, IR, IR.replace("1024 : i32, start", "512 : i32, start")).run == (
        '// RUN: triton-opt %s -tritongpu-F32DotTC="emu-tf32=true" | FileCheck %s')
    pattern = check_pattern('#linear = #ttg.linear<{register = [[0, 1]], lane = [{{x}}]}>  %a = op %b')
    assert "[[" not in pattern.replace("{{\\[\\[}}", "") and "{{\\{\\{}}" in pattern
    check = tmp_path / "c"
    check.write_text(f"// CHECK: {pattern}\n")
    assert filecheck(check, "#linear = #ttg.linear<{register = [[0, 1]], lane = [{{x}}]}>  %v3 = op %v9", tmp_path) == 0


def test_a_pass_on_a_function_gets_a_module_around_its_input() -> None:
    func = IR[IR.index("  tt.func"):IR.index("} loc(#loc)\n#loc1")]
    before = PassDump(index=1, name="Canonicalizer", arg="canonicalize", op="tt.func", ir=func)
    lit = lit_test(before, func, func.replace("arith.addf", "arith.mulf"))
    assert lit is not None and "\nmodule {\n" in lit.text and lit.notes
