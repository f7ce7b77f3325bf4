"""The IR tools narrowing shares (mlir/normalise.py, mlir/passes.py), on text in the style of
real dumps: Triton 3.4.0's printer reuses value names in sibling regions, 3.5's names values
after the source; a pass that only moved; a pass renamed with its argument for one backend."""

from __future__ import annotations

from tritonbisect.mlir.normalise import normalise
from tritonbisect.mlir.passes import PassDump, align, base_key, parse_dumps
from tritonbisect.narrow.compare import compare_pipelines

# the two reductions of a layernorm after Canonicalizer, as 3.4.0 prints them: both combiner
# regions name their block arguments %arg6, %arg7 and their result %40
OLD = """module {
  tt.func public @layernorm_kernel(%arg0: !tt.ptr<f16> {tt.divisibility = 16 : i32} loc("/k.py":6:0), %arg4: i32 loc("/k.py":6:0), %arg5: f32 loc("/k.py":6:0)) attributes {noinline = false} {
    %9 = tt.load %arg0 : !tt.ptr<f16>
    %10 = "tt.reduce"(%9) <{axis = 0 : i32}> ({
    ^bb0(%arg6: f32 loc(unknown), %arg7: f32 loc(unknown)):
      %40 = arith.addf %arg6, %arg7 : f32 loc(#loc32)
      tt.reduce.return %40 : f32 loc(#loc32)
    }) : (tensor<1024xf32>) -> f32 loc(#loc12)
    %11 = arith.sitofp %arg4 : i32 to f32 loc(#loc13)
    %16 = arith.mulf %11, %11 : f32
    %17 = "tt.reduce"(%16) <{axis = 0 : i32}> ({
    ^bb0(%arg6: f32 loc(unknown), %arg7: f32 loc(unknown)):
      %40 = arith.addf %arg6, %arg7 : f32 loc(#loc32)
      tt.reduce.return %40 : f32 loc(#loc32)
    }) : (tensor<1024xf32>) -> f32 loc(#loc17)
    %18 = arith.sitofp %arg4 : i32 to f32
    %19 = arith.divf %17, %18 : f32
    %20 = arith.addf %19, %arg5 : f32
    tt.return loc(#loc30)
  } loc(#loc)
} loc(#loc)
#loc = loc("/k.py":6:0)
"""

# the same IR as 3.5 prints it: values named after the source, unique in the function
NEW = """module {
  tt.func public @layernorm_kernel(%x_ptr: !tt.ptr<f16> {tt.divisibility = 16 : i32} loc("x_ptr"(#loc)), %n_cols: i32 loc("n_cols"(#loc)), %eps: f32 loc("eps"(#loc))) attributes {noinline = false} {
    %x_7 = tt.load %x_ptr : !tt.ptr<f16>
    %mean = "tt.reduce"(%x_7) <{axis = 0 : i32}> ({
    ^bb0(%mean_21: f32 loc(unknown), %mean_22: f32 loc(unknown)):
      %mean_23 = arith.addf %mean_21, %mean_22 : f32 loc(#loc32)
      tt.reduce.return %mean_23 : f32 loc(#loc32)
    }) : (tensor<1024xf32>) -> f32 loc(#loc12)
    %mean_8 = arith.sitofp %n_cols : i32 to f32 loc(#loc13)
    %var = arith.mulf %mean_8, %mean_8 : f32
    %var_12 = "tt.reduce"(%var) <{axis = 0 : i32}> ({
    ^bb0(%var_21: f32 loc(unknown), %var_22: f32 loc(unknown)):
      %var_23 = arith.addf %var_21, %var_22 : f32 loc(#loc32)
      tt.reduce.return %var_23 : f32 loc(#loc32)
    }) : (tensor<1024xf32>) -> f32 loc(#loc17)
    %var_13 = arith.sitofp %n_cols : i32 to f32
    %var_14 = arith.divf %var_12, %var_13 : f32
    %rstd = arith.addf %var_14, %eps : f32
    tt.return loc(#loc30)
  } loc(#loc)
} loc(#loc)
#loc = loc("/k.py":6:0)
"""


def test_a_name_reused_in_a_sibling_region_is_a_new_value() -> None:
    assert normalise(OLD) == normalise(NEW)
    lines = normalise(OLD).splitlines()
    combiners = [line.strip() for line in lines if line.strip().startswith("^b")]
    assert combiners == ["^b0(%v5: f32, %v6: f32):", "^b1(%v11: f32, %v12: f32):"]
    # the values after the second region go on from its numbers
    closes = [i for i, line in enumerate(lines) if line.strip().startswith("})")]
    assert lines[closes[1] + 1].strip() == "%v14 = arith.sitofp %v1 : i32 to f32"


def test_a_real_change_still_counts() -> None:
    changed = NEW.replace("%var_23 = arith.addf %var_21, %var_22", "%var_23 = arith.mulf %var_21, %var_22")
    assert normalise(OLD) != normalise(changed)
    swapped = NEW.replace("%var_14 = arith.divf %var_12, %var_13", "%var_14 = arith.divf %var_13, %var_12")
    assert normalise(OLD) != normalise(swapped)


def test_values_of_an_enclosing_region_keep_their_number_inside_nested_ones() -> None:
    loop = """tt.func @f(%arg0: i32, %arg1: f32) {
  %0 = arith.constant 0 : i32
  %1 = scf.for %arg2 = %0 to %arg0 step %0 iter_args(%arg3 = %arg1) -> (f32) : i32 {
    %2 = scf.if %c {
      %3 = arith.addf %arg3, %arg1 : f32
      scf.yield %3 : f32
    } else {
      %3 = arith.subf %arg3, %arg1 : f32
      scf.yield %3 : f32
    }
    scf.yield %2 : f32
  }
  tt.return %1 : f32
}
"""
    out = normalise(loop).splitlines()
    assert out[4].strip() == "%v8 = arith.addf %v5, %v1 : f32"
    assert out[7].strip() == "%v9 = arith.subf %v5, %v1 : f32"  # the else region's %3 is its own value
    assert out[10].strip() == "scf.yield %v6 : f32"
    assert out[12].strip() == "tt.return %v3 : f32"


def _label(key: str) -> str:
    return f"{key.title().replace('-', '')} ({key})"


def _dumps(*keys: str) -> list[PassDump]:
    return [PassDump(index=i, name=k.title().replace("-", ""), arg=k, op="builtin.module", ir=f"module {{ {k} }}")
            for i, k in enumerate(keys)]


def test_a_pass_that_only_moved_is_neither_added_nor_removed() -> None:
    a = _dumps("canonicalize", "triton-nvidia-mma-lowering", "cse", "tritongpu-coalesce", "symbol-dce")
    b = _dumps("canonicalize", "cse", "tritongpu-coalesce", "triton-nvidia-mma-lowering", "symbol-dce", "cse")
    result = align(a, b)
    assert result.moved == [_label("triton-nvidia-mma-lowering")]
    assert result.added == [_label("cse")] and result.removed == []
    assert result.pairs == [(0, 0), (2, 1), (3, 2), (4, 4)]


def test_a_pass_renamed_with_its_argument_for_one_backend_is_aligned() -> None:
    assert base_key("allocate-shared-memory-nv") == "allocate-shared-memory"
    a = _dumps("tritongpu-global-scratch-memory-allocation", "allocate-shared-memory", "convert-triton-gpu-to-llvm")
    b = _dumps("tritongpu-global-scratch-memory-allocation", "allocate-shared-memory-nv",
               "triton-nvidia-gpu-proxy-fence-insertion", "convert-triton-gpu-to-llvm")
    result = align(a, b)
    assert result.pairs == [(0, 0), (1, 1), (2, 3)]
    assert result.renamed == [(_label("allocate-shared-memory"), _label("allocate-shared-memory-nv"))]
    assert result.added == [_label("triton-nvidia-gpu-proxy-fence-insertion")]
    assert result.removed == [] and result.moved == []


def _text(passes: list[tuple[str, str, str]]) -> str:
    return "".join(f"// -----// IR Dump Before {name} ({arg}) ('builtin.module' operation) //----- //\n{ir}\n\n"
                   for name, arg, ir in passes)


def test_release_printers_do_not_make_a_difference_the_passes_did_not() -> None:
    """3.4's reused names before and after Canonicalizer against 3.5's unique ones: the first
    difference is the pass that really changed the IR, not Canonicalizer."""
    lowered = "module {\n  llvm.func @layernorm_kernel() {\n    llvm.return\n  }\n}\n"
    parent = parse_dumps(_text([("Canonicalizer", "canonicalize", OLD),
                                ("AllocateSharedMemory", "allocate-shared-memory", OLD),
                                ("ConvertTritonGPUToLLVM", "convert-triton-gpu-to-llvm", OLD),
                                ("Canonicalizer", "canonicalize", lowered)]))
    culprit = parse_dumps(_text([("Canonicalizer", "canonicalize", NEW),
                                 ("AllocateSharedMemoryNv", "allocate-shared-memory-nv", NEW),
                                 ("ConvertTritonGPUToLLVM", "convert-triton-gpu-to-llvm", NEW),
                                 ("Canonicalizer", "canonicalize", lowered.replace("llvm.return", "nvvm.barrier0\n    llvm.return"))]))
    result = compare_pipelines(parent, culprit)
    assert result["first_difference"]["pass"] == "ConvertTritonGPUToLLVM (convert-triton-gpu-to-llvm)"
    assert result["last_agreeing"] == "AllocateSharedMemoryNv (allocate-shared-memory-nv)"
    assert result["renamed"] == [["AllocateSharedMemory (allocate-shared-memory)",
                                  "AllocateSharedMemoryNv (allocate-shared-memory-nv)"]]
    assert result["added"] == result["removed"] == result["moved"] == []
