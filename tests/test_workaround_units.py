"""The workaround search's pure parts: which changes it tries and in what order, how changes
combine, what a passing change costs, and the text a user pastes."""

from __future__ import annotations

from tritonbisect.workaround import changes as ch
from tritonbisect.workaround.cost import codegen_cost, distance
from tritonbisect.workaround.render import paste


def _ctx(options=None, target=None, configs=None, constexprs=None):
    params = [{"name": "x_ptr", "kind": "pointer", "type": "*fp32"}]
    params += [{"name": k, "kind": "constexpr", "value": v} for k, v in (constexprs or {}).items()]
    return {"job": {"what": {"kind": "python", "params": params},
                    "target": target or {"backend": "cuda", "arch": 90, "warp_size": 32},
                    "options": options if options is not None else {"num_warps": 4, "num_stages": 3}},
            "configs": configs or []}


def _described(changes):
    return [c.describe() for c in changes]


def test_launch_options_nearest_first_within_the_thread_limit():
    got = _described(ch.option_changes(_ctx({"num_warps": 8, "num_stages": 4})))
    warps = [d for d in got if d.startswith("num_warps")]
    assert warps == ["num_warps=4", "num_warps=16", "num_warps=2", "num_warps=32", "num_warps=1"]
    assert [d for d in got if d.startswith("num_stages")] == ["num_stages=3", "num_stages=5", "num_stages=2",
                                                               "num_stages=1"]
    assert "num_ctas=2" in got and "enable_fp_fusion=False" in got and "maxnreg=128" in got
    # a 64-wide wavefront: 16 warps make 1024 threads; no num_ctas or maxnreg off NVIDIA
    amd = _described(ch.option_changes(_ctx({"num_warps": 4}, {"backend": "hip", "arch": "gfx942", "warp_size": 64})))
    assert "num_warps=16" in amd and "num_warps=32" not in amd
    assert not any(d.startswith(("num_ctas", "maxnreg")) for d in amd) and "waves_per_eu=2" in amd
    assert not any(d.startswith("num_ctas") for d in _described(ch.option_changes(
        _ctx(target={"backend": "cuda", "arch": 89, "warp_size": 32}))))


def test_recorded_configs_whole_then_their_block_sizes_one_at_a_time():
    configs = [{"constexprs": {"BLOCK_M": 64, "BLOCK_N": 64}, "options": {"num_warps": 4, "num_stages": 2},
                "from": "decorator"},
               {"constexprs": {"BLOCK_M": 128, "BLOCK_N": 32}, "options": {"num_warps": 8}, "from": "trace line 7"}]
    ctx = _ctx({"num_warps": 8, "num_stages": 3}, configs=configs, constexprs={"BLOCK_M": 128, "BLOCK_N": 128})
    got = _described(ch.config_changes(ctx))
    assert got == ["config 1 (decorator): BLOCK_M=64, BLOCK_N=64, num_stages=2, num_warps=4",
                   "config 2 (trace line 7): BLOCK_N=32",
                   "BLOCK_M=64", "BLOCK_N=64", "BLOCK_N=32"]
    applied = ch.apply(ctx, ch.config_changes(ctx)[0])
    assert applied["job"]["options"] == {"num_warps": 4, "num_stages": 2}
    assert {p["name"]: p.get("value") for p in applied["job"]["what"]["params"]} == \
        {"x_ptr": None, "BLOCK_M": 64, "BLOCK_N": 64}
    assert ctx["job"]["options"] == {"num_warps": 8, "num_stages": 3}  # the original is left alone


def test_switches_are_the_bad_tritons_own_flipped_and_never_a_dump():
    facts = ch.Facts(knobs={"AMDGCN_USE_BUFFER_OPS": True, "TRITON_KERNEL_DUMP": False, "DISABLE_PTXAS_OPT": False},
                     cache_invalidating=["DISABLE_LLVM_OPT", "DISABLE_MMA_V3", "MLIR_ENABLE_DUMP", "TRITON_F32_DEFAULT",
                                         "AMDGCN_USE_BUFFER_OPS", "TRITON_DEFAULT_FP_FUSION"],
                     llvm_flags=["disable-lsr"], ptxas={"path": "/bad/ptxas", "version": "12.9"})
    cuda = _described(ch.switch_changes(_ctx(), facts, None, False))
    assert cuda == ["DISABLE_MMA_V3=1", "DISABLE_PTXAS_OPT=1", "DISABLE_LLVM_OPT=1", "DISABLE_LLVM_OPT=disable-lsr"]
    hip = _described(ch.switch_changes(_ctx(target={"backend": "hip", "arch": "gfx942", "warp_size": 64}), facts,
                                       None, False))
    assert "AMDGCN_USE_BUFFER_OPS=0" in hip and not any("MMA_V3" in d or "PTXAS" in d for d in hip)
    good = ch.Facts(ptxas={"path": "/good/ptxas", "version": "12.4"})
    with_ptxas = ch.switch_changes(_ctx(), facts, good, True)
    assert dict(with_ptxas[-1].env) == {"TRITON_PTXAS_PATH": "/good/ptxas"}
    same = ch.Facts(ptxas={"path": "/good/ptxas", "version": "12.9"})
    assert all("TRITON_PTXAS_PATH" not in dict(c.env) for c in ch.switch_changes(_ctx(), facts, same, True))


def test_pairs_hold_a_change_that_moved_the_failure_and_never_set_one_thing_twice():
    a, b, c = (ch.Change(options=(("num_stages", 2),)), ch.Change(options=(("num_warps", 4),)),
               ch.Change(env=(("DISABLE_LLVM_OPT", "1"),)))
    stages1 = ch.Change(options=(("num_stages", 1),))
    got = ch.pairs([a], [a, b, c, stages1], 10)
    assert _described(got) == ["num_stages=2, num_warps=4", "num_stages=2, DISABLE_LLVM_OPT=1"]
    assert ch.pairs([], [a, b, c], 10) == []
    assert a.plus(stages1) is None


def test_cost_counts_only_what_got_worse_against_the_reference():
    ref = {"regs": 100, "spills": 0, "ptx.wgmma": 64, "sass.total": 1000, "shared": 65536, "num_stages": 3}
    assert codegen_cost(ref, dict(ref)) == (0.0, [])
    cost, moved = codegen_cost(ref, {**ref, "regs": 90, "shared": 32768, "num_stages": 2})
    assert (cost, moved) == (0.0, [])  # fewer registers, less shared memory: no worse
    cost, moved = codegen_cost(ref, {**ref, "spills": 4, "ptx.wgmma": 32})
    assert cost == 4.5 and moved == ["spills 0 → 4", "PTX wgmma 64 → 32"]
    assert distance("out_of_resources", [{"needed": 131072, "allowed": 101376}], []) < \
        distance("out_of_resources", [{"needed": 163840, "allowed": 101376}], [])
    assert distance("crash", [], []) == float("inf") and distance("pass", [], []) == 0.0


def test_paste_a_launch_argument_a_config_or_an_environment_variable():
    change = ch.Change(options=(("num_stages", 2),))
    assert paste(change, "k", _ctx()) == ["k[grid](..., num_stages=2)"]
    configs = [{"constexprs": {"BLOCK_M": 64}, "options": {"num_warps": 4}, "from": "decorator"}]
    tuned = _ctx({"num_warps": 8, "num_stages": 3}, configs=configs, constexprs={"BLOCK_M": 128, "EVEN": True})
    assert paste(change, "k", tuned) == ["triton.Config({'BLOCK_M': 128}, num_warps=8, num_stages=2)"]
    assert paste(ch.Change(env=(("DISABLE_LLVM_OPT", "disable-lsr"),)), "k", _ctx()) == \
        ["export DISABLE_LLVM_OPT=disable-lsr"]


SOURCE = '''
import triton
import triton.language as tl

MORE = [triton.Config({"BLOCK": 32}, num_warps=2)]


@triton.autotune(
    configs=[
        triton.Config({"BLOCK": 128, "EVEN": False}, num_warps=8, num_stages=1, pre_hook=lambda nargs: None),
        triton.Config(kwargs={"BLOCK": 64}, num_warps=4),
        triton.Config({"BLOCK": n}, num_warps=4) if True else None,
    ] + [triton.Config({"BLOCK": b}) for b in (16,)],
    key=["n"],
)
@triton.jit
def kernel(x, n, BLOCK: tl.constexpr, EVEN: tl.constexpr):
    pass


@triton.autotune(configs=MORE, key=[])
@triton.jit
def other(x, BLOCK: tl.constexpr):
    pass
'''


def test_the_decorator_configs_are_read_not_evaluated():
    from tritonbisect.oracles.compile.configs import decorator_configs

    source = {"code": SOURCE, "function_start_line": 1}
    # a literal list of literal Configs: the lambda hook is left out, a comprehension or a
    # conditional expression is not read (it would have to be evaluated)
    assert decorator_configs(source, "kernel", ["BLOCK", "EVEN"]) == []  # `[...] + [...]` is not a literal list
    plain = {"code": SOURCE.replace(" + [triton.Config({\"BLOCK\": b}) for b in (16,)]", ""),
             "function_start_line": 1}
    assert decorator_configs(plain, "kernel", ["BLOCK", "EVEN"]) == [
        {"constexprs": {"BLOCK": 128, "EVEN": False}, "options": {"num_warps": 8, "num_stages": 1}, "from": "decorator"},
        {"constexprs": {"BLOCK": 64}, "options": {"num_warps": 4}, "from": "decorator"},
    ]
    assert decorator_configs(source, "other", ["BLOCK"]) == [
        {"constexprs": {"BLOCK": 32}, "options": {"num_warps": 2}, "from": "decorator"}]
    assert decorator_configs(None, "kernel", ["BLOCK"]) == []


def test_what_lowers_the_exceeded_limit_goes_first():
    ctx = _ctx({"num_warps": 8, "num_stages": 4}, constexprs={"BLOCK_N": 128})
    tried = [ch.Change(options=(("num_warps", 4),)), ch.Change(options=(("num_stages", 5),)),
             ch.Change(constexprs=(("BLOCK_N", 64),)), ch.Change(options=(("num_stages", 3),)),
             ch.Change(options=(("maxnreg", 128),))]
    shared = [{"limit": "shared memory", "needed": 131072, "allowed": 101376}]
    assert _described(ch.prefer(tried, ctx, shared)) == ["BLOCK_N=64", "num_stages=3", "num_warps=4",
                                                          "num_stages=5", "maxnreg=128"]
    threads = [{"limit": "threads", "needed": 512, "allowed": 256}]
    assert _described(ch.prefer(tried, ctx, threads))[:2] == ["num_warps=4", "maxnreg=128"]
    assert ch.prefer(tried, ctx, []) == tried
