"""Kernels in sequence: scale -> add (reads scale's output) -> row sum (reads add's output),
then the host changes x in place and scale runs on it again (a host write between launches that
the replay must reload). Outputs go to argv[1] when given; argv[2] repeats the whole chain
(4 launches per round). Runs on the GPU when there is one and TRITON_INTERPRET is not set."""

import os
import sys

import torch
import triton
import triton.language as tl


@triton.jit
def scale_kernel(x_ptr, out_ptr, alpha, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, x * alpha, mask=mask)


@triton.jit
def add_kernel(a_ptr, b_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    a = tl.load(a_ptr + offs, mask=mask)
    b = tl.load(b_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, a + b, mask=mask)


@triton.jit
def rowsum_kernel(x_ptr, out_ptr, cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    mask = offs < cols
    x = tl.load(x_ptr + row * cols + offs, mask=mask, other=0.0)
    tl.store(out_ptr + row, tl.sum(x, axis=0))


def main() -> None:
    torch.manual_seed(0)
    for _ in range(int(sys.argv[2]) if len(sys.argv) > 2 else 1):
        outputs = chain()
    if len(sys.argv) > 1:
        torch.save(outputs, sys.argv[1])


def chain() -> dict:
    gpu = torch.cuda.is_available() and os.environ.get("TRITON_INTERPRET", "0") in ("", "0")
    torch.set_default_device("cuda" if gpu else "cpu")
    rows, cols = 8, 50
    n = rows * cols
    x = torch.randn(n)
    scaled = torch.empty(n)
    scale_kernel[(triton.cdiv(n, 128),)](x, scaled, 0.5, n, BLOCK=128)
    b = torch.empty(n)
    b.uniform_(-1, 1)  # written by the host between launches
    summed = torch.empty(n)
    add_kernel[(triton.cdiv(n, 128),)](scaled, b, summed, n, BLOCK=128)
    rsum = torch.empty(rows)
    rowsum_kernel[(rows,)](summed, rsum, cols, BLOCK=64)
    x.mul_(2.0)  # the host writes x between launches
    scale_kernel[(triton.cdiv(n, 128),)](x, scaled, 0.25, n, BLOCK=128)
    return {"scaled": scaled.cpu(), "summed": summed.cpu(), "rsum": rsum.cpu()}


if __name__ == "__main__":
    main()
