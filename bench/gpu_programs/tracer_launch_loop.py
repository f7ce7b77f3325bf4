"""For bench/tracer_gpu_check.py: the cost of one launch. Launches an add kernel on N
elements (argv[2]) REPEAT times (argv[3]) after a warm-up, three rounds, and prints, as JSON
on the last line, the best round's wall time per launch in microseconds (each round ends
with a device sync)."""
import json
import sys
import time

import torch
import triton
import triton.language as tl

dev = "cuda" if torch.cuda.is_available() else "cpu"


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) + tl.load(y_ptr + offs, mask=mask), mask=mask)


def sync():
    if dev == "cuda":
        torch.cuda.synchronize()


n, repeat = int(sys.argv[2]), int(sys.argv[3])
torch.manual_seed(0)
x, y = torch.randn(n, device=dev), torch.randn(n, device=dev)
out = torch.empty_like(x)
grid = (triton.cdiv(n, 1024),)
for _ in range(3):  # compile, and warm up
    add_kernel[grid](x, y, out, n, BLOCK=1024)
sync()
rounds = []
for _ in range(3):
    start = time.perf_counter()
    for _ in range(repeat):
        add_kernel[grid](x, y, out, n, BLOCK=1024)
    sync()
    rounds.append((time.perf_counter() - start) / repeat * 1e6)
per_launch_us = min(rounds)
torch.save({"out": out.cpu()}, sys.argv[1])
print(json.dumps({"n": n, "repeat": repeat, "per_launch_us": per_launch_us, "rounds_us": rounds}))
