"""flash-attn's Triton backward pass (flash_attn/flash_attn_triton.py of the flash-attn sdist,
given as argv[1]) run the way triton-lang/triton#7268 runs it: batch 1, 4 heads, head dim 64,
sequence length 16. Traced under TRITON_INTERPRET=1 by the limits and workaround tests.

That issue: from Triton 3.3 on, `_bwd_kernel` needs more shared memory than an L4 or A10G
block may have (sm_89, sm_86), and the launch raises OutOfResources.
"""

import importlib.util
import re
import sys
from pathlib import Path

import torch

text = Path(sys.argv[1]).read_text(encoding="utf-8")
# the file's Triton 2.0 spelling tl.dot(a, b, trans_b=True), as Triton 3 takes it (the issue's
# first step: "fix the usage of trans_b/trans_a")
text = re.sub(r"tl\.dot\((.+), (\w+), trans_b=True\)", r"tl.dot(\1, tl.trans(\2))", text)
text = re.sub(r"tl\.dot\((.+), (\w+), trans_a=True\)", r"tl.dot(tl.trans(\1), \2)", text)
Path("flash_attn_triton.py").write_text(text, encoding="utf-8")
spec = importlib.util.spec_from_file_location("flash_attn_triton", "flash_attn_triton.py")
module = importlib.util.module_from_spec(spec)
sys.modules["flash_attn_triton"] = module
spec.loader.exec_module(module)
# the interpreter cannot benchmark: the autotuner keeps the first of its two configs
module._bwd_kernel.configs = module._bwd_kernel.configs[:1]

torch.manual_seed(0)
batch, seqlen, heads, dim = 1, 16, 4, 64
q, k, v, o, do = (torch.randn(batch, seqlen, heads, dim, dtype=torch.float16) for _ in range(5))
lse = torch.randn(batch, heads, 128, dtype=torch.float32)
dq, dk, dv = (torch.empty_like(q) for _ in range(3))
module._flash_attn_backward(do, q, k, v, o, lse, dq, dk, dv)
print(float(dk.float().abs().sum()))
