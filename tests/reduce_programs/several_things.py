"""A kernel that computes several things; one of them (tl.clamp of a NaN) changed behaviour
under TRITON_INTERPRET=1 between Triton 3.6.0 (NaN stays NaN) and 3.9.0 (clamped to the low
bound). Traced by the reduce tests, then reduced to the lines that show the change."""

import torch
import triton
import triton.language as tl


@triton.jit
def _scale(v, s):
    return v * s


@triton.jit
def several_things(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    y = tl.load(y_ptr + offs, mask=mask, other=0.0)
    s = _scale(x, 2.0) + y
    t = tl.where(x > 0, x, -x)
    c = tl.clamp(x, -0.5, 0.5)
    u = tl.exp(-t) * y
    tl.store(out_ptr + offs, u + s, mask=mask)
    tl.store(out_ptr + n + offs, c + y, mask=mask)
    tl.store(out_ptr + 2 * n + offs, t * 3.0 - s, mask=mask)


def main():
    n = 1000
    g = torch.Generator().manual_seed(1)
    x = torch.randn(n, generator=g)
    x[::37] = float("nan")
    y = torch.randn(n, generator=g)
    out = torch.zeros(3 * n)
    several_things[(triton.cdiv(n, 128),)](x, y, out, n, BLOCK=128)
    print(float(out[n:2 * n].nan_to_num().sum()))


main()
