"""Units of the compile oracle: trace facts -> job parameters, codegen statistics, thresholds,
outcome classification and option validation. Pure functions, no compiler."""

from __future__ import annotations

import pytest

from tritonbisect.core.errors import InputError
from tritonbisect.mlir.signature import read_signature
from tritonbisect.options.bisect_options import bisect_settings
from tritonbisect.oracles.compile import spec
from tritonbisect.oracles.compile.standalone import tb_codegen, tb_runner

TTIR = """#loc = loc("/k.py":41:0)
#loc5 = loc("a_ptr"(#loc))
module {
  tt.func public @k(%a_ptr: !tt.ptr<f16> {tt.divisibility = 16 : i32} loc("a_ptr"(#loc)), %n: i32 loc("n"(#loc)), %d: !tt.tensordesc<tensor<64x32xbf16>> loc("d"(#loc)), %d_0: i32 loc("d"(#loc)), %t: !tt.ptr<f32> {tt.divisibility = 16 : i32} loc("t"(#loc)), %t_1: !tt.ptr<f32> loc("t"(#loc)), %s: f32 loc(#loc5)) attributes {noinline = false} {
    tt.return loc(#loc)
  } loc(#loc)
} loc(#loc)
"""


def test_ttir_signature_is_read_with_names_types_and_divisibility() -> None:
    sig = read_signature(TTIR, "k")
    assert sig is not None and sig.named and sig.visibility == "public"
    assert [(a.name, a.type, a.divisible_16) for a in sig.args] == [
        ("a_ptr", "!tt.ptr<f16>", True),
        ("n", "i32", False),
        ("d", "!tt.tensordesc<tensor<64x32xbf16>>", False),
        ("d", "i32", False),
        ("t", "!tt.ptr<f32>", True),
        ("t", "!tt.ptr<f32>", False),
        ("a_ptr", "f32", False),  # a #loc alias resolves to the name it stands for
    ]
    assert read_signature(TTIR, "other") is None


@pytest.mark.parametrize(("mlir", "sig"), [
    ("!tt.ptr<f16>", "*fp16"), ("!tt.ptr<i8>", "*i8"), ("!tt.ptr<f8E4M3FN>", "*fp8e4nv"),
    ("i64", "i64"), ("f32", "fp32"), ("!tt.tensordesc<tensor<64x32xbf16>>", "tensordesc<bf16[64, 32]>"),
    ("!tt.ptr<!tt.ptr<f16>>", None),
])  # fmt: skip
def test_mlir_types_map_to_signature_types(mlir: str, sig: str | None) -> None:
    assert spec.mlir_to_signature(mlir) == sig


def test_recorded_attrs_in_the_three_formats_triton_used() -> None:
    names = ["a", "b", "c"]
    new = {"src_attrs": {"(0,)": [["tt.divisibility", 16]], "(1, 2)": [["tt.pointer_range", 32]]}}
    assert spec.recorded_attrs(new, names) == {(0,): [["tt.divisibility", 16]], (1, 2): [["tt.pointer_range", 32]]}
    v32 = {"src_attrs": {"arg_properties": {"tt.divisibility": [0, 2], "tt.equal_to": [1]}, "cls": "AttrsDescriptor"}}
    assert spec.recorded_attrs(v32, names) == {(0,): [["tt.divisibility", 16]], (2,): [["tt.divisibility", 16]],
                                               (1,): [["tt.equal_to", 1]]}
    v30 = {"src_attrs": {"divisible_by_16": [2], "equal_to_1": []}}
    assert spec.recorded_attrs(v30, names) == {(2,): [["tt.divisibility", 16]]}
    assert spec.recorded_constants({"src_constants": {"(2,)": 64, "b": 1}}, names) == {(2,): 64, (1,): 1}
    assert spec.recorded_attrs({}, names) is None


def test_targets_from_metadata_and_from_the_command_line() -> None:
    assert spec.traced_target({"target": {"backend": "cuda", "arch": 90, "warp_size": 32}}) == \
        {"backend": "cuda", "arch": 90, "warp_size": 32}
    assert spec.traced_target({"target": ["hip", "gfx942", 64]}) == {"backend": "hip", "arch": "gfx942", "warp_size": 64}
    assert spec.traced_target({"target": "GPUTarget(backend='cuda', arch=80, warp_size=32)"})["arch"] == 80
    assert spec.traced_target({"backend_name": "cuda", "arch": "sm90a"})["arch"] == 90
    assert spec.traced_target({"target": {"backend": "interpreter", "arch": "cpu"}}) is None
    assert spec.parse_target_text("cuda:80") == {"backend": "cuda", "arch": 80, "warp_size": 32}
    assert spec.parse_target_text("hip:gfx942") == {"backend": "hip", "arch": "gfx942", "warp_size": 64}
    for bad in ("cuda", "cuda:sm90", "metal:1", "cuda:90:x"):
        with pytest.raises(InputError, match="--compile-target"):
            spec.parse_target_text(bad)


def test_parameters_from_recorded_specialization_ttir_and_launch() -> None:
    class Launch:
        index = 0
        args = {
            "a_ptr": {"type": "tensor", "dtype": "torch.uint8", "data_ptr": "0x7f0000000010"},
            "n": {"type": "int", "value": 3000000000},
            "one": {"type": "int", "value": 1},
            "BLOCK": {"type": "int", "value": 128},
            "f": {"type": "float", "value": 0.5},
        }

    ttir = ("module {\n  tt.func public @k(%a_ptr: !tt.ptr<i8> {tt.divisibility = 16 : i32} loc(\"a_ptr\"(#loc)), "
            "%n: i64 loc(\"n\"(#loc)), %f: f32 loc(\"f\"(#loc))) attributes {noinline = false} {\n")
    meta = {"src_constants": {"(2,)": 1, "(3,)": 128}, "src_attrs": {"(0,)": [["tt.divisibility", 16]]}}
    params, sources = spec.derive_params("k", ["a_ptr", "n", "one", "BLOCK", "f"], ["BLOCK"], meta, ttir, Launch())
    assert params == [
        {"name": "a_ptr", "kind": "pointer", "type": "*u8", "divisible_16": True},  # u8 from the launch
        {"name": "n", "kind": "int", "type": "i64", "value": 3000000000, "divisible_16": False, "equal_to_1": False},
        {"name": "one", "kind": "int", "type": "i32", "divisible_16": False, "equal_to_1": True},
        {"name": "BLOCK", "kind": "constexpr", "value": 128},
        {"name": "f", "kind": "float", "type": "fp32"},
    ]
    assert len(sources) == 3
    # an interpreter trace: no specialization recorded, no TTIR: all from the launch
    params, _ = spec.derive_params("k", ["a_ptr", "n", "one", "BLOCK", "f"], ["BLOCK"],
                                   {"src_constants": {}, "src_attrs": {}}, None, Launch())
    assert params[0]["divisible_16"] is True and params[2]["equal_to_1"] is True
    with pytest.raises(InputError, match="constexpr 'BLOCK'"):
        spec.derive_params("k", ["BLOCK"], ["BLOCK"], {}, None, None)


def test_ptx_and_sass_counts_drop_modifiers() -> None:
    ptx = """
.visible .entry k(
)
{
	.reg .b32 	%r<4>;
	@%p1 ld.global.v4.b32 { %r1, %r2, %r3, %r4 }, [ %rd1 + 0 ];
	wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16 {%r1}, %rd2, %rd3, 1, 1, 1, 0, 1;
	cp.async.cg.shared.global [ %r5 + 0 ], [ %rd4 + 0 ], 0x10, %r6;
	st.local.b32 [%rd5], %r1;  // spill
$L__BB0_1:
	ret;
}
"""
    assert tb_codegen.ptx_counts(ptx) == {"ptx.ld.global": 1, "ptx.wgmma": 1, "ptx.cp.async": 1,
                                          "ptx.st.local": 1, "ptx.ret": 1, "ptx.total": 5}
    sass = """
        /*0000*/                   LDC R1, c[0x0][0x28] ;
        /*0010*/              @!P0 LDG.E.128 R4, desc[UR6][R2.64] ;
        /*0020*/                   HGMMA.64x64x16.F32 gdesc[UR4], RZ, !UPT ;
        /*0030*/                   NOP ;
        /*0040*/                   STL [R1], R2 ;
"""
    assert tb_codegen.sass_counts(sass) == {"sass.LDC": 1, "sass.LDG": 1, "sass.HGMMA": 1, "sass.STL": 1,
                                            "sass.total": 4}


def test_amdgcn_statistics() -> None:
    text = """
	v_mfma_f32_32x32x8_f16 a[0:15], v[2:3], v[4:5], a[0:15]
	global_load_dwordx4 v[0:3], v[4:5], off
	s_nop 0
	scratch_store_dword off, v1, s0
; NumVgprs: 128
; NumSgprs: 40
; ScratchSize: 16
    .vgpr_spill_count: 4
"""
    stats = tb_codegen.amdgcn_counts(text)
    assert stats["regs"] == 128 and stats["sgprs"] == 40 and stats["spills"] == 4 and stats["vgpr_spills"] == 4
    assert stats["amdgcn.v_mfma"] == 1 and stats["amdgcn.scratch_store"] == 1 and stats["amdgcn.total"] == 3


def test_thresholds_decide_which_differences_count() -> None:
    golden = {"regs": 100, "spills": 0, "ptx.wgmma": 64, "ptx.add": 10, "ptx.total": 500, "sass.total": 400}
    now = {"regs": 108, "spills": 12, "ptx.wgmma": 0, "ptx.add": 30, "ptx.total": 520, "sass.total": 401}
    diffs = {d.metric: d for d in tb_codegen.compare(golden, now, tb_codegen.parse_thresholds(None))}
    assert diffs["spills"].over and diffs["spills"].describe() == "spills 0 → 12"
    assert diffs["ptx.wgmma"].over and diffs["ptx.wgmma"].describe() == "PTX wgmma instructions 64 → 0 (-100%)"
    assert not diffs["regs"].over  # +8% is within the default 10%
    assert not diffs["ptx.add"].over  # reported, not checked by default
    assert diffs["regs"].describe() == "registers 100 → 108 (+8%)"
    only = tb_codegen.parse_thresholds(["regs=5%"])
    assert {d.metric for d in tb_codegen.compare(golden, now, only) if d.over} == {"regs"}
    # a family one side could not measure (no SASS tool) is not a change
    assert "sass.total" not in {d.metric for d in tb_codegen.compare({"sass.total": 3}, {}, only)}
    for bad in (["regs"], ["regs=x"], ["=3"], ["regs=-1"]):
        with pytest.raises(ValueError):
            tb_codegen.parse_thresholds(bad)


def test_outcome_classification_blames_the_right_party() -> None:
    def status(child, returncode, phase, stderr=""):
        return tb_runner.classify(child, returncode, phase, stderr, False, 60)[0]

    assert status({"ok": True}, 0, "done") == "pass"
    assert status({"ok": False, "phase": "compile", "error_type": "CompilationError", "message": "x"}, 3,
                  "done") == "compile_error"
    assert status({"ok": False, "phase": "bridge", "error_type": "KeyError", "message": "x"}, 3, "done") == "usage_error"
    assert status({"ok": False, "phase": "compile", "harness_error": True, "message": "x"}, 3, "done") == "usage_error"
    assert status({"ok": False, "phase": "import", "error_type": "ImportError", "message": "x"}, 3,
                  "done") == "env_unusable"
    assert status({"ok": False, "phase": "compile", "error_type": "Exception",
                   "message": "ROCm linker /opt/rocm/llvm/bin/ld.lld not found"}, 3, "done") == "usage_error"
    assert status({"ok": False, "phase": "bridge", "harness_error": True, "unsupported": True,
                   "message": "tuple arguments need Triton 3.3 or later"}, 3, "done") == "env_unusable"
    assert status({"ok": False, "phase": "load", "error_type": "TypeError", "message": "jit() got an unexpected"},
                  3, "done") == "compile_error"
    assert status({"ok": False, "phase": "load", "harness_error": True, "unsupported": True,
                   "error_type": "HelperMissing", "message": "the kernel imports libdevice"}, 3, "done") == "env_unusable"
    assert status(None, -6, "compile") == "crash"
    assert status(None, 1, "compile", "LLVM ERROR: Cannot select") == "crash"
    assert status(None, -11, "import") == "env_unusable"
    assert status(None, -9, "collect") == "usage_error"
    assert tb_runner.classify(None, -9, "compile", "", True, 5)[0] == "timeout"
    reason = tb_runner.classify(None, -6, "compile", "foo\npython: X.cpp:12: Assertion `a' failed.\n", False, 5)[1]
    assert "SIGABRT" in reason and "Assertion `a' failed" in reason


def test_bisect_options_of_the_compile_oracle() -> None:
    settings = bisect_settings(repro="t", kernel="k", oracle="compile", check=("codegen",),
                               codegen_thresholds=("spills=0",), compile_target="cuda:80")
    test = settings.test
    assert (test.oracle, test.check, test.codegen_thresholds, test.compile_target) == \
        ("compile", ["codegen"], ["spills=0"], "cuda:80")
    assert bisect_settings(test="true").test.oracle == "runtime"
    with pytest.raises(InputError, match="--oracle compile goes with --repro"):
        bisect_settings(test="true", oracle="compile")
    with pytest.raises(InputError, match="go with --oracle compile"):
        bisect_settings(repro="t", kernel="k", check=("codegen",))
    with pytest.raises(InputError, match="--codegen-threshold goes with --check codegen"):
        bisect_settings(repro="t", kernel="k", oracle="compile", codegen_thresholds=("spills=0",))
    with pytest.raises(InputError, match="METRIC=LIMIT"):
        bisect_settings(repro="t", kernel="k", oracle="compile", check=("codegen",), codegen_thresholds=("spills",))
    with pytest.raises(InputError, match="--compile-target"):
        bisect_settings(repro="t", kernel="k", oracle="compile", compile_target="cuda")
