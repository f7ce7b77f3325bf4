"""A kernel with a loop and two reductions of its result. Cross-compiled for cuda:90, the same
TTGIR (or TTIR) gets 5 PTX barriers from Triton 3.6.0 and 3 from 3.9.0 (ptx.bar, a codegen
statistic that moves between releases). Traced by the reduce tests for a compile oracle and,
through the IR 3.6.0 makes of it, for IR oracles."""

import torch
import triton
import triton.language as tl


@triton.jit
def rowwise(x_ptr, w_ptr, out_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for k in range(0, n, BLOCK):
        m = k + offs < n
        x = tl.load(x_ptr + pid * n + k + offs, mask=m, other=0.0)
        w = tl.load(w_ptr + k + offs, mask=m, other=0.0)
        acc += tl.exp(x) * w - x / 3.0
    tl.store(out_ptr + pid, tl.sum(acc, axis=0))
    tl.store(out_ptr + 64 + pid, -tl.max(acc, axis=0))


x = torch.randn(4, 300)
w = torch.randn(300)
out = torch.zeros(128)
rowwise[(4,)](x, w, out, 300, BLOCK=64)
print(float(out.sum()))
