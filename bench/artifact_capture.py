"""Capture what PyTorch and Triton write while a user debugs torch.compile, for three small programs
(and a minifier run), on a GPU machine:

    python3 bench/artifact_capture.py --out OUT [--device cuda|cpu] [--timeout 420]

Per program, one process with
    TORCH_COMPILE_DEBUG=1 TORCH_COMPILE_DEBUG_DIR=<p>/debug  TORCH_TRACE=<p>/torch_trace
    TRITON_KERNEL_DUMP=1 TRITON_DUMP_DIR=<p>/kernel_dump     TRITON_REPRODUCER_PATH=<p>/reproducer/triton
and fresh Inductor/Triton caches (kept: <p>/inductor_cache has the kernels' .py and .best_config files).
Writes OUT/<program>.tgz and OUT/capture.json (exit codes, seconds, file counts, versions).
--device cpu tests the orchestration here (Inductor's C++ backend: no Triton artifacts).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tarfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

PROGRAMS: dict[str, str] = {}

PROGRAMS["pointwise_reduction"] = r'''
import torch, triton, triton.language as tl

@triton.autotune(configs=[triton.Config({"BLOCK": 128}, num_warps=4), triton.Config({"BLOCK": 256}, num_warps=8)],
                 key=["n"])
@triton.jit
def scaled_add(x_ptr, y_ptr, out_ptr, n, alpha, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=m) + alpha * tl.load(y_ptr + offs, mask=m), mask=m)

def f(x, y):
    z = torch.relu(x * y + 1.0)
    return z, z.sum(dim=-1), z.amax()

def g(x, y):
    out = torch.empty_like(x)
    n = x.numel()
    scaled_add[lambda meta: (triton.cdiv(n, meta["BLOCK"]),)](x, y, out, n, 0.5)
    return out.sin()

x = torch.randn(64, 512, device=DEVICE)
y = torch.randn(64, 512, device=DEVICE)
outs = torch.compile(f)(x, y)
if DEVICE == "cuda":
    outs = outs + (torch.compile(g)(x, y),)
torch.save([o.cpu() for o in outs], OUTPUTS)
'''

PROGRAMS["matmul_epilogue"] = r'''
import torch
import torch._inductor.config as ic
ic.max_autotune = True
ic.max_autotune_gemm_backends = "TRITON"

def f(a, b, bias):
    return torch.nn.functional.gelu(a @ b + bias)

dt = torch.float16 if DEVICE == "cuda" else torch.float32
a = torch.randn(128, 256, device=DEVICE, dtype=dt)
b = torch.randn(256, 128, device=DEVICE, dtype=dt)
bias = torch.randn(128, device=DEVICE, dtype=dt)
out = torch.compile(f)(a, b, bias)
torch.save([out.cpu()], OUTPUTS)
'''

PROGRAMS["softmax_layernorm"] = r'''
import torch
import torch.nn.functional as F

def f(x, w, b):
    return torch.softmax(F.layer_norm(x, (512,), w, b), dim=-1)

dt = torch.float16 if DEVICE == "cuda" else torch.float32
x = torch.randn(64, 512, device=DEVICE, dtype=dt)
w = torch.randn(512, device=DEVICE, dtype=dt)
b = torch.randn(512, device=DEVICE, dtype=dt)
out = torch.compile(f)(x, w, b)
torch.save([out.cpu()], OUTPUTS)
'''

# Same pointwise+reduction program with Inductor's per-kernel benchmark harness in the source
# (TORCHINDUCTOR_BENCHMARK_KERNEL=1: get_args/call/benchmark_all_configs in each kernel).
PROGRAMS["pointwise_reduction_benchmark_kernel"] = PROGRAMS["pointwise_reduction"]

# A planted Inductor bug (relu lowered to code that does not compile): TORCHDYNAMO_REPRO_LEVEL=1
# writes repro.py, then level 2 writes minifier_launcher.py (neither minifies).
PROGRAMS["minifier"] = r'''
import torch
import torch._inductor.config as ic
if DEVICE == "cuda":
    ic.triton.inject_relu_bug_TESTING_ONLY = "compile_error"
else:
    ic.cpp.inject_relu_bug_TESTING_ONLY = "compile_error"

def f(x, y):
    return torch.relu(x * y + 1.0).sum(dim=-1)

x = torch.randn(64, 512, device=DEVICE)
y = torch.randn(64, 512, device=DEVICE)
try:
    out = torch.compile(f)(x, y)
    torch.save([out.cpu()], OUTPUTS)
except Exception as exc:
    print("compile failed as planted:", type(exc).__name__, str(exc)[:300])
'''

PRELUDE = "import sys\nDEVICE = sys.argv[1]\nOUTPUTS = sys.argv[2]\n"


def count_files(root: Path) -> dict[str, int]:
    counts: dict[str, int] = {}
    for p in root.rglob("*"):
        if p.is_file():
            top = p.relative_to(root).parts[0]
            counts[top] = counts.get(top, 0) + 1
    return counts


def run_program(name: str, out: Path, work: Path, device: str, timeout: float) -> dict:
    folder = work / name
    folder.mkdir(parents=True)
    script = folder / "program.py"
    script.write_text(PRELUDE + PROGRAMS[name], encoding="utf-8")
    env = dict(os.environ)
    env.update(
        TORCH_COMPILE_DEBUG="1",
        TORCH_COMPILE_DEBUG_DIR=str(folder / "debug"),
        TORCH_TRACE=str(folder / "torch_trace"),
        TRITON_KERNEL_DUMP="1",
        TRITON_DUMP_DIR=str(folder / "kernel_dump"),
        TRITON_REPRODUCER_PATH=str(folder / "reproducer" / "triton"),
        TORCHINDUCTOR_CACHE_DIR=str(folder / "inductor_cache"),
        TRITON_CACHE_DIR=str(folder / "triton_cache"),
        PYTHONUNBUFFERED="1",
    )
    (folder / "reproducer").mkdir()
    if name == "pointwise_reduction_benchmark_kernel":
        env["TORCHINDUCTOR_BENCHMARK_KERNEL"] = "1"
    if name == "minifier":
        env.update(TORCHDYNAMO_REPRO_AFTER="aot", TORCHDYNAMO_REPRO_LEVEL="1")
    record: dict = {"program": name}
    start = time.time()
    with open(folder / "stdout.txt", "w") as so, open(folder / "stderr.txt", "w") as se:
        try:
            proc = subprocess.run([sys.executable, str(script), device, str(folder / "outputs.pt")], env=env,
                                  cwd=folder, stdout=so, stderr=se, timeout=timeout)
            record["rc"] = proc.returncode
        except subprocess.TimeoutExpired:
            record["rc"] = "timeout"
    record["seconds"] = round(time.time() - start, 1)
    if name == "minifier":
        # level 1 wrote repro.py; level 2 writes minifier_launcher.py on the compile error (not run here)
        env3 = dict(env, TORCHDYNAMO_REPRO_LEVEL="2")
        with open(folder / "level3_stdout.txt", "w") as so, open(folder / "level3_stderr.txt", "w") as se:
            try:
                proc = subprocess.run([sys.executable, str(script), device, str(folder / "outputs3.pt")], env=env3,
                                      cwd=folder, stdout=so, stderr=se, timeout=max(30.0, timeout - record["seconds"]))
                record["level3_rc"] = proc.returncode
            except subprocess.TimeoutExpired:
                record["level3_rc"] = "timeout"
        record["launchers"] = [str(p.relative_to(folder)) for p in (folder / "debug").rglob("minifier_launcher.py")]
        record["repro_files"] = [str(p.relative_to(folder)) for p in folder.rglob("repro.py")]
    # the compiled Triton cache is large and derivable; the dump and Inductor's cache are what users keep
    subprocess.run(["rm", "-rf", str(folder / "triton_cache")])
    record["files"] = count_files(folder)
    tar_path = out / f"{name}.tgz"
    with tarfile.open(tar_path, "w:gz") as tar:
        tar.add(folder, arcname=name)
    record["tgz_bytes"] = tar_path.stat().st_size
    return record


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True, type=Path)
    ap.add_argument("--work", type=Path, default=Path("/tmp/capture37"))
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--timeout", type=float, default=420.0)
    ap.add_argument("--programs", default=",".join(PROGRAMS))
    args = ap.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    subprocess.run(["rm", "-rf", str(args.work)])
    args.work.mkdir(parents=True)
    names = [n for n in args.programs.split(",") if n]
    versions = subprocess.run([sys.executable, "-c", "import torch, triton; print(torch.__version__, triton.__version__,"
                               " torch.cuda.get_device_name() if torch.cuda.is_available() else 'cpu')"],
                              capture_output=True, text=True)
    summary: dict = {"versions": versions.stdout.strip() or versions.stderr[-300:], "programs": []}
    with ThreadPoolExecutor(max_workers=len(names)) as pool:
        futures = [pool.submit(run_program, n, args.out, args.work, args.device, args.timeout) for n in names]
        for fut in futures:
            try:
                summary["programs"].append(fut.result())
            except Exception as exc:  # keep what the other programs wrote
                summary["programs"].append({"error": f"{type(exc).__name__}: {exc}"})
    (args.out / "capture.json").write_text(json.dumps(summary, indent=1), encoding="utf-8")
    print(json.dumps(summary, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
