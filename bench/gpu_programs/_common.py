"""Shared by the GPU programs: where to save outputs (argv[1] or $TB_OUTPUTS)."""
import os
import sys

import torch


def device() -> str:
    return "cuda" if torch.cuda.is_available() else "cpu"


def save(outputs: dict) -> None:
    path = sys.argv[1] if len(sys.argv) > 1 else os.environ.get("TB_OUTPUTS")
    if torch.cuda.is_available():
        torch.cuda.synchronize()
    if path:
        torch.save({k: v.detach().cpu() for k, v in outputs.items()}, path)
    print("outputs:", {k: (tuple(v.shape), str(v.dtype)) for k, v in outputs.items()})
