"""Three kernels in sequence; the 2nd is autotuned with configs built by a comprehension,
reset_to_zero on its accumulator and tl.atomic_add."""
import torch
import triton
import triton.language as tl
from _common import device, save

torch.manual_seed(0)
dev = device()


@triton.jit
def scale_kernel(x_ptr, y_ptr, n, s, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=mask) * s, mask=mask)


@triton.autotune(
    configs=[triton.Config({"BLOCK": b}, num_warps=w) for b, w in [(128, 2), (256, 4), (1024, 8)]],
    key=["n"],
    reset_to_zero=["acc_ptr"],
)
@triton.jit
def sum_kernel(y_ptr, acc_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.atomic_add(acc_ptr, tl.sum(tl.load(y_ptr + offs, mask=mask, other=0.0), axis=0))


@triton.jit
def finalize_kernel(acc_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    mean = tl.load(acc_ptr) / n
    tl.store(out_ptr + offs, tl.full((BLOCK,), 0.0, tl.float32) + mean)


n = 100_000
x = torch.rand(n, device=dev)
y = torch.empty_like(x)
acc = torch.zeros(1, device=dev)
out = torch.empty(16, device=dev)
scale_kernel[(triton.cdiv(n, 1024),)](x, y, n, 3.0, BLOCK=1024)
sum_kernel[lambda meta: (triton.cdiv(n, meta["BLOCK"]),)](y, acc, n)
finalize_kernel[(1,)](acc, out, n, BLOCK=16)
save({"y": y, "acc": acc, "out": out, "reference_mean": (x * 3.0).mean().reshape(1)})
