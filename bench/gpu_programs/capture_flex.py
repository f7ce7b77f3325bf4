"""Coverage program: flex attention with a score_mod (relative position bias) and a causal
block mask, compiled; saves the output (argv[1])."""
import torch
from _common import device, save
from torch.nn.attention.flex_attention import create_block_mask, flex_attention

dev = device()
torch.manual_seed(0)
B, H, S, D = 2, 4, 256, 64
dtype = torch.bfloat16 if dev == "cuda" else torch.float32
q, k, v = (torch.randn(B, H, S, D, device=dev, dtype=dtype) for _ in range(3))


def rel_bias(score, b, h, q_idx, kv_idx):
    return score + (q_idx - kv_idx).to(score.dtype) * 0.01


def causal(b, h, q_idx, kv_idx):
    return q_idx >= kv_idx


mask = create_block_mask(causal, B=None, H=None, Q_LEN=S, KV_LEN=S, device=dev)
attn = torch.compile(flex_attention)
out = attn(q, k, v, score_mod=rel_bias, block_mask=mask)
save({"out": out})
