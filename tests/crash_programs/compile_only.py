"""Compile a kernel for a GPU this machine does not have, and nothing else: no launch, no GPU,
no torch (triton.compile with a GPUTarget, the way Triton's own compile-only reproducers do).
Traced by tests/test_compile_crash_chain.py, whose trace then holds a compilation and no launch.

    python compile_only.py cuda:103

The kernel is triton-lang/triton#5557's: a tl.dot between two loaded K x K tiles, stored back.
At K = 64, compiled for sm_103 (B300/GB300), its dot goes to Blackwell's tensor memory
(tcgen05), and Triton 3.5.0 aborts in LLVM's NVPTX instruction selection ("LLVM ERROR: Cannot
select: intrinsic %llvm.nvvm.tcgen05.wait.st", triton-lang/triton#8473 and #8481: 3.5 broke
sm_103); 3.4.0 compiles it (given a ptxas that knows sm_103a, CUDA 12.9 on), 3.5.1 again.
"""

import sys

import triton
import triton.language as tl
from triton.backends.compiler import GPUTarget


@triton.jit
def matmul_kernel(p1, p2, rp, K: tl.constexpr):
    region = tl.arange(0, K)[:, None] * K + tl.arange(0, K)[None, :]
    m1 = tl.load(p1 + region)
    m2 = tl.load(p2 + region)
    r = tl.dot(m1, m2)
    tl.store(rp + region, r)


backend, arch = sys.argv[1].split(":")
signature = {"p1": "*fp32", "p2": "*fp32", "rp": "*fp32", "K": "constexpr"}
source = triton.compiler.ASTSource(fn=matmul_kernel, signature=signature, constexprs={"K": 64})
compiled = triton.compile(source, target=GPUTarget(backend, int(arch), 32), options={"num_warps": 4})
print(f"compiled matmul_kernel for {sys.argv[1]} with triton {triton.__version__}")
