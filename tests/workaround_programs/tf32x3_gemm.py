"""A float32 GEMM whose dot runs at tf32x3 precision (three tf32 products). Triton 3.8 gives
its pipelined operands more shared memory than 3.6 did (triton-lang/triton#11526: configs that
ran on an L40 no longer launch; TransformerEngine lowered num_stages to fit). Traced under
TRITON_INTERPRET=1 by the limits and workaround tests:

    python tf32x3_gemm.py BLOCK_M BLOCK_N BLOCK_K NUM_WARPS NUM_STAGES
"""

import sys

import torch
import triton
import triton.language as tl


@triton.jit
def gemm_tf32x3(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_bk, stride_cm,
                BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    rm = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, K, BLOCK_K):
        rk = k + tl.arange(0, BLOCK_K)
        a = tl.load(a_ptr + rm[:, None] * stride_am + rk[None, :], mask=(rm[:, None] < M) & (rk[None, :] < K), other=0.0)
        b = tl.load(b_ptr + rk[:, None] * stride_bk + rn[None, :], mask=(rk[:, None] < K) & (rn[None, :] < N), other=0.0)
        acc += tl.dot(a, b, input_precision="tf32x3")
    tl.store(c_ptr + rm[:, None] * stride_cm + rn[None, :], acc, mask=(rm[:, None] < M) & (rn[None, :] < N))


block_m, block_n, block_k, warps, stages = (int(x) for x in sys.argv[1:6])
M, N, K = 256, 256, 256
a, b = torch.randn(M, K), torch.randn(K, N)
c = torch.empty(M, N)
grid = (triton.cdiv(M, block_m), triton.cdiv(N, block_n))
gemm_tf32x3[grid](a, b, c, M, N, K, a.stride(0), b.stride(0), c.stride(0),
                  BLOCK_M=block_m, BLOCK_N=block_n, BLOCK_K=block_k, num_warps=warps, num_stages=stages)
print(float((c - a @ b).abs().max()))
