"""The one thing a CPU cannot do: launch on a GPU.

Kernels are compiled for real (`triton.compile` for sm90 needs no GPU, and Inductor's compile
workers compile the same way). Only the driver is stood in for: loading the binary is skipped
and the launch itself is a Python function that does what Triton's launcher does around a
launch (triton/backends/nvidia/driver.py): call the launch-enter hook with the launch metadata,
run the kernel (here `effect(*args)`, the kernel's result computed with torch), call the
launch-exit hook. Everything else (CompiledKernel[grid], launch_metadata, Inductor's generated
launcher) is Triton's and Inductor's own code.
"""

import triton
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource

TARGET = GPUTarget("cuda", 90, 32)


def compile_for_gpu(fn, signature, constexprs=None):
    return triton.compile(ASTSource(fn=fn, signature=signature, constexprs=constexprs or {}), target=TARGET)


def _no_handles():
    return None


class StandInLaunch:
    """Picklable stand-in for the driver's launch function."""

    def __init__(self, effect):
        self.effect = effect

    def __call__(self, gx, gy, gz, stream, function, packed_metadata, launch_metadata, enter_hook, exit_hook, *args):
        if enter_hook is not None and launch_metadata is not None:
            enter_hook(launch_metadata)
        self.effect(*args)
        if exit_hook is not None and launch_metadata is not None:
            exit_hook(launch_metadata)


def make_launchable(kernel, effect):
    """Give a compiled kernel the stand-in driver; `effect(*args)` computes its result."""
    kernel._init_handles = _no_handles
    if isinstance(getattr(type(kernel), "run", None), property):  # Triton >= 3.4
        kernel._run = StandInLaunch(effect)
    else:
        kernel.run = StandInLaunch(effect)
    return kernel
