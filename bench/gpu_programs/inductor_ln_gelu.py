"""torch.compile (default mode): Linear -> LayerNorm -> GELU -> residual in fp16, and a bf16
softmax(x) * y summed over the last dim. Inductor generates the Triton kernels."""
import torch
from _common import device, save

torch.manual_seed(0)
dev = device()


class Block(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = torch.nn.Linear(256, 256)
        self.ln = torch.nn.LayerNorm(256)

    def forward(self, x):
        return x + torch.nn.functional.gelu(self.ln(self.lin(x)))


def softmax_dot(x, y):
    return (torch.softmax(x, -1) * y).sum(-1)


block = Block().to(dev).half()
x = torch.randn(64, 256, device=dev, dtype=torch.float16)
a = torch.randn(128, 512, device=dev, dtype=torch.bfloat16)
b = torch.randn(128, 512, device=dev, dtype=torch.bfloat16)
with torch.no_grad():
    out_block = torch.compile(block)(x)
    out_sm = torch.compile(softmax_dot)(a, b)
save({"block": out_block, "softmax_dot": out_sm})
