"""Oracles of Inductor-generated kernels and of code-built autotuners, end to end on the CPU.

A program in Inductor's style (its runtime imports, `set_driver_to_gpu()` at module level, a
`@triton_heuristics.pointwise(..., filename=__file__, triton_meta=..., inductor_meta=...)`
kernel using libdevice, tl_math and triton_helpers) and a `@triton.autotune` whose configs come
from a comprehension over module globals, with `prune_configs_by`, `reset_to_zero` and
`restore_value`, is traced by `tritonbisect trace` under TRITON_INTERPRET=1 (torch 2.13's CPU
wheel ships `torch._inductor.runtime`; Inductor's own autotuner cannot run on the CPU, so the
program stands in a pass-through decorator for it, and a CPU timer for the autotuner's
benchmark). `repro` writes the oracles, which pass against the traced outputs and catch a
planted change.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
import torch

from compile_support import run_oracle
from gpu_traces import WAYS, gpu_traces  # noqa: F401 - the fixture (the tests' argument redefines it)
from oracle_support import cli, needs_torch_triton
from tritonbisect.core.errors import InputError
from tritonbisect.oracles.runtime import generate_oracle
from tritonbisect.oracles.selfcheck import Job, interpreter_env, run_batch, run_one

pytestmark = [needs_torch_triton]

INDUCTOR_KERNELS = '''
import triton
import triton.language as tl

from torch._inductor.runtime import triton_helpers, triton_heuristics
from torch._inductor.runtime.triton_helpers import libdevice, math as tl_math
from torch._inductor.runtime.hints import AutotuneHint, ReductionHint, TileHint, DeviceProperties
triton_helpers.set_driver_to_gpu()

@triton_heuristics.pointwise(
    size_hints={'x': 1024},
    filename=__file__,
    triton_meta={'signature': {'in_ptr0': '*fp32', 'out_ptr0': '*fp32', 'xnumel': 'i32', 'XBLOCK': 'constexpr'},
                 'device': DeviceProperties(type='cuda', index=0, multi_processor_count=132, cc=90, major=9,
                                            regs_per_multiprocessor=65536, max_threads_per_multi_processor=2048,
                                            max_threads_per_block=1024, warp_size=32),
                 'constants': {}, 'configs': [{(0,): [['tt.divisibility', 16]]}]},
    inductor_meta={'grid_type': 'Grid1D', 'autotune_hints': set(), 'kernel_name': 'triton_poi_fused_gelu_0',
                   'mutated_arg_names': []},
    min_elem_per_thread=0
)
@triton.jit
def triton_poi_fused_gelu_0(in_ptr0, out_ptr0, xnumel, XBLOCK : tl.constexpr):
    xoffset = tl.program_id(0) * XBLOCK
    xindex = xoffset + tl.arange(0, XBLOCK)[:]
    xmask = xindex < xnumel
    x0 = xindex
    tmp0 = tl.load(in_ptr0 + (x0), xmask)
    tmp2 = tmp0 * 0.5
    tmp4 = tmp0 * 0.7071067811865476
    tmp5 = libdevice.erf(tmp4)
    tmp7 = tmp5 + 1.0
    tmp8 = tmp2 * tmp7
    tmp9 = triton_helpers.maximum(tmp8, tl_math.abs(tmp0) * -1.0)
    tl.store(out_ptr0 + (x0), tmp9, xmask)
'''

AUTOTUNED_KERNELS = '''
import triton
import triton.language as tl

SIZES = [(32, 1), (64, 2), (128, 4)]
MIN_BLOCK = 64


def keep_big(configs, named_args, **kwargs):
    return [c for c in configs if c.kwargs["BLOCK"] >= MIN_BLOCK]


def cpu_bench(fn, quantiles=None, **kwargs):
    fn()  # the interpreter has no GPU timer: every config takes "1 ms"
    return [1.0, 1.0, 1.0]


@triton.autotune(
    configs=[triton.Config({"BLOCK": b}, num_warps=w) for b, w in SIZES],
    key=["n"],
    prune_configs_by={"early_config_prune": keep_big},
    reset_to_zero=["acc_ptr"],
    restore_value=["y_ptr"],
    do_bench=cpu_bench,
)
@triton.jit
def sum_kernel(y_ptr, acc_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.atomic_add(acc_ptr, tl.sum(tl.load(y_ptr + offs, mask=mask, other=0.0), axis=0))
'''

PROGRAM = '''
import sys
import torch
import triton
from torch._inductor.runtime import triton_heuristics, triton_helpers

# Inductor's autotuner needs a GPU: stand in a pass-through decorator (the oracle drops it anyway)
triton_heuristics.pointwise = lambda **meta: (lambda fn: fn)
triton_helpers.set_driver_to_gpu = lambda: None
# libdevice's functions are stubs only a GPU backend resolves; the oracle's shim does the same
triton_helpers.libdevice = triton.language.math
sys.path.insert(0, sys.argv[1])
import ind_kernels, tuned_kernels

torch.manual_seed(0)
x = torch.randn(1000)
out = torch.empty(1000)
ind_kernels.triton_poi_fused_gelu_0[(triton.cdiv(1000, 128),)](x, out, 1000, XBLOCK=128, num_warps=4)
expected = torch.maximum(torch.nn.functional.gelu(x), -x.abs())
assert torch.allclose(out, expected, atol=1e-6), (out - expected).abs().max()

y = torch.rand(3000)
acc = torch.full((1,), 5.0)  # the autotuner zeroes it after benchmarking, before the real launch
tuned_kernels.sum_kernel[lambda m: (triton.cdiv(3000, m["BLOCK"]),)](y, acc, 3000)
assert torch.allclose(acc, y.sum().reshape(1), rtol=1e-5), (acc, y.sum())
print("program done")
'''


@pytest.fixture(scope="module")
def traced(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("inductor")
    (root / "ind_kernels.py").write_text(INDUCTOR_KERNELS)
    (root / "tuned_kernels.py").write_text(AUTOTUNED_KERNELS)
    (root / "prog.py").write_text(PROGRAM)
    proc = cli("trace", "--out", str(root / "t"), "--", sys.executable, str(root / "prog.py"), str(root),
               env=interpreter_env(), timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "program done" in proc.stdout
    return root


def _repro(root: Path, kernel: str) -> Path:
    out = root / f"o_{kernel}"
    proc = cli("repro", str(root / "t"), "--kernel", kernel, "--out", str(out))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return out


def test_inductor_kernel_oracle_passes_and_catches_a_change(traced: Path) -> None:
    out = _repro(traced, "triton_poi_fused_gelu_0")
    ctx = json.loads((out / "context.json").read_text())
    assert ctx["kernel"]["inductor"] is True
    assert ctx["kernel"]["dropped_decorators"] == ["triton_heuristics.pointwise"]
    assert ctx["kernel"]["pinned_config"]["XBLOCK"] == 128 and ctx["kernel"]["pinned_config"]["num_warps"] == 4
    script = (out / "repro.py").read_text()
    assert "filename=__file__" not in script and "DeviceProperties" not in script  # decorator context gone
    assert "if _tb_on_gpu():\n    try:\n        triton_helpers.set_driver_to_gpu()" in script  # guarded, not dropped

    env = interpreter_env()
    good = run_one(Job("good", out / "repro.py", [], traced / "ind_good.json"), env=env)
    assert good.status == "pass", good.reason
    assert good.data["reference"] == "outputs recorded in the trace after the original launch"
    full = run_one(Job("rec", out / "repro.py", ["--record-golden", str(out / "golden.pt")], traced / "ind_rec.json"),
                   env=env)
    assert full.status == "pass", full.reason
    again = run_one(Job("again", out / "repro.py", ["--repeat", "3"], traced / "ind_again.json"), env=env)
    assert again.status == "pass", again.reason

    (out / "bad.py").write_text(script.replace("tmp5 + 1.0", "tmp5 + 1.001"))
    bad = run_one(Job("bad", out / "bad.py", [], traced / "ind_bad.json"), env=env)
    assert (bad.status, bad.rc) == ("mismatch", 1), bad.reason


def test_comprehension_autotune_oracle_resets_and_pins(traced: Path) -> None:
    out = _repro(traced, "sum_kernel")
    ctx = json.loads((out / "context.json").read_text())
    assert ctx["kernel"]["dropped_decorators"] == ["triton.autotune"]
    assert ctx["kernel"]["pinned_config"]["BLOCK"] in (64, 128)  # early_config_prune kept only these
    assert ctx["kernel"]["reset_to_zero"] == ["acc_ptr"] and ctx["kernel"]["restore_value"] == ["y_ptr"]
    script = (out / "repro.py").read_text()
    assert "SIZES" not in script and "keep_big" not in script and "cpu_bench" not in script

    env = interpreter_env()
    good = run_one(Job("good", out / "repro.py", [], traced / "sum_good.json"), env=env)
    assert good.status == "pass", good.reason
    rec = run_one(Job("rec", out / "repro.py", ["--record-golden", str(out / "golden.pt")], traced / "sum_rec.json"),
                  env=env)
    assert rec.status == "pass", rec.reason
    golden = torch.load(out / "golden.pt")
    # the fresh vector starts acc at random data: zeroed like the autotuner does, acc is y's sum
    assert torch.allclose(golden["acc_ptr#fresh"], golden["y_ptr#fresh"].sum().reshape(1), rtol=1e-5)

    (out / "bad.py").write_text(script.replace("other=0.0), axis=0)", "other=0.0), axis=0) * 2"))
    bad = run_one(Job("bad", out / "bad.py", [], traced / "sum_bad.json"), env=env)
    assert (bad.status, bad.rc) == ("mismatch", 1), bad.reason


def test_module_level_code_that_cannot_be_kept_is_one_line(tmp_path: Path) -> None:
    """An Inductor kernel calling a helper imported from a user module still gets the one-line refusal."""
    from tritonbisect.oracles.kernel_source import extract_kernel_source

    code = INDUCTOR_KERNELS.replace("import triton\n", "import triton\nfrom mylib import helper\n", 1).replace(
        "tmp9 = triton_helpers", "tmp9 = helper(tmp8) + triton_helpers")
    start = code.splitlines().index("@triton_heuristics.pointwise(") + 1
    with pytest.raises(InputError, match=r"needs 'helper' from module 'mylib'"):
        extract_kernel_source({"code": code, "file_path": "k.py", "function_start_line": start,
                               "function_end_line": start + 30}, "triton_poi_fused_gelu_0")
    assert generate_oracle  # the CLI path is covered by test_bad_input_is_one_line in test_oracle_reader


# The real H100 traces (tests/data/gpu_traces): torch 2.11's Inductor kernels and the autotuned
# kernel of the chain, traced by tritonbisect (outputs after the launch recorded) and tritonparse 0.6
LN = "triton_per_fused_add_gelu_native_layer_norm_0"
SOFTMAX = "triton_per_fused__softmax_exp_mul_prepare_softmax_online_sub_sum_0"
REAL = [("inductor_ln_gelu", LN), ("inductor_ln_gelu", SOFTMAX), ("autotune_chain", "sum_kernel")]


def _real_repro(trace: Path, kernel: str, out: Path, *args: str) -> dict:
    proc = cli("repro", str(trace), "--kernel", kernel, "--out", str(out), *args)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return json.loads((out / ("compile_context.json" if "compile" in args else "context.json")).read_text())


@pytest.mark.parametrize("way", WAYS)
def test_real_inductor_and_autotuned_kernels_pass_on_the_cpu(gpu_traces: Path, way: str,  # noqa: F811
                                                              tmp_path: Path) -> None:
    """The oracles of the real traces run under TRITON_INTERPRET=1 with the CPU torch 2.13: against
    the GPU's outputs where the trace has them (tritonbisect), else against their own record."""
    jobs = []
    # the softmax kernel's max2 is a reduction with an Inductor combine function, which the
    # interpreter would run element by element (two minutes): the oracle's shim makes it numpy's
    for program, kernel in REAL:
        out = tmp_path / kernel
        ctx = _real_repro(gpu_traces / program / way / "trace", kernel, out)
        if program == "inductor_ln_gelu":
            assert ctx["kernel"]["inductor"] is True
            assert ctx["kernel"]["dropped_decorators"] == ["triton_heuristics.persistent_reduction"]
            assert ctx["kernel"]["pinned_config"]["num_warps"] > 0
        else:
            assert ctx["kernel"]["dropped_decorators"] == ["triton.autotune"]
            assert ctx["kernel"]["reset_to_zero_declared"] == ["acc_ptr"]
        has_after = any(a.get("after") for a in ctx["args"])
        assert has_after == (way == "tritonbisect")
        if has_after:
            jobs.append(Job(kernel, out / "repro.py", [], out / "gpu.json"))
        else:
            jobs.append(Job(kernel + "/rec", out / "repro.py", ["--record-golden", str(out / "golden.pt")],
                            out / "rec.json"))
            jobs.append(Job(kernel, out / "repro.py", ["--repeat", "2"], out / "again.json"))
    results = run_batch(jobs, env=interpreter_env(), timeout=600)
    for job in jobs:
        assert results[job.id].status == "pass", (job.id, results[job.id].reason)
    if way == "tritonbisect":
        for job in jobs:
            assert results[job.id].data["reference"] == "outputs recorded in the trace after the original launch"


@pytest.mark.parametrize("way", WAYS)
def test_real_inductor_and_autotuned_kernels_compile_for_the_h100(gpu_traces: Path, way: str,  # noqa: F811
                                                                   tmp_path: Path) -> None:
    """`--mode compile` on a machine with no GPU: Inductor's module-level set_driver_to_gpu()
    finds no GPU backend there, which must not stop the cross-compile for sm90."""
    for program, kernel in REAL:
        out = tmp_path / kernel
        ctx = _real_repro(gpu_traces / program / way / "trace", kernel, out, "--mode", "compile")
        proc, result = run_oracle(out)
        assert result.get("status") == "pass", (kernel, result.get("reason"), proc.stderr[-2000:])
        assert result["target"] == {"backend": "cuda", "arch": 90, "warp_size": 32}
        assert result["stats"]["regs"] > 0 and result["stats"]["sass.total"] > 0
        assert result["stats"]["shared"] == ctx["compilation"]["traced"]["shared"], kernel


HOOKED = '''
import triton
import triton.language as tl
from mylib import make_configs, zero_out, log_done

CONFIGS = make_configs()


@triton.autotune(configs=CONFIGS + [triton.Config({"BLOCK": 16}, pre_hook=zero_out)], key=["n"],
                 prune_configs_by={"early_config_prune": lambda c, a, **k: c, "perf_model": None, "top_k": 2},
                 reset_to_zero=["acc_ptr"], restore_value=("y_ptr",), pre_hook=zero_out, post_hook=log_done)
@triton.heuristics({"EVEN": lambda args: args["n"] % args["BLOCK"] == 0})
@triton.jit
def hooked(y_ptr, acc_ptr, n, BLOCK: tl.constexpr, EVEN: tl.constexpr):
    tl.atomic_add(acc_ptr, tl.sum(tl.load(y_ptr + tl.arange(0, BLOCK)), axis=0))
'''


def test_hooks_and_configs_from_module_code_are_dropped_with_one_note_each() -> None:
    """Configs from a function of a user module, prune_configs_by, heuristics: dropped (the launch
    pins them), so `mylib` is never needed. Hooks are code: one note line each, and a user pre_hook
    takes the place of reset_to_zero, as in Triton's Autotuner."""
    from tritonbisect.oracles.kernel_source import extract_kernel_source

    start = HOOKED.splitlines().index("@triton.autotune(configs=CONFIGS + [triton.Config({\"BLOCK\": 16}, "
                                      "pre_hook=zero_out)], key=[\"n\"],") + 1
    ks = extract_kernel_source({"code": HOOKED, "file_path": "k.py", "function_start_line": start,
                                "function_end_line": start + 8}, "hooked")
    assert ks.dropped_decorators == ["triton.autotune", "triton.heuristics"]
    assert "mylib" not in ks.text and "CONFIGS" not in ks.text
    assert ks.tuning.reset_to_zero == [] and ks.tuning.restore_value == ["y_ptr"]
    notes = ks.tuning.notes
    assert len(notes) == 4 and all("\n" not in n for n in notes)
    assert notes[0].startswith("autotune pre_hook=zero_out is code the oracle does not run")
    assert notes[1].startswith("reset_to_zero (acc_ptr) not applied: the autotuner runs the user's pre_hook")
    assert notes[2].startswith("autotune post_hook=log_done runs after the launch and is not replayed")
    assert notes[3].startswith("a triton.Config pre_hook is code the oracle does not run")


REDUCE_CHECK = '''
import torch
import triton
import triton.language as tl

triton_helpers = _tb_inductor_import("torch._inductor.runtime", "triton_helpers")
assert type(triton_helpers).__name__ == "_TbInterpretedHelpers"


@triton.jit
def reduce(x_ptr, mx_ptr, mn_ptr, R: tl.constexpr):
    x = tl.load(x_ptr + tl.arange(0, 4)[:, None] * R + tl.arange(0, R)[None, :])
    tl.store(mx_ptr + tl.arange(0, 4), triton_helpers.max2(x, 1))
    tl.store(mn_ptr + tl.arange(0, 4), triton_helpers.min2(x, 1))


for dtype in (torch.float32, torch.float16, torch.int32):
    x = (torch.randn(4, 64) * 100).to(dtype)
    if dtype.is_floating_point:
        x[1, 7] = float("nan")  # Inductor's maximum/minimum propagate NaN (numpy's nanmax would not)
    mx, mn = torch.empty(4, dtype=dtype), torch.empty(4, dtype=dtype)
    reduce[(1,)](x, mx, mn, R=64)
    assert torch.equal(mx.nan_to_num(), x.amax(1).nan_to_num()) and torch.equal(mn.nan_to_num(), x.amin(1).nan_to_num())
    assert (mx.isnan().tolist(), mn.isnan().tolist()) == ([False, dtype.is_floating_point, False, False],) * 2
print("reductions ok")
'''


def test_interpreted_max2_min2_are_numpy_fast_and_propagate_nan(tmp_path: Path) -> None:
    import subprocess

    from tritonbisect.oracles.inductor_source import SHIM

    (tmp_path / "check.py").write_text(SHIM + REDUCE_CHECK)
    proc = subprocess.run([sys.executable, str(tmp_path / "check.py")], capture_output=True, text=True,
                          env=interpreter_env(), timeout=300)
    assert "reductions ok" in proc.stdout, proc.stdout + proc.stderr[-3000:]
