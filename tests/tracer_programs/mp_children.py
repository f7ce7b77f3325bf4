"""Kernels launched in multiprocessing children, under fork and under spawn (a Pool and a
Process each), one child reloading the kernels' module first; and in the parent."""

import importlib
import json
import multiprocessing as mp
import os
import sys

import mp_kernels
import torch
from _common import save


def work(seed):
    torch.manual_seed(seed)
    x, y = torch.randn(300), torch.randn(300)
    out = mp_kernels.axpy(x, y, 0.5 + seed).tolist()  # plain lists: no tensor sharing between processes
    return os.getpid(), out


def work_after_reload(seed):
    importlib.reload(mp_kernels)  # a new JITFunction object, compiled again
    return work(seed)


def to_queue(queue, seed, reload):
    queue.put((seed, (work_after_reload if reload else work)(seed)))


def main():
    pids = set()
    pid, out = work(0)
    outputs = {"parent": torch.tensor(out)}
    pids.add(pid)
    for method in ("fork", "spawn"):
        ctx = mp.get_context(method)
        with ctx.Pool(2) as pool:
            for seed, (pid, out) in zip((1, 2), pool.map(work, (1, 2)), strict=True):
                outputs[f"{method}_pool_{seed}"] = torch.tensor(out)
                pids.add(pid)
        queue = ctx.Queue()
        child = ctx.Process(target=to_queue, args=(queue, 3, method == "fork"))
        child.start()
        seed, (pid, out) = queue.get(timeout=120)
        pids.add(pid)
        child.join(120)
        outputs[f"{method}_process_{seed}"] = torch.tensor(out)
        print(method, "process exit code", child.exitcode, flush=True)
    save(outputs)
    with open(sys.argv[1] + ".pids", "w") as fh:  # which processes launched kernels
        json.dump(sorted(pids), fh)


if __name__ == "__main__":
    sys.exit(main())
