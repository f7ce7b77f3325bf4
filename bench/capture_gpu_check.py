"""Coverage of `tritonbisect trace` on torch.compile programs in the state users run them.

    PYTHONPATH=src python bench/capture_gpu_check.py --out OUT [--budget 540] [--parallel 7]
    PYTHONPATH=src python bench/capture_gpu_check.py --results-from bench/data/capture_gpu_check.json

Extends bench/tracer_gpu_check.py (same tritonparse runner, same trace facts). For every program
in bench/gpu_programs/capture_*.py (flex attention with score_mod + block mask; bf16 matmul +
bias + ReLU under max-autotune-no-cudagraphs; a user @triton.autotune/@triton.heuristics kernel
in a compiled function; dynamic=True over three shapes; cumsum/logcumsumexp;
torch.multiprocessing.spawn children launching a @triton.jit kernel; an MLP under
mode="reduce-overhead"; artifacts loaded from a mega-cache into empty caches; a training step
whose forward and backward graphs AOTAutograd caches), with caches of its own:

1. cold, untraced, under the torch profiler: fills Inductor's and Triton's caches; the GPU kernels
   it ran are the independent count of the cold state (spawn children profile themselves);
2. warm, untraced, profiled again: the kernels launched in the state a user runs the program in;
3. warm, under `tritonbisect trace` with the static launcher put back on inside the program
   (`-- env TORCHINDUCTOR_USE_STATIC_CUDA_LAUNCHER=1 python ...`): the tracer as it was before;
   then warm, under `tritonbisect trace` (the CLI, as a user runs it);
4. warm, under tritonparse 0.6 (`structured_logging.init(..., enable_trace_launch=True)`);
5. cold (fresh caches), under `tritonbisect trace`; 6. cold, under tritonparse 0.6.

Outputs of the traced runs are compared with the untraced warm run. For each of our traces,
each launched kernel gets `tritonbisect repro --kernel K` and its repro.py is run (pass = the
kernel's outputs equal those recorded in the program); kernels that ran only in an autotuner's
benchmark are counted apart (no outputs recorded: they need a golden). Then `tritonbisect repro
--launches all` and its replay.py. "Triton kernels launched" are the profiler's GPU kernels
whose names are Triton function names (vendor kernels, memcpy/memset excluded).

Writes OUT/capture_gpu_check.json (after each program, so a cut-off run keeps what it has),
OUT/capture_gpu_check.md (the bench/RESULTS.md section), OUT/traces.tar.gz (our warm traces of
the reduce-overhead MLP and the max-autotune matmul, whole; every other trace without blobs)
and OUT/logs.tar.gz.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as FuturesTimeout
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from tracer_gpu_check import TP_RUNNER, trace_facts  # noqa: E402

PROGRAMS = HERE / "gpu_programs"
SECTION = "Tracer coverage: torch.compile programs, warm and cold caches"
NAMES = ["capture_flex", "capture_mm_autotune", "capture_user_autotune", "capture_dynamic", "capture_scan",
         "capture_spawn", "capture_cudagraph_mlp", "capture_megacache", "capture_train"]
SELF_SPAWNING = {"capture_spawn"}
KEEP_WHOLE = {("capture_cudagraph_mlp", "ours_warm"), ("capture_mm_autotune", "ours_warm")}
TRACED_WAYS = ("ours_warm", "ours_static", "ours_cold", "tp_warm", "tp_cold")

PROFILE_RUNNER = r'''
import json, os, runpy, sys
from torch.profiler import ProfilerActivity, profile
prog = sys.argv[1]
sys.argv = sys.argv[1:]
sys.path.insert(0, os.path.dirname(prog))
with profile(activities=[ProfilerActivity.CUDA]) as prof:
    runpy.run_path(prog, run_name="__main__")
names = sorted({e.name for e in prof.events() if e.device_type.name == "CUDA"})
with open(os.path.join(os.environ["TB_PROFILE_DIR"], "main.txt"), "w") as fh:
    fh.write("\n".join(names))
'''

VENDOR = re.compile(r"^(sm\d+_|nvjet|ampere_|cutlass|cublas|void |_Z|Memset|Memcpy|Memory|at::|std::|xmma|gemv|gemm)",
                    re.IGNORECASE)
IDENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def triton_names(names: set[str]) -> set[str]:
    return {n for n in names if IDENT.match(n) and not VENDOR.match(n)}


def run_program(name: str, way: str, caches: Path, root: Path, timeout: float) -> dict:
    folder = root / name / way
    folder.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ)
    env.update(TRITON_CACHE_DIR=str(caches / "triton"), TORCHINDUCTOR_CACHE_DIR=str(caches / "inductor"),
               PYTHONUNBUFFERED="1")
    env.setdefault("TORCHINDUCTOR_COMPILE_THREADS", "2")  # 21 programs at once: 2 compile workers each
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(PROGRAMS), env.get("PYTHONPATH", "")) if p)
    outputs = folder / "outputs.pt"
    prog = [str(PROGRAMS / f"{name}.py"), str(outputs)]
    trace = folder / "trace"
    # a program that spawns children runs as itself (a runner's module would be re-run as each
    # child's __mp_main__): its children profile themselves, or init tritonparse themselves
    direct = name in SELF_SPAWNING
    if way.startswith("untraced"):
        prof = folder / "profile"
        prof.mkdir(exist_ok=True)
        env["TB_PROFILE_DIR"] = str(prof)
        runner = folder / "profile_runner.py"
        runner.write_text(PROFILE_RUNNER)
        cmd = [sys.executable, *prog] if direct else [sys.executable, str(runner), *prog]
    elif way.startswith("ours"):
        # ours_static: the program turns the static launcher back on (`env` runs after `trace` set
        # it off), as a program setting torch._inductor.config.use_static_cuda_launcher would: the
        # tracer as it was before it turned the launcher off
        again = ["env", "TORCHINDUCTOR_USE_STATIC_CUDA_LAUNCHER=1"] if way == "ours_static" else []
        cmd = [sys.executable, "-m", "tritonbisect", "trace", "--out", str(trace), "--", *again, sys.executable,
               *prog]
    else:
        env["TB_TP_DIR"] = str(trace)
        env["TB_TP_OPTIONS"] = json.dumps({"enable_trace_launch": True})
        runner = folder / "tp_runner.py"
        runner.write_text(TP_RUNNER)
        cmd = [sys.executable, *prog] if direct else [sys.executable, str(runner), *prog]
    start = time.monotonic()
    try:
        proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout, cwd=folder)
        rc, out, err = proc.returncode, proc.stdout, proc.stderr
    except subprocess.TimeoutExpired as exc:
        rc, out, err = "timeout", str(exc.stdout or "")[-4000:], str(exc.stderr or "")[-4000:]
    (folder / "stdout.txt").write_text(out)
    (folder / "stderr.txt").write_text(err)
    result: dict = {"rc": rc, "seconds": round(time.monotonic() - start, 1)}
    if rc != 0:
        result["stderr_tail"] = err[-1500:]
    said = [line.removeprefix("cache:").strip() for line in out.splitlines() if line.startswith("cache:")]
    if said:  # the program's own count of AOTAutograd and FX graph cache hits (gpu_programs/_common.py)
        with contextlib.suppress(ValueError):
            result["cache"] = json.loads(said[-1])
    if way.startswith("ours"):
        result["trace_messages"] = [line for line in err.splitlines()
                                    if line.startswith(("tritonbisect trace", "  ")) and "warn" not in line][:12]
        result["trace_stdout"] = [line for line in out.splitlines() if line.startswith(("trace written", "  "))][:12]
    if way.startswith("untraced"):
        names: set[str] = set()
        for f in (folder / "profile").glob("*.txt"):
            names |= {n for n in f.read_text().splitlines() if n}
        result["gpu_kernels"] = sorted(names)
        result["triton_launched"] = sorted(triton_names(names))
    if trace.exists():
        result["trace"] = trace_facts(trace)
        result["recorded"] = recorded_names(trace)
    return result


def recorded_names(trace: Path) -> dict:
    try:
        from tritonbisect.traces.reader import load_trace

        tr = load_trace(trace)
    except Exception as exc:  # noqa: BLE001 - reported, not raised
        return {"error": str(exc)[:300]}
    real = sorted({launch.name for launch in tr.launches if not launch.autotune_benchmark})
    bench = sorted({launch.name for launch in tr.launches if launch.autotune_benchmark} - set(real))
    return {"launched": real, "benchmark_only": bench, "compiled": sorted(c.name for c in tr.compilations.values())}


def compare_outputs(a: Path, b: Path) -> dict:
    import torch

    if not a.exists() or not b.exists():
        return {"compared": False}
    x, y = torch.load(a), torch.load(b)
    res: dict = {"compared": True, "keys_equal": sorted(x) == sorted(y), "bitwise": True, "close": True}
    for k in x:
        if k not in y or x[k].shape != y[k].shape:
            res["bitwise"] = res["close"] = False
            continue
        res["bitwise"] &= bool(torch.equal(x[k], y[k]))
        res["close"] &= bool(torch.allclose(x[k].float(), y[k].float(), rtol=2e-2, atol=2e-2))
    return res


def cli(args: list[str], timeout: float, cwd: Path) -> tuple[int | str, str]:
    try:
        proc = subprocess.run([sys.executable, "-m", "tritonbisect", *args], capture_output=True, text=True,
                              timeout=timeout, cwd=cwd)
        return proc.returncode, proc.stdout + proc.stderr
    except subprocess.TimeoutExpired:
        return "timeout", ""


def run_script(script: Path, timeout: float) -> tuple[int | str, str]:
    try:
        proc = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=timeout,
                              cwd=script.parent)
        return proc.returncode, (proc.stdout + proc.stderr)[-600:]
    except subprocess.TimeoutExpired:
        return "timeout", ""


def oracles(trace: Path, recorded: dict, work: Path, pool: ThreadPoolExecutor, deadline: float) -> dict:
    """repro --kernel K for each launched kernel, run; repro --launches all, run."""
    kernels = recorded.get("launched", [])

    def one(kernel: str) -> dict:
        if time.monotonic() > deadline:
            return {"kernel": kernel, "status": "not run (time)"}
        out = work / f"oracle_{kernel}"
        rc, text = cli(["repro", str(trace), "--kernel", kernel, "--out", str(out)], 120, work)
        if rc != 0:
            return {"kernel": kernel, "status": "repro failed", "detail": text[-400:]}
        rc, text = run_script(out / "repro.py", 180)
        return {"kernel": kernel, "status": "pass" if rc == 0 else f"exit {rc}", "detail": "" if rc == 0 else text}

    results = list(pool.map(one, kernels))
    for kernel in recorded.get("benchmark_only", []):
        out = work / f"oracle_{kernel}"
        rc, text = cli(["repro", str(trace), "--kernel", kernel, "--out", str(out)], 120, work)
        results.append({"kernel": kernel, "status": "benchmark only: needs a golden", "repro_rc": rc,
                        "notes": [line for line in text.splitlines() if "note:" in line][:4]})
    replay: dict = {"status": "not run"}
    if kernels and time.monotonic() < deadline:
        out = work / "replay"
        rc, text = cli(["repro", str(trace), "--launches", "all", "--out", str(out)], 120, work)
        replay = {"repro_rc": rc, "repro_output": text[-1500:]}
        if rc == 0:
            rc, text = run_script(out / "replay.py", 300)
            replay.update(status="pass" if rc == 0 else f"exit {rc}", detail="" if rc == 0 else text)
        else:
            replay["status"] = "repro refused"
    return {"kernels": results, "replay": replay}


def check_program(name: str, root: Path, timeout: float, pool: ThreadPoolExecutor, deadline: float) -> dict:
    res: dict = {"program": name, "runs": {}}
    runs = res["runs"]

    def chain(ways: tuple[str, ...], fresh_each: bool) -> None:
        caches = Path(tempfile.mkdtemp(prefix=f"tb-{name}-"))
        for way in ways:
            if fresh_each:
                shutil.rmtree(caches, ignore_errors=True)
            runs[way] = run_program(name, way, caches, root, timeout)
        shutil.rmtree(caches, ignore_errors=True)

    # the warm chain shares one cache folder; each cold run gets fresh caches, beside it
    with ThreadPoolExecutor(3) as lanes:
        jobs = [lanes.submit(chain, ("untraced_cold", "untraced_warm", "ours_static", "ours_warm", "tp_warm"), False),
                lanes.submit(chain, ("ours_cold",), True), lanes.submit(chain, ("tp_cold",), True)]
        for job in jobs:
            job.result()
    ref = root / name / "untraced_warm" / "outputs.pt"
    for way in ("ours_warm", "ours_cold", "tp_warm", "tp_cold", "ours_static"):
        runs[way]["outputs_vs_untraced"] = compare_outputs(ref, root / name / way / "outputs.pt")
    for state in ("warm", "cold"):
        way = f"ours_{state}"
        rec = runs[way].get("recorded") or {}
        if rec.get("launched") or rec.get("benchmark_only"):
            work = root / name / way / "oracles"
            work.mkdir(exist_ok=True)
            runs[way]["oracles"] = oracles(root / name / way / "trace", rec, work, pool, deadline)
    return res


def summarize(res: dict) -> dict:
    runs = res["runs"]
    row: dict = {"program": res["program"]}
    static = runs.get("ours_static") or {}
    static_rec = static.get("recorded") or {}
    row["static"] = {"recorded": len((set(static_rec.get("launched", [])) | set(static_rec.get("benchmark_only", [])))
                                     & set(runs["untraced_warm"].get("triton_launched", []))),
                     "messages": (static.get("trace_stdout") or [])[:1] + (static.get("trace_messages") or [])[1:]}
    for state in ("warm", "cold"):
        launched = set(runs[f"untraced_{state}"].get("triton_launched", []))
        ours = runs[f"ours_{state}"].get("recorded") or {}
        tp = runs[f"tp_{state}"].get("recorded") or {}
        ours_set = set(ours.get("launched", [])) | set(ours.get("benchmark_only", []))
        tp_set = set(tp.get("launched", [])) | set(tp.get("benchmark_only", []))
        orc = runs[f"ours_{state}"].get("oracles") or {}
        kern = orc.get("kernels", [])
        row[state] = {
            "launched": len(launched), "ours": len(ours_set & launched), "tp": len(tp_set & launched),
            "ours_total": len(ours_set), "tp_total": len(tp_set),
            "missed_by_ours": sorted(launched - ours_set), "missed_by_tp": sorted(launched - tp_set),
            "oracles_pass": sum(1 for k in kern if k["status"] == "pass"),
            "oracles": sum(1 for k in kern if not k["status"].startswith("benchmark only")),
            "benchmark_only": sum(1 for k in kern if k["status"].startswith("benchmark only")),
            "replay": (orc.get("replay") or {}).get("status", "not run"),
            "outputs_equal": (runs[f"ours_{state}"].get("outputs_vs_untraced") or {}).get("close"),
            "cache": runs[f"ours_{state}"].get("cache"),
            "cache_untraced": runs[f"untraced_{state}"].get("cache"),
        }
    return row


def cache_cell(row: dict) -> str:
    """Hits of AOTAutograd's and the FX graph cache, untraced and traced, as the program counted them."""
    def hits(cache: dict | None) -> str:
        if not cache:
            return "-"
        return f"{cache.get('aot_autograd.autograd_cache_hit', 0)}, {cache.get('inductor.fxgraph_cache_hit', 0)}"

    if not row.get("cache") and not row.get("cache_untraced"):
        return "-"
    return f"{hits(row.get('cache_untraced'))} / {hits(row.get('cache'))}"


def markdown(data: dict) -> str:
    lines = [f"## {SECTION}", "",
             f"Made by `bench/capture_gpu_check.py` on {data.get('device', '?')} (torch {data.get('torch')}, "
             f"triton {data.get('triton')}, tritonparse {data.get('tritonparse')}). Per program: distinct Triton "
             "kernels launched (torch profiler, untraced run), recorded by `tritonbisect trace` and by tritonparse "
             "0.6 (`enable_trace_launch=True`); single-kernel oracles that pass against the program's own outputs "
             "(`repro --kernel K`, kernels that ran only in an autotuner's benchmark counted apart: they need a "
             "golden); whole-program replay (`repro --launches all`). Warm: the program ran untraced first "
             "(Inductor FX graph, autotune and Triton caches filled, the static launcher on by default); cold: "
             "fresh caches.", "",
             "| program | state | launched | trace | static launcher left on | tritonparse 0.6 | oracles pass | "
             "benchmark-only | replay | outputs = untraced | cache hits (AOTAutograd, FX graph): untraced / traced |",
             "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | --- | --- | --- |"]
    for row in data.get("rows", []):
        for state in ("warm", "cold"):
            r = row[state]
            static = str(row["static"]["recorded"]) if state == "warm" and "static" in row else "-"
            lines.append(f"| {row['program'].removeprefix('capture_')} | {state} | {r['launched']} | {r['ours']} | "
                         f"{static} | {r['tp']} | {r['oracles_pass']}/{r['oracles']} | {r['benchmark_only']} | "
                         f"{r['replay']} | {r['outputs_equal']} | {cache_cell(r)} |")
    missed = [(row["program"], s, row[s]["missed_by_ours"]) for row in data.get("rows", []) for s in ("warm", "cold")
              if row[s]["missed_by_ours"]]
    lines.append("")
    if missed:
        lines.append("Launched but not recorded by `trace`: " + "; ".join(f"{p} ({s}): {', '.join(m)}"
                                                                       for p, s, m in missed) + ".")
    else:
        lines.append("Every Triton kernel the profiler saw launched was recorded by `trace`, in both states.")
    lines.append("")
    lines.append("\"static launcher left on\": the warm run traced with TORCHINDUCTOR_USE_STATIC_CUDA_LAUNCHER=1 "
                 "put back inside the program's environment (what `trace` did before it turned the launcher off, "
                 "and what a program that sets torch._inductor.config.use_static_cuda_launcher gets). What `trace` "
                 "said then:")
    for row in data.get("rows", []):
        said = [m.strip() for m in (row.get("static") or {}).get("messages", []) if m.strip()]
        if said:
            lines.append(f"- {row['program'].removeprefix('capture_')}: " + " / ".join(said[:3]))
    for note in data.get("notes", []):
        lines.append("")
        lines.append(note)
    return "\n".join(lines) + "\n"


def pack(root: Path, out: Path) -> None:
    with tarfile.open(out / "traces.tar.gz", "w:gz") as tar:
        for name in NAMES:
            for way in TRACED_WAYS:
                trace = root / name / way / "trace"
                if not trace.exists():
                    continue
                whole = (name, way) in KEEP_WHOLE
                for f in sorted(trace.rglob("*")):
                    if f.is_file() and (whole or "saved_tensors" not in f.parts):
                        with contextlib.suppress(OSError, tarfile.TarError):  # a run past --budget
                            tar.add(f, arcname=f"{name}/{way}/{f.relative_to(trace)}")
    with tarfile.open(out / "logs.tar.gz", "w:gz") as tar:
        for f in sorted(root.rglob("*.txt")):
            if f.stat().st_size < 2_000_000:
                with contextlib.suppress(OSError, tarfile.TarError):
                    tar.add(f, arcname=str(f.relative_to(root)))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path)
    ap.add_argument("--budget", type=float, default=540, help="seconds; oracles left after it are not run")
    ap.add_argument("--parallel", type=int, default=7)
    ap.add_argument("--timeout", type=float, default=240, help="per program run")
    ap.add_argument("--only", default="", help="comma list of programs")
    ap.add_argument("--results-from", type=Path, help="only print the RESULTS.md section of this JSON")
    args = ap.parse_args()
    if args.results_from:
        print(markdown(json.loads(args.results_from.read_text())), end="")
        return 0
    if args.out is None:
        ap.error("--out is required")
    import torch
    import triton

    try:
        from importlib.metadata import version

        tp_version = version("tritonparse")
    except Exception:  # noqa: BLE001
        tp_version = "not installed"
    deadline = time.monotonic() + args.budget
    args.out.mkdir(parents=True, exist_ok=True)
    root = Path(tempfile.mkdtemp(prefix="tb-capture-"))
    data: dict = {"device": torch.cuda.get_device_name(0) if torch.cuda.is_available() else "cpu",
                  "torch": torch.__version__, "triton": triton.__version__, "tritonparse": tp_version,
                  "results": [], "rows": []}
    names = [n for n in NAMES if not args.only or n in args.only.split(",")]
    json_path = args.out / "capture_gpu_check.json"
    oracle_pool = ThreadPoolExecutor(8)
    pool = ThreadPoolExecutor(args.parallel)
    futures = {n: pool.submit(check_program, n, root, args.timeout, oracle_pool, deadline - 45) for n in names}
    for n in names:
        left = deadline - time.monotonic()
        try:
            res = futures[n].result(timeout=max(left, 1))
        except FuturesTimeout:
            res = {"program": n, "error": "not finished within --budget", "runs": {}}
        except Exception as exc:  # noqa: BLE001 - one program's failure is reported, the rest go on
            res = {"program": n, "error": repr(exc)[:800], "runs": {}}
        data["results"].append(res)
        if "error" not in res:
            data["rows"].append(summarize(res))
        json_path.write_text(json.dumps(data, indent=1))
        print(f"[{time.strftime('%H:%M:%S')}] {n} done", flush=True)
    (args.out / "capture_gpu_check.md").write_text(markdown(data))
    pack(root, args.out)
    print(markdown(data), flush=True)
    os._exit(0)  # runs still going past --budget are abandoned, not waited for


if __name__ == "__main__":
    sys.exit(main())
