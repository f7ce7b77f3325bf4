"""tl.max over a block holding a NaN: NaN, as torch.max gives (exit 0), or not (exit 1).

Run under TRITON_INTERPRET=1 with torch 2.13.0 (CPU). Triton 3.2.0 .. 3.4.0 give NaN; from
3.5.0 on the interpreter's reduction drops the NaN and returns 3.0.
"""

import os
import sys

os.environ.setdefault("TRITON_INTERPRET", "1")

import torch  # noqa: E402
import triton  # noqa: E402
import triton.language as tl  # noqa: E402


@triton.jit
def block_max(x, out, N: tl.constexpr):
    i = tl.arange(0, N)
    tl.store(out, tl.max(tl.load(x + i), axis=0))


x = torch.tensor([1.0, float("nan"), 3.0, 2.0])
out = torch.empty(1)
block_max[(1,)](x, out, N=4)
want = torch.max(x)
print(f"triton {triton.__version__}: tl.max = {out.item()}, torch.max = {want.item()}")
sys.exit(0 if torch.isnan(out).item() == torch.isnan(want).item() else 1)
