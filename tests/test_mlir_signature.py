"""The one reader of a function signature in Triton's MLIR (mlir/signature.py), on text in the
style each Triton printer writes, and the compile-oracle parameters it gives."""

from __future__ import annotations

from tritonbisect.mlir.signature import (
    kernel_function,
    location_name,
    read_signature,
    read_signatures,
    split_top,
)
from tritonbisect.oracles.compile import spec

# Triton 3.4.0 (tritonparse's example trace): SSA names %argN, file locations written inline
OLD = """module {
  tt.func public @add_kernel(%arg0: !tt.ptr<f32> {tt.divisibility = 16 : i32} loc("/scratch/t/test_add.py":21:0), %arg1: !tt.ptr<f32> {tt.divisibility = 16 : i32} loc("/scratch/t/test_add.py":21:0), %arg2: !tt.ptr<f32> {tt.divisibility = 16 : i32} loc("/scratch/t/test_add.py":21:0), %arg3: i32 {tt.divisibility = 16 : i32} loc("/scratch/t/test_add.py":21:0)) attributes {noinline = false} {
    %c1024_i32 = arith.constant 1024 : i32 loc(#loc1)
    tt.return loc(#loc14)
  } loc(#loc)
} loc(#loc)
#loc = loc("/scratch/t/test_add.py":21:0)
#loc1 = loc(unknown)
"""

# a TTGIR with aliased file locations, a private helper, address spaces, layouts and a
# descriptor whose shared layout nests braces inside angle brackets
TTGIR = """#blocked = #ttg.blocked<{sizePerThread = [4], threadsPerWarp = [32], warpsPerCTA = [4], order = [0]}>
#loc = loc("/k.py":7:0)
#loc3 = loc("x"(#loc))
module attributes {"ttg.num-warps" = 4 : i32, ttg.target = "cuda:90"} {
  tt.func private @"triton.language.standard.zeros__i32"(%arg0: i32 loc(#loc)) -> tensor<128xi32, #blocked> {
    tt.return
  } loc(#loc)
  tt.func public @k(%x: !tt.ptr<f16, 1> {tt.divisibility = 16 : i32, tt.pointer_range = 32 : i32} loc(#loc3), %d: !tt.tensordesc<tensor<64x64xf16, #ttg.nvmma_shared<{swizzlingByteWidth = 128, transposed = false}>>> loc("d"(#loc)), %n: i64 {tt.divisibility = 8 : i32} loc(callsite(#loc at #loc3)), %f: f32 loc(#loc)) attributes {noinline = false} {
    tt.return loc(#loc)
  } loc(#loc)
}
"""


def test_triton_3_4_signature_has_types_and_attributes_but_no_names() -> None:
    sig = read_signature(OLD, "add_kernel")
    assert sig is not None and not sig.named and sig.visibility == "public"
    assert [(a.var, a.type, a.name, a.divisible_16) for a in sig.args] == [
        ("arg0", "!tt.ptr<f32>", None, True), ("arg1", "!tt.ptr<f32>", None, True),
        ("arg2", "!tt.ptr<f32>", None, True), ("arg3", "i32", None, True),
    ]  # fmt: skip
    assert sig.args[0].attrs == {"tt.divisibility": "16 : i32"}


def test_aliases_layouts_address_spaces_and_quoted_symbols() -> None:
    sigs = read_signatures(TTGIR)
    assert [s.function for s in sigs] == ["triton.language.standard.zeros__i32", "k"]
    assert kernel_function(TTGIR) == "k" and kernel_function(OLD) == "add_kernel"
    k = sigs[1]
    assert [(a.var, a.name) for a in k.args] == [("x", "x"), ("d", "d"), ("n", None), ("f", None)]
    assert k.args[0].type == "!tt.ptr<f16, 1>"
    assert k.args[0].attrs == {"tt.divisibility": "16 : i32", "tt.pointer_range": "32 : i32"}
    assert k.args[1].type.endswith("transposed = false}>>>")
    assert not k.args[2].divisible_16  # 8 is not 16
    assert [spec.mlir_to_signature(a.type) for a in k.args] == ["*fp16", "tensordesc<fp16[64, 64]>", "i64", "fp32"]


def test_locations_and_top_level_splitting() -> None:
    aliases = {"#loc": '"/k.py":1:0', "#loc2": '"y"(#loc)', "#loc3": "#loc2"}
    assert location_name('"y"(#loc)', aliases) == "y"
    assert location_name('"y"', aliases) == "y"
    assert location_name("#loc3", aliases) == "y"  # an alias of an alias
    assert location_name('"/k.py":1:0', aliases) is None and location_name("#loc", aliases) is None
    assert location_name("#loc9", aliases) is None and location_name("unknown", aliases) is None
    assert split_top('a: tensor<4x4xf32, #b<{x = [1, 2]}>>, b: i32 loc("p, q":1:2)') == [
        "a: tensor<4x4xf32, #b<{x = [1, 2]}>>", 'b: i32 loc("p, q":1:2)']


def test_unnamed_arguments_are_the_parameters_left_after_specialization() -> None:
    """3.4's `%argN`: the TTIR holds the parameters that are neither constexpr nor recorded
    constants, in order; the compile oracle types them from there."""
    meta = {"src_constants": {"(4,)": 1024}, "src_attrs": {"(0,)": [["tt.divisibility", 16]],
                                                           "(3,)": [["tt.divisibility", 16]]}}
    params, sources = spec.derive_params("add_kernel", ["a_ptr", "b_ptr", "c_ptr", "n_elements", "BLOCK_SIZE"],
                                         ["BLOCK_SIZE"], meta, OLD, None)
    assert "TTIR signature" in sources
    assert [(p["name"], p.get("type"), p.get("divisible_16")) for p in params] == [
        ("a_ptr", "*fp32", True), ("b_ptr", "*fp32", False), ("c_ptr", "*fp32", False),
        ("n_elements", "i32", True), ("BLOCK_SIZE", None, None),
    ]  # fmt: skip
    assert params[-1] == {"name": "BLOCK_SIZE", "kind": "constexpr", "value": 1024}


def test_the_ir_oracle_shows_the_signature_the_reader_gives() -> None:
    assert spec.ir_signature_line(OLD, "add_kernel") == "arg0:*fp32/16, arg1:*fp32/16, arg2:*fp32/16, arg3:i32/16"
    assert spec.ir_signature_line(TTGIR, "k") == "x:*fp16/16, d:tensordesc<fp16[64, 64]>, n:i64, f:fp32"
    assert spec.ir_signature_line(TTGIR, "nope") == "no function @nope in the IR"
