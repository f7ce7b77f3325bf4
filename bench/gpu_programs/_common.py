"""Shared by the GPU programs: where to save outputs (argv[1] or $TB_OUTPUTS)."""
import json
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
    print("cache:", json.dumps(cache_counters(), sort_keys=True))


def cache_counters() -> dict:
    """This process's hits and misses of AOTAutograd's and Inductor's FX graph caches."""
    try:
        from torch._dynamo.utils import counters
    except ImportError:
        return {}
    return {f"{group}.{key}": n for group in ("aot_autograd", "inductor") for key, n in counters[group].items()
            if "cache" in key}
