"""Coverage program: torch.multiprocessing.spawn children, each launching a @triton.jit kernel;
the parent saves every child's output (argv[1]). TB_PROFILE_DIR: each child also writes the
names of the GPU kernels it ran (torch profiler), for an independent count; TB_TP_DIR: each
child initialises tritonparse (it must be, in every process that launches)."""
import os
import sys
import tempfile

import torch
import torch.multiprocessing as mp
import triton
import triton.language as tl


@triton.jit
def axpb(x_ptr, out_ptr, n, a, b, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) * a + b, mask=mask)


def child(rank, folder):
    if os.environ.get("TB_TP_DIR"):  # tritonparse is initialised in each process that launches
        import json

        import tritonparse.structured_logging as sl

        sl.init(os.environ["TB_TP_DIR"], **json.loads(os.environ.get("TB_TP_OPTIONS", "{}")))
    dev = "cuda" if torch.cuda.is_available() else "cpu"
    torch.manual_seed(rank)
    x = torch.randn(3000, device=dev)
    out = torch.empty_like(x)
    prof_dir = os.environ.get("TB_PROFILE_DIR")

    def work():
        axpb[(triton.cdiv(x.numel(), 256),)](x, out, x.numel(), 2.0 + rank, 1.0, BLOCK=256)
        if dev == "cuda":
            torch.cuda.synchronize()

    if prof_dir and dev == "cuda":
        from torch.profiler import ProfilerActivity, profile

        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            work()
        names = sorted({e.name for e in prof.events() if e.device_type.name == "CUDA"})
        with open(os.path.join(prof_dir, f"spawn_child_{rank}.txt"), "w") as fh:
            fh.write("\n".join(names))
    else:
        work()
    torch.save(out.cpu(), os.path.join(folder, f"rank{rank}.pt"))


if __name__ == "__main__":
    with tempfile.TemporaryDirectory() as folder:
        mp.spawn(child, args=(folder,), nprocs=2)
        outs = {f"rank{r}": torch.load(os.path.join(folder, f"rank{r}.pt")) for r in range(2)}
    path = sys.argv[1] if len(sys.argv) > 1 else None
    if path:
        torch.save(outs, path)
    print("outputs:", {k: tuple(v.shape) for k, v in outs.items()})
