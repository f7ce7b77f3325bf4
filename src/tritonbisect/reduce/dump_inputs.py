#!/usr/bin/env python3
# ruff: noqa: UP031  (runs on the target's Python, which may be older than the tool's)
"""Run by a target Python: the arguments an oracle builds (its own build_state), as JSON.
argv: the oracle's repro.py, the output JSON path."""

import importlib.util
import json
import sys

import torch


def main():
    spec = importlib.util.spec_from_file_location("reduced_oracle", sys.argv[1])
    assert spec is not None and spec.loader is not None  # a .py file always has both
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    with open(mod.os.path.join(mod.HERE, "context.json"), encoding="utf-8") as fh:
        ctx = json.load(fh)
    state = mod.build_state(torch, ctx, "cpu", "recorded", {})
    out = {}
    for name, value in state["arguments"].items():
        if hasattr(value, "shape"):
            out[name] = {"tensor": value.tolist(), "dtype": str(value.dtype).replace("torch.", ""),
                         "shape": list(value.shape)}
        else:
            out[name] = {"value": value if isinstance(value, (int, float, bool, type(None))) else str(value)}
    with open(sys.argv[2], "w", encoding="utf-8") as fh:
        json.dump(out, fh)
    return 0


if __name__ == "__main__":
    sys.exit(main())
