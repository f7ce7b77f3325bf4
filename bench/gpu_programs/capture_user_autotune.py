"""Coverage program: a user kernel with @triton.autotune and @triton.heuristics, called inside
a compiled function next to Inductor's own kernels; saves the output (argv[1])."""
import torch
import triton
import triton.language as tl
from _common import device, save


@triton.autotune(configs=[triton.Config({"BLOCK": 128}, num_warps=4), triton.Config({"BLOCK": 256}, num_warps=4)],
                 key=["n"])
@triton.heuristics({"EVEN": lambda args: args["n"] % args["BLOCK"] == 0})
@triton.jit
def scaled_add(x_ptr, y_ptr, out_ptr, n, alpha, BLOCK: tl.constexpr, EVEN: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    if EVEN:
        x = tl.load(x_ptr + offs)
        y = tl.load(y_ptr + offs)
        tl.store(out_ptr + offs, x + alpha * y)
    else:
        mask = offs < n
        x = tl.load(x_ptr + offs, mask=mask)
        y = tl.load(y_ptr + offs, mask=mask)
        tl.store(out_ptr + offs, x + alpha * y, mask=mask)


def user_op(x, y):
    out = torch.empty_like(x)
    n = x.numel()
    scaled_add[lambda meta: (triton.cdiv(n, meta["BLOCK"]),)](x, y, out, n, 0.5)
    return out


@torch.compile
def fn(x, y):
    z = user_op(x.sin(), y)
    return z.relu() * 2


dev = device()
torch.manual_seed(0)
x = torch.randn(5000, device=dev)
y = torch.randn(5000, device=dev)
save({"out": fn(x, y)})
