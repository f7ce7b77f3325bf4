"""Pickles what Triton holds globally (the launch hooks, the compilation listener, the
interpreter's launcher); when traced, reloads the tracer's own
modules in the middle (as a program reloading modules would) and pickles them all again."""

import importlib
import pickle
import sys

import mp_kernels
import torch
from _common import save
from triton import knobs
from triton.runtime import interpreter


def pickles():
    state = (knobs.runtime.launch_enter_hook, knobs.runtime.launch_exit_hook, knobs.compilation.listener,
             interpreter.GridExecutor.__call__)
    return pickle.loads(pickle.dumps(state)) is not None


def main():
    torch.manual_seed(0)
    x, y = torch.randn(100), torch.randn(100)
    print("pickles before:", pickles())
    outs = {"before": mp_kernels.axpy(x, y, 1.0)}
    tracer = [name for name in sorted(sys.modules) if name.startswith("_tritonbisect_tracer.")]
    for name in tracer:
        importlib.reload(sys.modules[name])
    print("pickles after a reload:", pickles())
    outs["after"] = mp_kernels.axpy(x, y, 2.0)
    outs["one"] = mp_kernels.axpy(x[:1], y[:1], 3.0)
    save(outs)


if __name__ == "__main__":
    sys.exit(main())
