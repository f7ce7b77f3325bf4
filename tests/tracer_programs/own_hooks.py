"""A program with hooks of its own that raise, then replacing Triton's launch hook outright.

Kernels are compiled for sm90 and launched with Triton's own `CompiledKernel[grid](...)`
through the stand-in driver (fake_gpu). The program's listener and launch hooks raise on
purpose; the program catches what reaches it, and ends with exit code 3.
"""

import sys

import torch
import triton
import triton.language as tl
from _common import save
from fake_gpu import compile_for_gpu, make_launchable
from triton import knobs


@triton.jit
def scale_kernel(x_ptr, out_ptr, n, s, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) * s, mask=mask)


@triton.jit
def shift_kernel(x_ptr, out_ptr, n, s, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) + s, mask=mask)


SIG = {"x_ptr": "*fp32", "out_ptr": "*fp32", "n": "i32", "s": "fp32", "BLOCK": "constexpr"}


def scale(x, out, n, s, BLOCK=None):
    out[:n] = x[:n] * s


def shift(x, out, n, s, BLOCK=None):
    out[:n] = x[:n] + s


calls = []


def my_listener(*, src, metadata, **kwargs):
    calls.append(("compiled", metadata["name"]))
    if metadata["name"] == "shift_kernel":
        raise RuntimeError("the program's listener refuses shift_kernel")


def my_enter(metadata):
    name = metadata.get()["name"]
    calls.append(("enter", name))
    if sum(1 for c in calls if c[0] == "enter") == 2:
        raise RuntimeError("the program's enter hook fails once")


def my_exit(metadata):
    calls.append(("exit", metadata.get()["name"]))
    if sum(1 for c in calls if c[0] == "exit") == 2:
        raise ValueError("the program's exit hook fails once")


def main():
    torch.manual_seed(0)
    x = torch.randn(1000)
    outs = {"x": x}
    knobs.compilation.listener = my_listener  # replaces whatever was there, as programs do
    kernel = make_launchable(compile_for_gpu(scale_kernel, SIG, {"BLOCK": 256}), scale)
    try:
        compile_for_gpu(shift_kernel, SIG, {"BLOCK": 256})
    except RuntimeError as exc:
        print("caught:", exc)
    knobs.compilation.listener = None
    shifter = make_launchable(compile_for_gpu(shift_kernel, SIG, {"BLOCK": 256}), shift)
    knobs.runtime.launch_enter_hook.add(my_enter)
    knobs.runtime.launch_exit_hook.add(my_exit)
    for i in range(4):
        out = torch.zeros(1000)
        try:
            (kernel if i % 2 == 0 else shifter)[(4, 1, 1)](x, out, 1000, float(i + 1), stream=0)
        except (RuntimeError, ValueError) as exc:
            print("launch", i, "caught:", exc)
        outs[f"out{i}"] = out
    knobs.runtime.launch_enter_hook = my_enter  # the program takes the hook over entirely
    for i in range(4, 6):
        out = torch.zeros(1000)
        kernel[(4, 1, 1)](x, out, 1000, float(i + 1), stream=0)
        outs[f"out{i}"] = out
    print("calls:", calls)
    save(outs)
    return 3


if __name__ == "__main__":
    sys.exit(main())
