"""One batched check of the reproducer oracle on a GPU machine (torch + triton, no network).

    PYTHONPATH=src python bench/oracle_gpu_check.py --traces DIR --out OUT [--oracles DIR]

1. For every shared trace: generate the oracle (or take the pre-generated one from
   --oracles, e.g. when the machine lacks the `zstandard` package), record a golden on the
   GPU, rerun it 20 times (both input vectors) and run the planted bugs; then compare the
   golden with `outputs_after_run.pt`, the outputs of the original run on the H100.
2. `trace` end to end: trace a program with the tritonbisect tracer (real launch hooks:
   enter, exit after a device sync; a CUDA-graph capture; a hook of the program's own that
   must keep being called), generate oracles from that trace and compare them against the
   outputs the traced program itself produced.

Writes OUT/gpu_check.json and prints a summary. Runs on the CPU too (interpreter), for
trying it out; the graph-capture part then is skipped.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

from tritonbisect.oracles.runtime import generate_oracle
from tritonbisect.oracles.selfcheck import Job, run_one, self_check
from tritonbisect.traces.capture import run_traced
from tritonbisect.traces.reader import load_trace

# (scenario, launch id, argument of the oracle, key in outputs_after_run.pt)
GROUND_TRUTH = [
    ("vadd", 0, "out_ptr", "launch0_out"),
    ("vadd", 1, "out_ptr", "launch1_out"),
    ("vadd_zstd", 0, "out_ptr", "launch0_out"),
    ("vadd_zstd", 1, "out_ptr", "launch1_out"),
    ("vadd_noblob", 1, "out_ptr", "launch1_out"),  # inputs synthesized from statistics: differs
    ("softmax", 0, "out_ptr", "launch0_out"),
    ("softmax_gzip", 0, "out_ptr", "launch0_out"),
    ("matmul", None, "c_ptr", "final_out"),
    ("transpose", 0, "dst_ptr", "dst"),
]

PROGRAM = r'''
import os, sys, torch, triton
import triton.language as tl
from triton import knobs

calls = {"n": 0}
def my_hook(metadata):          # the program's own launch hook: must keep being called
    calls["n"] += 1
knobs.runtime.launch_enter_hook.add(my_hook)

@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK_SIZE: tl.constexpr):
    offs = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) + tl.load(y_ptr + offs, mask=mask), mask=mask)

@triton.jit
def _row_max(x):
    return tl.max(x, axis=0)

@triton.jit
def softmax_kernel(out_ptr, in_ptr, stride, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(in_ptr + row * stride + cols, mask=mask, other=-float("inf")).to(tl.float32)
    num = tl.exp(x - _row_max(x))
    tl.store(out_ptr + row * stride + cols, (num / tl.sum(num, axis=0)).to(out_ptr.dtype.element_ty), mask=mask)

@triton.autotune(configs=[triton.Config({"BM": 32, "BN": 32, "BK": 32}, num_warps=4, num_stages=2),
                          triton.Config({"BM": 64, "BN": 32, "BK": 32}, num_warps=4, num_stages=3)], key=["M", "N", "K"])
@triton.jit
def mm_kernel(a, b, c, M, N, K, sam, sak, sbk, sbn, scm, scn, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    rn = tl.program_id(1) * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BK)):
        kk = k * BK + rk
        x = tl.load(a + rm[:, None] * sam + kk[None, :] * sak, mask=(rm[:, None] < M) & (kk[None, :] < K), other=0.0)
        y = tl.load(b + kk[:, None] * sbk + rn[None, :] * sbn, mask=(kk[:, None] < K) & (rn[None, :] < N), other=0.0)
        acc += tl.dot(x, y)
    tl.store(c + rm[:, None] * scm + rn[None, :] * scn, acc.to(tl.float16), mask=(rm[:, None] < M) & (rn[None, :] < N))

dev = "cuda" if torch.cuda.is_available() and os.environ.get("TRITON_INTERPRET") != "1" else "cpu"
torch.manual_seed(0)
n = 5000
buf = torch.rand(2 * n + 9, device=dev)
x, y = buf[1:1 + n], buf[n + 9:]          # two views of one storage, odd offsets
out = torch.empty(n, device=dev)
add_kernel[(triton.cdiv(n, 1024),)](x, y, out, n, BLOCK_SIZE=1024)
s = torch.randn(100, 333, device=dev, dtype=torch.float16)
so = torch.empty_like(s)
softmax_kernel[(100,)](so, s, s.stride(0), 333, BLOCK=512)
M, N, K = 200, 96, 72                      # not multiples of the blocks: masks matter
a = torch.randn(M, K, device=dev, dtype=torch.float16)
b = torch.randn(K, N, device=dev, dtype=torch.float16)
c = torch.empty(M, N, device=dev, dtype=torch.float16)
if dev == "cuda":
    mm_kernel[lambda m: (triton.cdiv(M, m["BM"]), triton.cdiv(N, m["BN"]))](
        a, b, c, M, N, K, a.stride(0), a.stride(1), b.stride(0), b.stride(1), c.stride(0), c.stride(1))
    # a launch during CUDA-graph capture (compiled above already)
    g = torch.cuda.CUDAGraph()
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        add_kernel[(triton.cdiv(n, 1024),)](x, y, out, n, BLOCK_SIZE=1024)
    torch.cuda.current_stream().wait_stream(side)
    with torch.cuda.graph(g):
        add_kernel[(triton.cdiv(n, 1024),)](x, y, out, n, BLOCK_SIZE=1024)
    g.replay()
    torch.cuda.synchronize()
assert torch.allclose(out, x + y)
print("program done; own hook calls:", calls["n"])
assert dev == "cpu" or calls["n"] >= 3, calls
'''


def errors(golden, expected):
    import torch

    g, e = golden.double(), expected.double()
    diff = (g - e).abs()
    return {
        "max_abs_err": float(diff.max()),
        "max_rel_err": float((diff / e.abs().clamp_min(1e-12)).max()),
        "bitwise_equal": bool(torch.equal(golden, expected)),
        "mismatching_elements": int((diff > 0).sum()),
        "numel": golden.numel(),
    }


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--traces", required=True, type=Path, help="folder with the scenario folders")
    ap.add_argument("--out", required=True, type=Path)
    ap.add_argument("--oracles", type=Path, help="pre-generated oracles: <scenario>_<launch>/")
    ap.add_argument("--repeat", type=int, default=20)
    ap.add_argument("--scenarios", help="comma list of scenarios to check (default: all)")
    args = ap.parse_args()
    wanted = set(args.scenarios.split(",")) if args.scenarios else None
    import torch
    import triton

    args.out.mkdir(parents=True, exist_ok=True)
    report: dict = {
        "torch": torch.__version__,
        "triton": triton.__version__,
        "device": torch.cuda.get_device_name(0) if torch.cuda.is_available() else "cpu",
        "scenarios": [],
    }
    print(f"torch {torch.__version__}, triton {triton.__version__}, {report['device']}", flush=True)
    env = dict(os.environ)
    t_all = time.time()
    for name, launch_id, arg, key in GROUND_TRUTH:
        if wanted is not None and name not in wanted:
            continue
        t0 = time.time()
        folder = args.traces / name
        tag = f"{name}_{'default' if launch_id is None else launch_id}"
        oracle_dir = args.out / "oracles" / tag
        entry: dict = {"scenario": name, "launch": launch_id, "argument": arg, "key": key}
        try:
            if args.oracles and (args.oracles / tag).is_dir():
                shutil.copytree(args.oracles / tag, oracle_dir, dirs_exist_ok=True)
                kernel = json.loads((oracle_dir / "context.json").read_text())["kernel"]["name"]
            else:
                kernel = load_trace(folder / "logs").kernels()[0]
                generate_oracle(folder / "logs", kernel, oracle_dir, launch_id=launch_id)
            check = self_check(oracle_dir, kernel, repeat=args.repeat, env=env, timeout=600)
            entry["record"] = check.record.status
            entry["record_reason"] = check.record.reason
            entry["reruns"] = check.reruns.status if check.reruns else None
            entry["reruns_reason"] = check.reruns.reason if check.reruns else None
            entry["mutations"] = {m: (r.status if r else "n/a") for m, r in check.mutations.items()}
            golden = torch.load(oracle_dir / "golden.pt", weights_only=True)
            expected = torch.load(folder / "outputs_after_run.pt", weights_only=True)
            entry["vs_outputs_after_run"] = errors(golden[arg], expected[key])
            if name == "matmul":
                entry["vs_fp32_reference"] = errors(golden[arg], expected["reference"])
        except Exception as exc:  # keep going: one report for all
            entry["error"] = repr(exc)
        entry["seconds"] = round(time.time() - t0, 1)
        report["scenarios"].append(entry)
        print(json.dumps(entry), flush=True)

    # --- the trace command, end to end -----------------------------------------------
    t0 = time.time()
    tr_entry: dict = {}
    try:
        prog = args.out / "traced_program.py"
        prog.write_text(PROGRAM)
        run = run_traced([sys.executable, str(prog)], args.out / "trace")
        tr_entry["program_rc"] = run.returncode
        trace = load_trace(args.out / "trace")
        tr_entry["kernels"] = trace.kernels()
        tr_entry["launches"] = len(trace.launches)
        tr_entry["with_after"] = sum(1 for launch in trace.launches if launch.after)
        tr_entry["graph_capture_launches"] = sum(1 for launch in trace.launches if launch.graph_capture)
        tr_entry["oracles"] = {}
        for kernel in trace.kernels():
            odir = args.out / "trace_oracles" / kernel
            oracle = generate_oracle(trace, kernel, odir)
            res = run_one(Job(kernel, odir / "repro.py", [], odir / "vs_trace.json"), env=env, timeout=300)
            script = (odir / "repro.py").read_text()
            from tritonbisect.oracles.mutations import MUTATIONS, mutate_script

            dtypes = {a["name"]: a["dtype"] for a in oracle.context["args"] if a["kind"] == "tensor"}
            mut = {}
            for m in MUTATIONS:
                text = mutate_script(script, kernel, m, dtypes)
                if text is None:
                    mut[m] = "n/a"
                    continue
                (odir / f"repro_{m}.py").write_text(text)
                r = run_one(Job(m, odir / f"repro_{m}.py", [], odir / f"mut_{m}.json"), env=env, timeout=300)
                mut[m] = r.status
            tr_entry["oracles"][kernel] = {
                "launch": oracle.launch.index,
                "autotuned": oracle.kernel.autotuned,
                "vs_trace_outputs": res.status,
                "reason": res.reason,
                "mutations": mut,
            }
        graph = [launch for launch in trace.launches if launch.graph_capture]
        if graph:
            from tritonbisect.core.errors import InputError

            try:
                generate_oracle(trace, graph[0].name, args.out / "graph", launch_id=graph[0].index)
                tr_entry["graph_refused"] = False
            except InputError as exc:
                tr_entry["graph_refused"] = str(exc)
    except Exception as exc:
        import traceback

        tr_entry["error"] = traceback.format_exc()[-2000:]
        print(repr(exc), flush=True)
    tr_entry["seconds"] = round(time.time() - t0, 1)
    report["trace_command"] = tr_entry
    report["seconds"] = round(time.time() - t_all, 1)
    print(json.dumps(tr_entry, indent=1), flush=True)
    (args.out / "gpu_check.json").write_text(json.dumps(report, indent=1))
    if shutil.which("nvidia-smi"):
        subprocess.run(["nvidia-smi", "-L"], check=False)
    return 0


if __name__ == "__main__":
    sys.exit(main())
