"""Arguments the tracer cannot record: a sparse tensor (no strides; the interpreter refuses it
too, and the program catches that), then ordinary launches while the trace folder cannot take
tensor data (the test makes `saved_tensors` a file)."""

import sys

import mp_kernels
import torch
from _common import save


def main():
    torch.manual_seed(0)
    x, y = torch.randn(200), torch.randn(200)
    sparse = torch.eye(200).to_sparse()
    try:
        mp_kernels.axpy_kernel[(2,)](sparse, y, torch.empty(200), 200, 1.0, BLOCK=128)
    except Exception as exc:  # the interpreter's own error, traced or not
        print("sparse launch failed:", type(exc).__name__)
    outs = {"a": mp_kernels.axpy(x, y, 3.0), "b": mp_kernels.axpy(x, y, 4.0)}
    save(outs)


if __name__ == "__main__":
    sys.exit(main())
