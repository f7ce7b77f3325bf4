"""Coverage program: bf16 matmul + bias + ReLU under mode="max-autotune-no-cudagraphs" (Triton
mm templates benchmarked against each other and cuBLAS); saves the output (argv[1])."""
import torch
from _common import device, save

dev = device()
torch.manual_seed(0)
dtype = torch.bfloat16 if dev == "cuda" else torch.float32
a = torch.randn(512, 256, device=dev, dtype=dtype)
b = torch.randn(256, 384, device=dev, dtype=dtype)
bias = torch.randn(384, device=dev, dtype=dtype)


@torch.compile(mode="max-autotune-no-cudagraphs")
def mm_bias_relu(a, b, bias):
    return torch.relu(a @ b + bias)


out = mm_bias_relu(a, b, bias)
out2 = mm_bias_relu(a * 0.5, b, bias)
save({"out": out, "out2": out2})
