"""Coverage program: cumsum and logcumsumexp (Inductor scan kernels); saves the outputs (argv[1])."""
import torch
from _common import device, save

dev = device()
torch.manual_seed(0)


@torch.compile
def fn(x):
    return torch.cumsum(x, dim=-1), torch.logcumsumexp(x, dim=-1)


x = torch.randn(32, 512, device=dev)
c, lc = fn(x)
save({"cumsum": c, "logcumsumexp": lc})
