"""Launches kernels, then ends without Python's shutdown: `os._exit(7)` (argv[2] == "exit"),
or killed by SIGSEGV (argv[2] == "segv"). Nothing runs after the last launch: no atexit, no
flush of Python's buffers."""

import os
import signal
import sys

import mp_kernels
import torch
from _common import save


def main():
    torch.manual_seed(0)
    x, y = torch.randn(500), torch.randn(500)
    outs = {"first": mp_kernels.axpy(x, y, 2.0), "second": mp_kernels.axpy(y, x, -1.0)}
    save(outs)
    if sys.argv[2] == "exit":
        os._exit(7)
    os.kill(os.getpid(), signal.SIGSEGV)


if __name__ == "__main__":
    main()
