"""Host-side TensorDescriptor arguments (TMA) and a tuple argument.

Under TRITON_INTERPRET=1 the kernels run in Triton's interpreter; otherwise they are compiled
for sm90 and launched with `CompiledKernel[grid](...)` through the stand-in driver (fake_gpu),
so both of the tracer's paths see the same arguments.
"""

import os
import sys

import torch
import triton
import triton.language as tl
from _common import save
from triton.tools.tensor_descriptor import TensorDescriptor

INTERPRET = os.environ.get("TRITON_INTERPRET") == "1"


@triton.jit
def tma_scale(a_desc, c_desc, s, BM: tl.constexpr, BN: tl.constexpr):
    pm = tl.program_id(0)
    pn = tl.program_id(1)
    tile = a_desc.load([pm * BM, pn * BN])
    c_desc.store([pm * BM, pn * BN], tile * s)


@triton.jit
def tuple_axpy(ptrs, n, alpha, BLOCK: tl.constexpr):
    x_ptr, y_ptr, out_ptr = ptrs
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, alpha * tl.load(x_ptr + offs, mask=mask) + tl.load(y_ptr + offs, mask=mask), mask=mask)


def tma_effect(a_desc, c_desc, s, BM=None, BN=None):
    c_desc.base.copy_(a_desc.base * s)


def tuple_effect(ptrs, n, alpha, BLOCK=None):
    x, y, out = ptrs
    out[:n] = alpha * x[:n] + y[:n]


def main():
    torch.manual_seed(0)
    a = torch.randn(64, 48)
    c = torch.zeros(64, 48)
    x, y, out = torch.randn(300), torch.randn(300), torch.zeros(300)
    a_desc = TensorDescriptor.from_tensor(a, [32, 16])
    c_desc = TensorDescriptor.from_tensor(c, [32, 16])
    if INTERPRET:
        tma_scale[(2, 3)](a_desc, c_desc, 1.5, BM=32, BN=16)
        tuple_axpy[(3,)]((x, y, out), 300, 0.25, BLOCK=128)
    else:
        from fake_gpu import compile_for_gpu, make_launchable

        tma = make_launchable(compile_for_gpu(
            tma_scale, {"a_desc": "tensordesc<fp32[32,16]>", "c_desc": "tensordesc<fp32[32,16]>", "s": "fp32",
                        "BM": "constexpr", "BN": "constexpr"}, {"BM": 32, "BN": 16}), tma_effect)
        tma[(2, 3, 1)](a_desc, c_desc, 1.5, 32, 16, stream=0)
        tup = make_launchable(compile_for_gpu(
            tuple_axpy, {"ptrs": ("*fp32", "*fp32", "*fp32"), "n": "i32", "alpha": "fp32", "BLOCK": "constexpr"},
            {"BLOCK": 128}), tuple_effect)
        tup[(3, 1, 1)]((x, y, out), 300, 0.25, 128, stream=0)
    print("tma matches:", torch.allclose(c, a * 1.5), "| tuple matches:", torch.allclose(out, 0.25 * x + y))
    save({"a": a, "c": c, "x": x, "y": y, "out": out})


if __name__ == "__main__":
    sys.exit(main())
