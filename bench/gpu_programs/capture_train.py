"""Coverage program: a training step, forward and backward compiled (AOTAutograd caches both
graphs: a warm run loads them from its cache); saves the loss and the gradients (argv[1])."""
import torch
from _common import device, save

dev = device()
torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(64, 128), torch.nn.GELU(), torch.nn.LayerNorm(128),
                            torch.nn.Linear(128, 8)).to(dev)
compiled = torch.compile(model)
x = torch.randn(32, 64, device=dev)
y = torch.randint(0, 8, (32,), device=dev)
loss = torch.nn.functional.cross_entropy(compiled(x), y)
loss.backward()
save({"loss": loss.detach(), **{f"grad_{name}": p.grad for name, p in model.named_parameters()}})
