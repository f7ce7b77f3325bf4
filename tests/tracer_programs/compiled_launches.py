"""A kernel compiled for sm90 and launched twice with `CompiledKernel[grid](...)` through the
stand-in driver (fake_gpu): the tracer's compiled-kernel path, on any Triton release."""

import sys

import torch
import triton
import triton.language as tl
from _common import save
from fake_gpu import compile_for_gpu, make_launchable


@triton.jit
def scale_kernel(x_ptr, out_ptr, n, s, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) * s, mask=mask)


def scale(x, out, n, s, BLOCK=None):
    out[:n] = x[:n] * s


def main():
    torch.manual_seed(0)
    x = torch.randn(1000)
    sig = {"x_ptr": "*fp32", "out_ptr": "*fp32", "n": "i32", "s": "fp32", "BLOCK": "constexpr"}
    kernel = make_launchable(compile_for_gpu(scale_kernel, sig, {"BLOCK": 256}), scale)
    outs = {"x": x}
    for i in range(2):
        out = torch.zeros(1000)
        kernel[(4, 1, 1)](x, out, 1000, float(i + 2), stream=0)
        outs[f"out{i}"] = out
    save(outs)


if __name__ == "__main__":
    sys.exit(main())
