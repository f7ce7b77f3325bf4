"""Hopper features: a matmul whose arguments are host-side TensorDescriptors, a kernel that builds
device-side descriptors with tl.make_tensor_descriptor (needs triton.set_allocator), and a
kernel taking a tuple argument. Each part runs on its own so one failure does not hide the others."""
import traceback

import torch
import triton
import triton.language as tl
from _common import device, save

torch.manual_seed(0)
dev = device()
outputs = {}


@triton.jit
def tma_matmul(a_desc, b_desc, c_desc, M, N, K,
               BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, K, BLOCK_K):
        a = a_desc.load([pid_m * BLOCK_M, k])
        b = b_desc.load([k, pid_n * BLOCK_N])
        acc = tl.dot(a, b, acc)
    c_desc.store([pid_m * BLOCK_M, pid_n * BLOCK_N], acc.to(tl.float16))


@triton.jit
def device_desc_scale(x_ptr, y_ptr, M, N, scale, BM: tl.constexpr, BN: tl.constexpr):
    xd = tl.make_tensor_descriptor(x_ptr, shape=[M, N], strides=[N, 1], block_shape=[BM, BN])
    yd = tl.make_tensor_descriptor(y_ptr, shape=[M, N], strides=[N, 1], block_shape=[BM, BN])
    pm = tl.program_id(0)
    pn = tl.program_id(1)
    tile = xd.load([pm * BM, pn * BN])
    yd.store([pm * BM, pn * BN], tile * scale)


@triton.jit
def tuple_axpy(ptrs, n, alpha, BLOCK: tl.constexpr):
    x_ptr, y_ptr, out_ptr = ptrs
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    y = tl.load(y_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, alpha * x + y, mask=mask)


def part_tma():
    from triton.tools.tensor_descriptor import TensorDescriptor

    M, N, K, BM, BN, BK = 256, 128, 192, 64, 64, 64
    a = torch.randn(M, K, device=dev, dtype=torch.float16)
    b = torch.randn(K, N, device=dev, dtype=torch.float16)
    c = torch.zeros(M, N, device=dev, dtype=torch.float16)
    a_desc = TensorDescriptor.from_tensor(a, [BM, BK])
    b_desc = TensorDescriptor.from_tensor(b, [BK, BN])
    c_desc = TensorDescriptor.from_tensor(c, [BM, BN])
    tma_matmul[(M // BM, N // BN)](a_desc, b_desc, c_desc, M, N, K, BLOCK_M=BM, BLOCK_N=BN, BLOCK_K=BK)
    outputs["tma_c"] = c
    outputs["tma_reference"] = (a.float() @ b.float()).half()


def part_device_desc():
    triton.set_allocator(lambda size, align, stream: torch.empty(size, dtype=torch.int8, device=dev))
    M, N = 128, 96
    x = torch.randn(M, N, device=dev, dtype=torch.float32)
    y = torch.zeros(M, N, device=dev, dtype=torch.float32)
    device_desc_scale[(M // 32, N // 32)](x, y, M, N, 1.5, BM=32, BN=32)
    outputs["device_desc_y"] = y


def part_tuple():
    n = 5000
    x = torch.randn(n, device=dev)
    y = torch.randn(n, device=dev)
    out = torch.empty(n, device=dev)
    tuple_axpy[(triton.cdiv(n, 1024),)]((x, y, out), n, 0.25, BLOCK=1024)
    outputs["tuple_out"] = out


for part in (part_tma, part_device_desc, part_tuple):
    try:
        part()
        print("ok", part.__name__)
    except Exception:
        print("FAILED", part.__name__)
        traceback.print_exc()
save(outputs)
