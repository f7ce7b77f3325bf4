"""Shared by the tracer test programs: outputs go to argv[1] (torch.save of a dict)."""

import sys


def save(outputs):
    import torch

    torch.save({k: v.detach().cpu() if hasattr(v, "detach") else v for k, v in outputs.items()}, sys.argv[1])
    print("saved", sorted(outputs), flush=True)
