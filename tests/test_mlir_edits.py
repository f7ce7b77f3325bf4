"""The IR reducer's pieces on MLIR text alone (mlir/ops.py, mlir/typed_constants.py,
mlir/edits.py, reduce/ir_pass.py): a TTGIR in the style of Triton 3.6's printer, with a loop,
two reductions whose combiners reuse one name, and locations."""

from __future__ import annotations

import pytest

from tritonbisect.mlir import edits
from tritonbisect.mlir.ops import count_ops, read_ops
from tritonbisect.mlir.typed_constants import constant, result_type
from tritonbisect.reduce import ir_pass
from tritonbisect.reduce.driver import cost
from tritonbisect.reduce.oracle_io import Candidate

IR = """#blocked = #ttg.blocked<{sizePerThread = [1], threadsPerWarp = [32], warpsPerCTA = [4], order = [0]}>
#blocked1 = #ttg.blocked<{sizePerThread = [2], threadsPerWarp = [32], warpsPerCTA = [4], order = [0]}>
#loc = loc("/k.py":6:0)
module attributes {"ttg.num-warps" = 4 : i32, ttg.target = "cuda:90", "ttg.threads-per-warp" = 32 : i32} {
  tt.func public @rowwise(%x_ptr: !tt.ptr<f32> {tt.divisibility = 16 : i32} loc("x_ptr"(#loc)), %unused: i32 loc("unused"(#loc)), %out_ptr: !tt.ptr<f32> {tt.divisibility = 16 : i32} loc("out_ptr"(#loc)), %n: i32 loc("n"(#loc))) attributes {noinline = false} {
    %c64_i32 = arith.constant 64 : i32 loc(#loc1)
    %cst = arith.constant 0.000000e+00 : f32 loc(#loc1)
    %cst_0 = arith.constant dense<0.000000e+00> : tensor<64xf32, #blocked> loc(#loc1)
    %c0_i32 = arith.constant 0 : i32 loc(#loc1)
    %pid = tt.get_program_id x : i32 loc(#loc2)
    %offs = tt.make_range {end = 64 : i32, start = 0 : i32} : tensor<64xi32, #blocked> loc(#loc2)
    %acc = scf.for %k = %c0_i32 to %n step %c64_i32 iter_args(%acc_3 = %cst_0) -> (tensor<64xf32, #blocked>)  : i32 {
      %x_7 = tt.addptr %x_ptr, %k : !tt.ptr<f32>, i32 loc(#loc3)
      %x_8 = tt.splat %x_7 : !tt.ptr<f32> -> tensor<64x!tt.ptr<f32>, #blocked> loc(#loc3)
      %x_9 = tt.addptr %x_8, %offs : tensor<64x!tt.ptr<f32>, #blocked>, tensor<64xi32, #blocked> loc(#loc3)
      %x_10 = tt.load %x_9 : tensor<64x!tt.ptr<f32>, #blocked> loc(#loc3)
      %6 = math.exp %x_10 : tensor<64xf32, #blocked> loc(#loc3)
      %acc_18 = arith.addf %acc_3, %6 : tensor<64xf32, #blocked> loc(#loc3)
      scf.yield %acc_18 : tensor<64xf32, #blocked> loc(#loc3)
    } loc(#loc4)
    %0 = tt.addptr %out_ptr, %pid : !tt.ptr<f32>, i32 loc(#loc5)
    %1 = "tt.reduce"(%acc) <{axis = 0 : i32}> ({
    ^bb0(%arg4: f32 loc(callsite(#loc1 at #loc5)), %arg5: f32 loc(callsite(#loc1 at #loc5))):
      %6 = arith.addf %arg4, %arg5 : f32 loc(#loc5)
      tt.reduce.return %6 : f32 loc(#loc5)
    }) : (tensor<64xf32, #blocked>) -> f32 loc(#loc5)
    tt.store %0, %1 : !tt.ptr<f32> loc(#loc5)
    %4 = "tt.reduce"(%acc) <{axis = 0 : i32}> ({
    ^bb0(%arg4: f32 loc(unknown), %arg5: f32 loc(unknown)):
      %6 = arith.maxnumf %arg4, %arg5 : f32 loc(#loc5)
      tt.reduce.return %6 : f32 loc(#loc5)
    }) : (tensor<64xf32, #blocked>) -> f32 loc(#loc5)
    %is = arith.cmpf ogt, %4, %cst : f32 loc(#loc5)
    %5 = scf.if %is -> (f32) {
      %7 = arith.subf %cst, %4 : f32 loc(#loc5)
      scf.yield %7 : f32 loc(#loc5)
    } else {
      scf.yield %4 : f32 loc(#loc5)
    } loc(#loc5)
    tt.store %0, %5 : !tt.ptr<f32> loc(#loc5)
    tt.return loc(#loc6)
  } loc(#loc)
} loc(#loc)
#loc1 = loc(unknown)
#loc2 = loc("/k.py":7:24)
#loc3 = loc("/k.py":9:16)
#loc4 = loc("/k.py":8:4)
#loc5 = loc("/k.py":10:4)
#loc6 = loc("/k.py":11:4)
"""


def _line(text: str, start: str) -> int:
    """The index of the first line of `text` that starts (stripped) with `start`."""
    return next(i for i, line in enumerate(text.splitlines()) if line.strip().startswith(start))


def _body(text: str) -> list[str]:
    return [line.strip() for line in text.splitlines() if line.strip()]


def test_operations_values_and_their_scopes() -> None:
    prog = read_ops(IR)
    names = [op.name for op in prog.body_ops()]
    assert names[:6] == ["arith.constant"] * 4 + ["tt.get_program_id", "tt.make_range"]
    assert names.count("tt.reduce") == 2 and names.count("tt.reduce.return") == 2 and "scf.if" in names
    assert count_ops(IR) == len(names) == 29 and not prog.unresolved
    loop = next(op for op in prog.walk() if op.name == "scf.for")
    assert [v.name for v in loop.regions[0][0].args] == ["%k", "%acc_3"]
    assert (loop.start, loop.end) == (_line(IR, "%acc = scf.for"), _line(IR, "} loc(#loc4)"))
    # the two combiners' %6 are two values, and neither is the loop body's %6
    sixes = [v for v in prog.values if v.name == "%6"]
    assert len(sixes) == 3 and all(len(prog.uses_of(v)) == 1 for v in sixes)
    assert {u.op.name for v in sixes for u in prog.uses_of(v)} == {"arith.addf", "tt.reduce.return"}
    assert [op.name for op in prog.users(loop.results[0])] == ["tt.reduce", "tt.reduce"]
    assert read_ops(IR.replace("%x_10 = tt.load", "%y = tt.load")).unresolved == [(_line(IR, "%6 = math.exp"), "%x_10")]


@pytest.mark.parametrize(("name", "head", "tail", "expected"), [
    ("arith.addf", "%0 = arith.addf %a, %b : tensor<64xf32, #blocked> loc(#l)", "", "tensor<64xf32, #blocked>"),
    ("tt.splat", "%1 = tt.splat %p : !tt.ptr<f32> -> tensor<64x!tt.ptr<f32>>", "", "tensor<64x!tt.ptr<f32>>"),
    ("tt.reduce", '%2 = "tt.reduce"(%x) <{axis = 0 : i32}> ({', "}) : (tensor<64xf32>) -> f32 loc(#l)", "f32"),
    ("arith.sitofp", "%3 = arith.sitofp %n : i32 to f32", "", "f32"),
    ("arith.cmpf", "%4 = arith.cmpf olt, %a, %b : tensor<8x64xf32, #b>", "", "tensor<8x64xi1, #b>"),
    ("tt.load", "%5 = tt.load %p, %m : tensor<64x!tt.ptr<f16>, #b>", "", "tensor<64xf16, #b>"),
    ("arith.select", "%6 = arith.select %c, %a, %b : tensor<64xi1>, tensor<64xi32>", "", "tensor<64xi32>"),
    ("scf.for", "%7 = scf.for %k = %a to %b step %c iter_args(%x = %y) -> (tensor<64xf32>)  : i32 {", "}", "tensor<64xf32>"),
    ("tt.dot", "%8 = tt.dot %a, %b, %c : tensor<16x16xf16> * tensor<16x16xf16> -> tensor<16x16xf32>", "", "tensor<16x16xf32>"),
    ("tt.get_program_id", "%9 = tt.get_program_id x : i32", "", "i32"),
])
def test_the_result_type_read_from_each_form(name: str, head: str, tail: str, expected: str) -> None:
    assert result_type(name, head, tail) == expected


def test_constants_of_a_type() -> None:
    assert constant("tensor<64xf32, #blocked>") == "arith.constant dense<0.000000e+00> : tensor<64xf32, #blocked>"
    assert constant("tensor<64xi1>", one=True) == "arith.constant dense<true> : tensor<64xi1>"
    assert constant("i1") == "arith.constant false"
    assert constant("i32") == "arith.constant 0 : i32" and constant("bf16", one=True) == "arith.constant 1.000000e+00 : bf16"
    assert constant("!tt.ptr<f32>") is None and constant("tensor<64x!tt.ptr<f32>, #blocked>") is None


def test_an_operation_goes_with_everything_that_uses_it() -> None:
    # the load's users reach the loop's yield: the loop goes, and the reductions of its result,
    # and the stores of theirs; the constants, the program id and the range stay
    out = edits.without_ops(IR, [_line(IR, "%x_10 = tt.load")])
    assert out is not None and not read_ops(out).unresolved
    assert [op.name for op in read_ops(out).body_ops()] == ["arith.constant"] * 4 + [
        "tt.get_program_id", "tt.make_range", "tt.addptr", "tt.return"]
    # a store goes alone; then what only it used is dead
    store = edits.without_ops(IR, [_line(IR, "tt.store %0, %1")])
    assert store is not None and count_ops(store) == count_ops(IR) - 1
    dead = edits.without_dead_ops(store)
    assert dead is not None and "arith.addf %arg4" not in dead and "arith.maxnumf" in dead
    assert edits.without_dead_ops(IR) is None
    assert edits.without_ops(IR, [_line(IR, "tt.return")]) is None  # never the function's terminator


def test_an_operation_replaced_by_a_constant_of_its_type() -> None:
    out = edits.with_constant(IR, _line(IR, "%acc = scf.for"))
    assert out is not None and "scf.for" not in out and "scf.yield %acc_18" not in out
    assert "    %acc = arith.constant dense<0.000000e+00> : tensor<64xf32, #blocked>" in out.splitlines()
    reduced = edits.with_constant(IR, _line(IR, '%1 = "tt.reduce"'))
    assert reduced is not None and "%1 = arith.constant 0.000000e+00 : f32" in reduced and reduced.count("tt.reduce(") == 0
    assert edits.with_constant(IR, _line(IR, "%0 = tt.addptr")) is None  # a pointer: no constant
    assert edits.with_constant(IR, _line(IR, "%cst = arith.constant")) is None


def test_a_loop_without_iterations_and_with_one() -> None:
    skipped = edits.loop_skipped(IR, _line(IR, "%acc = scf.for"))
    assert skipped is not None and "scf.for" not in skipped and '"tt.reduce"(%cst_0)' in skipped
    once = edits.loop_once(IR, _line(IR, "%acc = scf.for"))
    assert once is not None and not read_ops(once).unresolved and "scf.for" not in once
    lines = once.splitlines()
    assert "    %x_7 = tt.addptr %x_ptr, %c0_i32 : !tt.ptr<f32>, i32 loc(#loc3)" in lines  # %k: the lower bound
    assert any(line.strip().startswith("%acc_18 = arith.addf %cst_0, %6_1 ") for line in lines)  # %acc_3: the init
    # the body's %6 moved out beside the combiners' %6: renamed
    assert any(line.strip().startswith("%6_1 = math.exp") for line in lines)
    assert '"tt.reduce"(%acc_18)' in once


def test_a_branch_taken() -> None:
    then = edits.branch_taken(IR, _line(IR, "%5 = scf.if"), 0)
    assert then is not None and "scf.if" not in then and "tt.store %0, %7 " in then
    other = edits.branch_taken(IR, _line(IR, "%5 = scf.if"), 1)
    assert other is not None and "tt.store %0, %4 " in other and "arith.subf" not in other
    assert not read_ops(then).unresolved and not read_ops(other).unresolved


def test_unused_arguments_and_tidying() -> None:
    head = _line(IR, "tt.func public")
    out = edits.without_argument(IR, head, 1)
    assert out is not None and "%unused" not in out and "%x_ptr: !tt.ptr<f32>" in out and "%n: i32" in out
    assert edits.without_argument(IR, head, 0) is None  # used
    tidy = edits.tidied(IR)
    assert tidy is not None and "loc(" not in tidy and "#blocked1" not in tidy and "#blocked =" in tidy
    assert edits.tidied(tidy) is None


def test_ir_candidates_keep_every_name_defined_and_are_smaller() -> None:
    cand = Candidate(IR, {"job": {"what": {"kind": "ir", "file": "rowwise.ttgir"}, "options": {"num_warps": 4}}})
    cands = list(ir_pass.candidates(cand, "ttgir"))
    assert len(cands) > 20 and len({c.key() for c in cands}) == len(cands)
    assert all(not read_ops(c.source).unresolved for c in cands)
    assert cands[0].source == edits.tidied(IR)  # the cheapest big step first
    assert sum(1 for c in cands if cost(c) < cost(cand)) >= len(cands) - 2
    assert ir_pass.size(IR) == {"ir_ops": 29, "kernel_lines": 38}
    # a TTIR's launch configuration can be lowered; a TTGIR's is in its layouts
    ttir = list(ir_pass.candidates(cand, "ttir"))
    assert any(c.context["job"]["options"]["num_warps"] == 1 for c in ttir)
    assert not any(c.context["job"]["options"]["num_warps"] == 1 for c in cands)
