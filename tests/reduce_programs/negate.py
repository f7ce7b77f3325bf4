"""A kernel whose float negation Triton 3.6.0 compiles to `sub.f32` (0 - x) and 3.9.0 to a
sign-bit `xor` (PTX for cuda:90): a codegen statistic (ptx.sub) that moves between releases.
Traced by the reduce tests for a compile oracle."""

import torch
import triton
import triton.language as tl


@triton.jit
def negate(x_ptr, y_ptr, out_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    y = tl.load(y_ptr + offs)
    tl.store(out_ptr + offs, x * y + 1.0)
    tl.store(out_ptr + BLOCK + offs, -x)


x = torch.randn(64)
y = torch.randn(64)
out = torch.zeros(128)
negate[(1,)](x, y, out, BLOCK=64)
print(float(out.sum()))
