"""Capture real traces of the programs in bench/gpu_programs/ on a GPU machine, three ways each:
untraced (the ground truth), traced by `tritonbisect trace`, traced by tritonparse.

    PYTHONPATH=src python bench/gpu_capture.py --out OUT [--programs a,b] [--timeout 300]

Each program gets fresh Triton and Inductor caches (so every kernel is compiled, and traced).
Writes OUT/<program>.tgz (untraced/, tritonbisect/, tritonparse/: outputs.pt, stdout/stderr and
the trace folder) and OUT/capture.json (exit codes, seconds, whether traced outputs equal the
untraced ones). Needs torch + triton, and tritonparse for the third way (skipped when missing).
Programs run in parallel (one thread each); the ways of one program run in sequence.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tarfile
import tempfile
import threading
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
PROGRAMS = HERE / "gpu_programs"
SRC = HERE.parent / "src"

TP_RUNNER = r'''
import os, runpy, sys
import tritonparse.structured_logging as sl
sl.init(os.environ["TB_TP_DIR"], enable_trace_launch=True, enable_more_tensor_information=True,
        enable_tensor_blob_storage=True)
prog = sys.argv[1]
sys.argv = sys.argv[1:]
sys.path.insert(0, os.path.dirname(prog))
try:
    runpy.run_path(prog, run_name="__main__")
finally:
    sl.clear_logging_config()
'''


def run_way(program: Path, way: str, folder: Path, args: list[str], timeout: float) -> dict:
    folder.mkdir(parents=True)
    caches = Path(tempfile.mkdtemp(prefix=f"cache-{program.stem}-{way}-"))
    env = dict(os.environ)
    env.update(
        TRITON_CACHE_DIR=str(caches / "triton"),
        TORCHINDUCTOR_CACHE_DIR=str(caches / "inductor"),
        TORCHINDUCTOR_FX_GRAPH_CACHE="0",
        TORCHINDUCTOR_AUTOGRAD_CACHE="0",
        TRITON_FULL_PYTHON_SOURCE="1",
        PYTHONPATH=str(PROGRAMS) + os.pathsep + env.get("PYTHONPATH", ""),
    )
    outputs = folder / "outputs.pt"
    prog_cmd = [str(program), str(outputs), *args]
    if way == "untraced":
        cmd = [sys.executable, *prog_cmd]
    elif way == "tritonbisect":
        env["PYTHONPATH"] = str(SRC) + os.pathsep + env["PYTHONPATH"]
        cmd = [sys.executable, "-c",
               "import sys; from pathlib import Path; from tritonbisect.traces.capture import run_traced; "
               "r = run_traced(sys.argv[2:], Path(sys.argv[1])); sys.exit(r.returncode)",
               str(folder / "trace"), sys.executable, *prog_cmd]
    else:
        env["TB_TP_DIR"] = str(folder / "trace")
        runner = folder / "tp_runner.py"
        runner.write_text(TP_RUNNER)
        cmd = [sys.executable, str(runner), *prog_cmd]
    start = time.monotonic()
    try:
        proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout)
        rc, out, err = proc.returncode, proc.stdout, proc.stderr
    except subprocess.TimeoutExpired as exc:
        rc, out, err = "timeout", str(exc.stdout or ""), str(exc.stderr or "")
    seconds = round(time.monotonic() - start, 1)
    (folder / "stdout.txt").write_text(out if isinstance(out, str) else out.decode(errors="replace"))
    (folder / "stderr.txt").write_text(err if isinstance(err, str) else err.decode(errors="replace"))
    files = sorted(str(p.relative_to(folder)) for p in (folder / "trace").rglob("*.ndjson")) if (folder / "trace").exists() else []
    return {"rc": rc, "seconds": seconds, "trace_files": files, "stderr_tail": (err or "")[-1500:] if rc != 0 else ""}


def same_outputs(a: Path, b: Path) -> dict:
    import torch

    if not a.exists() or not b.exists():
        return {"compared": False}
    x, y = torch.load(a), torch.load(b)
    result = {"compared": True, "keys_equal": sorted(x) == sorted(y), "bitwise": {}, "max_abs": {}}
    for k in x:
        if k in y and x[k].shape == y[k].shape:
            result["bitwise"][k] = bool(torch.equal(x[k], y[k]))
            result["max_abs"][k] = float((x[k].float() - y[k].float()).abs().max()) if x[k].numel() else 0.0
    return result


def capture(name: str, args: list[str], out: Path, work: Path, timeout: float, ways: list[str], summary: dict) -> None:
    program = PROGRAMS / f"{name}.py"
    root = work / name
    entry: dict = {}
    for way in ways:
        entry[way] = run_way(program, way, root / way, args, timeout)
    for way in ways[1:]:
        entry[way]["vs_untraced"] = same_outputs(root / "untraced" / "outputs.pt", root / way / "outputs.pt")
    with tarfile.open(out / f"{name}.tgz", "w:gz") as tar:
        tar.add(root, arcname=name)
    summary[name] = entry


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--programs", default="inductor_ln_gelu,tma_descriptors,autotune_chain,compile_modes")
    parser.add_argument("--timeout", type=float, default=300)
    opts = parser.parse_args()
    opts.out.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="gpu-capture-"))
    ways = ["untraced", "tritonbisect"]
    try:
        import tritonparse  # noqa: F401

        ways.append("tritonparse")
    except ImportError:
        print("tritonparse not installed: skipping that way")
    summary: dict = {"python": sys.version, "ways": ways}
    try:
        import torch
        import triton

        summary.update(torch=torch.__version__, triton=triton.__version__,
                       gpu=torch.cuda.get_device_name() if torch.cuda.is_available() else None)
    except Exception as exc:  # noqa: BLE001
        summary["import_error"] = repr(exc)
    threads = []
    for spec in opts.programs.split(","):
        name, *args = spec.split(":")
        t = threading.Thread(target=capture, args=(name, args, opts.out, work, opts.timeout, ways, summary))
        t.start()
        threads.append(t)
    for t in threads:
        t.join()
    (opts.out / "capture.json").write_text(json.dumps(summary, indent=2))
    print(json.dumps(summary, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
