"""Coverage program: a two-layer MLP compiled with mode="reduce-overhead" (CUDA graphs: an
eager warm-up, a capture, then replays), called four times; saves the outputs (argv[1])."""
import torch
from _common import device, save

dev = device()
torch.manual_seed(0)
mlp = torch.nn.Sequential(torch.nn.Linear(128, 256), torch.nn.GELU(), torch.nn.LayerNorm(256),
                          torch.nn.Linear(256, 64)).to(dev)
fn = torch.compile(mlp, mode="reduce-overhead")
x = torch.randn(32, 128, device=dev)
outs = {}
with torch.no_grad():
    for i in range(4):
        outs[f"call{i}"] = fn(x + i).clone()
save(outs)
