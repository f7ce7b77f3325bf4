"""For bench/tracer_gpu_check.py: three torch.compile'd functions, the first (a matmul with a
bias + ReLU epilogue) compiled with the mode in argv[2] ("default", "max-autotune",
"max-autotune-no-cudagraphs", "reduce-overhead"); each called twice (the 2nd call replays
under reduce-overhead). Saves the compiled outputs and the eager ones (argv[1])."""
import sys

import torch

mode = sys.argv[2] if len(sys.argv) > 2 else "default"
dev = "cuda" if torch.cuda.is_available() else "cpu"
torch.manual_seed(0)
half = torch.float16 if dev == "cuda" else torch.float32


def mm_epilogue(a, b, bias):
    return torch.relu(a @ b + bias)


def pointwise(x):
    return torch.sin(x) * 2 + x.cos()


def reduce_rows(x):
    return (x * x).sum(-1).sqrt()


a = torch.randn(256, 128, device=dev, dtype=half)
b = torch.randn(128, 192, device=dev, dtype=half)
bias = torch.randn(192, device=dev, dtype=half)
x = torch.randn(300, 257, device=dev)
f1 = torch.compile(mm_epilogue, mode=None if mode == "default" else mode)
f2 = torch.compile(pointwise)
f3 = torch.compile(reduce_rows)
outs = {}
for _ in range(2):
    outs["mm"] = f1(a, b, bias).clone()
    outs["pointwise"] = f2(x).clone()
    outs["reduce"] = f3(x).clone()
outs.update(eager_mm=mm_epilogue(a, b, bias), eager_pointwise=pointwise(x), eager_reduce=reduce_rows(x))
if dev == "cuda":
    torch.cuda.synchronize()
torch.save({k: v.detach().cpu() for k, v in outs.items()}, sys.argv[1])
print("done", mode, {k: tuple(v.shape) for k, v in outs.items()})
