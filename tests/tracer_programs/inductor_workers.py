"""Inductor's parallel compile, for real: a SubprocPool of compile workers (a separate
`python -m torch._inductor.compile_worker` process and its pool) compiles an Inductor kernel
for sm90 (`_worker_compile_triton`: load the generated module, precompile, prepare_for_pickle)
and pickles the CachingAutotuner back; this is where an earlier tracer's
"Can't pickle local object '_wrap_launch_metadata.<locals>.launch_metadata'" was raised.
The parent then pickles the kernel again (as Inductor's caches do), builds Inductor's own
launcher for it and launches it through the stand-in driver (fake_gpu), pickling the launch
metadata on the way.

The kernel source is what Inductor generated for `torch.sin(x) * 2 + x.cos()` on an H100 (from
a real trace), with one line changed: `triton_helpers.set_driver_to_gpu()` would look for a GPU.
"""

import functools
import os
import pickle
import sys

import torch
from _common import save
from fake_gpu import make_launchable
from torch._inductor.async_compile import _load_triton_kernel_from_source
from torch._inductor.compile_worker.subproc_pool import SubprocPool
from torch._inductor.runtime.compile_tasks import _worker_compile_triton

NAME = "triton_poi_fused_add_cos_mul_sin_0"
SOURCE = '''
import triton
import triton.language as tl

from torch._inductor.runtime import triton_helpers, triton_heuristics
from torch._inductor.runtime.triton_helpers import libdevice, math as tl_math
from torch._inductor.runtime.hints import AutotuneHint, ReductionHint, TileHint, DeviceProperties
triton_helpers.set_driver_to_gpu = lambda: None  # the only change: there is no GPU to look for

@triton_heuristics.pointwise(
    size_hints={'x': 131072},
    filename=__file__,
    triton_meta={'signature': {'in_ptr0': '*fp32', 'out_ptr0': '*fp32', 'xnumel': 'i32', 'XBLOCK': 'constexpr'}, 'device': DeviceProperties(type='cuda', index=0, multi_processor_count=132, cc=90, major=9, regs_per_multiprocessor=65536, max_threads_per_multi_processor=2048, max_threads_per_block=1024, warp_size=32), 'constants': {}, 'native_matmul': False, 'enable_fp_fusion': True, 'launch_pdl': False, 'disable_ftz': False, 'configs': [{(0,): [['tt.divisibility', 16]], (1,): [['tt.divisibility', 16]]}]},
    inductor_meta={'grid_type': 'Grid1D', 'autotune_hints': set(), 'kernel_name': 'triton_poi_fused_add_cos_mul_sin_0', 'mutated_arg_names': [], 'optimize_mem': True, 'no_x_dim': False, 'atomic_add_found': False, 'num_load': 1, 'num_store': 1, 'num_reduction': 0, 'backend_hash': '91D1D1166449D9E2EB66EB9770C9E2C3B0FEB787341F27FEB4D3F0338DA50336', 'assert_indirect_indexing': True, 'autotune_local_cache': True, 'autotune_pointwise': True, 'autotune_remote_cache': None, 'force_disable_caches': False, 'dynamic_scale_rblock': True, 'max_autotune': False, 'max_autotune_pointwise': False, 'min_split_scan_rblock': 256, 'spill_threshold': 16, 'store_cubin': False, 'deterministic': False, 'force_filter_reduction_configs': False, 'mix_order_reduction_allow_multi_stages': False, 'are_deterministic_algorithms_enabled': False, 'tiling_scores': {'x': 925200}},
    min_elem_per_thread=0
)
@triton.jit
def triton_poi_fused_add_cos_mul_sin_0(in_ptr0, out_ptr0, xnumel, XBLOCK : tl.constexpr):
    xnumel = 77100
    xoffset = tl.program_id(0) * XBLOCK
    xindex = xoffset + tl.arange(0, XBLOCK)[:]
    xmask = xindex < xnumel
    x0 = xindex
    tmp0 = tl.load(in_ptr0 + (x0), xmask)
    tmp1 = tl_math.sin(tmp0)
    tmp2 = tl.full([1], 2.0, tl.float32)
    tmp3 = tmp1 * tmp2
    tmp4 = tl_math.cos(tmp0)
    tmp5 = tmp3 + tmp4
    tl.store(out_ptr0 + (x0), tmp5, xmask)
'''


def effect(in_ptr0, out_ptr0, xnumel, XBLOCK=None):
    out_ptr0[:xnumel].copy_(torch.sin(in_ptr0[:xnumel]) * 2 + torch.cos(in_ptr0[:xnumel]))


def main():
    load_kernel = functools.partial(_load_triton_kernel_from_source, NAME, SOURCE)
    extra_env = {k: os.environ[k] for k in ("TORCHINDUCTOR_CACHE_DIR", "TRITON_CACHE_DIR") if k in os.environ}
    pool = SubprocPool(2)
    try:
        kernel, _elapsed_us = pool.submit(
            _worker_compile_triton, load_kernel, extra_env, {"use_static_triton_launcher": False}
        ).result()
    finally:
        pool.shutdown()
    print("compiled in a worker:", type(kernel).__name__, len(kernel.compile_results), "configs", flush=True)

    data = pickle.dumps(kernel)  # once more, in the parent, still prepared for pickling
    print("pickled again in the parent:", len(data) > 0, "| mentions the tracer:", b"_tritonbisect" in data)
    kernel = pickle.loads(data)
    kernel.restore_after_unpickle(None)

    torch.manual_seed(0)
    x = torch.randn(77100)
    outputs = {"x": x}
    for i, result in enumerate(kernel.compile_results):
        binary = make_launchable(result.kernel, effect)
        launcher = result.make_launcher()
        out = torch.zeros(77100)
        launcher(x, out, 77100, stream=0)
        metadata = binary.launch_metadata((1, 1, 1), 0, x, out, 77100, result.config.kwargs["XBLOCK"])
        blob = pickle.dumps(metadata) + pickle.dumps(metadata.get())
        print("config", i, result.config.kwargs, "| launch metadata pickles:", len(blob) > 0, flush=True)
        outputs[f"out{i}"] = out
    save(outputs)


if __name__ == "__main__":
    sys.exit(main())
