"""Coverage program: a softmax-and-sum reduction compiled with dynamic=True, called on three
shapes (one compiled kernel set serves them all); saves the outputs (argv[1])."""
import torch
from _common import device, save

dev = device()
torch.manual_seed(0)


@torch.compile(dynamic=True)
def fn(x):
    return torch.softmax(x * 1.5, dim=-1).sum(-1) + x.amax(-1)


outs = {}
for rows, cols in ((64, 100), (96, 257), (130, 1000)):
    outs[f"out_{rows}x{cols}"] = fn(torch.randn(rows, cols, device=dev))
save(outs)
