"""Issue 13 on a GPU: does tracing change the traced program, and what does a launch cost?

    PYTHONPATH=src python bench/tracer_gpu_check.py --out OUT [--budget 330] [--parallel 4]
    PYTHONPATH=src python bench/tracer_gpu_check.py --results-from OUT/tracer_gpu_check.json

1. Survival: `bench/gpu_programs/tracer_compile_modes.py` (torch.compile of a matmul+bias+ReLU
   in the mode under test, a pointwise and a reduction function, each called twice) under every
   mode (default, max-autotune, max-autotune-no-cudagraphs, reduce-overhead) with
   TORCHINDUCTOR_COMPILE_THREADS 1 and 8 (8: Inductor's subprocess compile workers), plus
   max-autotune-no-cudagraphs with autotuning in a subprocess, plus `tma_descriptors.py`
   (host TensorDescriptors, a tuple argument). Each is run untraced, traced by
   `tritonbisect trace`, and traced by tritonparse 0.6 (`structured_logging.init(...,
   enable_trace_launch=True)`), with fresh Triton/Inductor caches; exit codes and outputs
   are compared with the untraced run (bitwise; where the autotuner chose another kernel,
   both must be within tolerance of eager).
2. Overhead: `tracer_launch_loop.py` launches an add kernel on 4K and 4M floats in a loop;
   microseconds per launch untraced, under our tracer (no blobs / blobs / blobs and the
   outputs after the launch) and under tritonparse (launch trace / + tensor statistics /
   + blobs), measured one run at a time.

Writes OUT/tracer_gpu_check.json and OUT/tracer_gpu_check.md (the bench/RESULTS.md section);
the runs themselves (stdout, stderr, outputs, traces with blobs: large) go to a temporary
folder, or to --runs DIR to keep them; our trace of tma_descriptors.py is kept in
OUT/tma_descriptors_trace/. Needs torch and triton; tritonparse for
its column (skipped when not importable). Without CUDA it runs a reduced form (default mode,
one thread count, the launch loop under TRITON_INTERPRET=1) to test the script itself.
With --results-from it only writes the bench/RESULTS.md section from a JSON of a GPU run.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

HERE = Path(__file__).resolve().parent
PROGRAMS = HERE / "gpu_programs"
SECTION = "Tracer: survival and per-launch overhead on the GPU"

TP_RUNNER = r'''
import json, os, runpy, sys
import tritonparse.structured_logging as sl
sl.init(os.environ["TB_TP_DIR"], **json.loads(os.environ["TB_TP_OPTIONS"]))
prog = sys.argv[1]
sys.argv = sys.argv[1:]
sys.path.insert(0, os.path.dirname(prog))
try:
    runpy.run_path(prog, run_name="__main__")
finally:
    sl.clear_logging_config()
'''

TRACED = r'''
import json, sys
from pathlib import Path
from tritonbisect.traces.capture import run_traced
opts = json.loads(sys.argv[1])
run = run_traced(sys.argv[3:], Path(sys.argv[2]), max_blob_launches=opts["blobs"], outputs_after=opts["after"])
sys.exit(run.returncode)
'''

TOLERANCE = {"torch.float16": (1e-2, 1e-2), "torch.bfloat16": (2e-2, 2e-2), "torch.float32": (1e-4, 1e-4)}


# --- running one program one way -------------------------------------------------------


def run_way(name: str, program: str, args: list[str], way: str, root: Path, env_extra: dict, timeout: float,
            ours: dict | None = None, tp_options: dict | None = None) -> dict:
    folder = root / "runs" / name / way
    folder.mkdir(parents=True, exist_ok=True)
    caches = Path(tempfile.mkdtemp(prefix=f"tb-cache-{name}-{way}-"))
    env = dict(os.environ)
    env.update(TRITON_CACHE_DIR=str(caches / "triton"), TORCHINDUCTOR_CACHE_DIR=str(caches / "inductor"),
               TORCHINDUCTOR_FX_GRAPH_CACHE="0", TORCHINDUCTOR_AUTOGRAD_CACHE="0",
               PYTHONPATH=os.pathsep.join(p for p in (str(PROGRAMS), env.get("PYTHONPATH", "")) if p))
    env.update(env_extra)
    outputs = folder / "outputs.pt"
    prog = [sys.executable, str(PROGRAMS / program), str(outputs), *args]
    trace = folder / "trace"
    if way == "untraced":
        cmd = prog
    elif way.startswith("tritonbisect"):
        env["PYTHONPATH"] = os.pathsep.join((str(HERE.parent / "src"), env["PYTHONPATH"]))
        cmd = [sys.executable, "-c", TRACED, json.dumps(ours or {"blobs": 16, "after": True}), str(trace), *prog]
    else:
        env["TB_TP_DIR"] = str(trace)
        env["TB_TP_OPTIONS"] = json.dumps(tp_options or {"enable_trace_launch": True})
        runner = folder / "tp_runner.py"
        runner.write_text(TP_RUNNER)
        cmd = [sys.executable, str(runner), *prog[1:]]
    start = time.monotonic()
    try:
        proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout)
        rc, out, err = proc.returncode, proc.stdout, proc.stderr
    except subprocess.TimeoutExpired as exc:
        rc, out, err = "timeout", _text(exc.stdout), _text(exc.stderr)
    seconds = round(time.monotonic() - start, 1)
    (folder / "stdout.txt").write_text(out)
    (folder / "stderr.txt").write_text(err)
    shutil.rmtree(caches, ignore_errors=True)
    result = {"rc": rc, "seconds": seconds, "stdout_tail": out[-400:]}
    if rc != 0:
        result["stderr_tail"] = err[-2500:]
    if trace.exists():
        result["trace"] = trace_facts(trace)
    return result


def _text(data) -> str:
    if data is None:
        return ""
    return data if isinstance(data, str) else data.decode(errors="replace")


def trace_facts(trace: Path) -> dict:
    from tritonbisect.traces.capture import read_losses
    from tritonbisect.traces.reader import find_trace_files, load_trace

    try:
        if not find_trace_files(trace):
            raise ValueError("no trace files")
    except Exception:  # noqa: BLE001 - no trace written: the program launched no Triton kernel
        return {"readable": None, "files": 0}
    try:
        tr = load_trace(trace)
    except Exception as exc:  # noqa: BLE001 - reported, not raised
        return {"readable": False, "error": str(exc)[:500]}
    facts = {
        "readable": True,
        "files": len(tr.files),
        "files_with_launches": len({launch.file for launch in tr.launches}),
        "compilations": len(tr.compilations),
        "launches": len(tr.launches),
        "launches_with_args": sum(1 for launch in tr.launches if launch.args and not launch.graph_capture),
        "graph_capture_launches": sum(1 for launch in tr.launches if launch.graph_capture),
        "benchmark_launches": sum(1 for launch in tr.launches if launch.autotune_benchmark),
        "with_outputs_after": sum(1 for launch in tr.launches if launch.after),
        "launches_without_compilation": sum(1 for launch in tr.launches if tr.compilation_of(launch) is None),
    }
    losses = read_losses(trace)
    if losses:
        facts["tracer_losses"] = [{"stage": x.stage, "count": x.count, "error": x.error} for x in losses]
    kinds: dict[str, list] = {}
    for launch in tr.launches:
        for name, rec in launch.args.items():
            if isinstance(rec, dict) and rec.get("type") in ("TensorDescriptor", "tuple"):
                kinds.setdefault(launch.name, []).append(
                    [name, rec["type"], "base" in rec or "elements" in rec, name in launch.after])
    if kinds:
        facts["descriptor_and_tuple_args"] = kinds  # [arg, type, rebuildable, recorded after]
    return facts


def compare(untraced: Path, other: Path) -> dict:
    import torch

    if not untraced.exists() or not other.exists():
        return {"compared": False}
    a, b = torch.load(untraced), torch.load(other)
    result: dict = {"compared": True, "keys_equal": sorted(a) == sorted(b), "bitwise": {}, "max_abs": {},
                    "within_tolerance_of_eager": {}}
    for key in a:
        if key not in b or a[key].shape != b[key].shape:
            result["bitwise"][key] = False
            continue
        result["bitwise"][key] = bool(torch.equal(a[key], b[key]))
        diff = (a[key].float() - b[key].float()).abs()
        result["max_abs"][key] = float(diff.max()) if diff.numel() else 0.0
        eager = a.get("eager_" + key)
        if eager is not None and not result["bitwise"][key]:
            rtol, atol = TOLERANCE.get(str(a[key].dtype), (1e-4, 1e-4))
            result["within_tolerance_of_eager"][key] = bool(
                torch.allclose(a[key].float(), eager.float(), rtol=rtol, atol=atol)
                and torch.allclose(b[key].float(), eager.float(), rtol=rtol, atol=atol))
    return result


def verdict(untraced: dict, traced: dict) -> str:
    if traced["rc"] != untraced["rc"]:
        return "CRASH" if traced["rc"] not in (0,) else "EXIT CODE DIFFERS"
    cmp = traced.get("vs_untraced") or {}
    if not cmp.get("compared"):
        return "same exit code (no outputs to compare)"
    if not cmp["keys_equal"]:
        return "OUTPUTS DIFFER"
    differing = [k for k, same in cmp["bitwise"].items() if not same]
    if not differing:
        return "same (bitwise)"
    if all(cmp["within_tolerance_of_eager"].get(k) for k in differing):
        return "same within tolerance (" + ", ".join(differing) + ": another autotuned kernel)"
    return "OUTPUTS DIFFER (" + ", ".join(differing) + ")"


# --- the two parts -----------------------------------------------------------------------


def survival_matrix(cuda: bool) -> list[dict]:
    """The configurations, most telling first (a run not started within the budget is skipped)."""
    if not cuda:
        return [{"name": "default-t1", "program": "tracer_compile_modes.py", "args": ["default"],
                 "env": {"TORCHINDUCTOR_COMPILE_THREADS": "1"}}]
    order = [("max-autotune-no-cudagraphs", 8), ("max-autotune", 8), ("reduce-overhead", 8), ("default", 8),
             ("max-autotune-no-cudagraphs", 1), ("max-autotune", 1), ("reduce-overhead", 1), ("default", 1)]
    configs = [{"name": f"{mode}-t{t}", "program": "tracer_compile_modes.py", "args": [mode],
                "env": {"TORCHINDUCTOR_COMPILE_THREADS": str(t)}} for mode, t in order]
    configs.insert(2, {"name": "max-autotune-no-cudagraphs-t8-subproc", "program": "tracer_compile_modes.py",
                       "args": ["max-autotune-no-cudagraphs"],
                       "env": {"TORCHINDUCTOR_COMPILE_THREADS": "8", "TORCHINDUCTOR_AUTOTUNE_IN_SUBPROC": "1"}})
    configs.append({"name": "tma_descriptors", "program": "tma_descriptors.py", "args": [], "env": {}})
    return configs


def compare_config(config: dict, entry: dict, ways: list[str], root: Path) -> None:
    base = root / "runs" / config["name"] / "untraced" / "outputs.pt"
    for way in ways[1:]:
        if "seconds" in entry.get(way, {}) and "seconds" in entry.get("untraced", {}):
            entry[way]["vs_untraced"] = compare(base, root / "runs" / config["name"] / way / "outputs.pt")
            entry[way]["verdict"] = verdict(entry["untraced"], entry[way])


OVERHEAD_VARIANTS = [
    ("untraced", "untraced", None, None),
    ("tritonbisect, no blobs", "tritonbisect", {"blobs": 0, "after": False}, None),
    ("tritonbisect, blobs", "tritonbisect", {"blobs": 10**9, "after": False}, None),
    ("tritonbisect, blobs + outputs after", "tritonbisect", {"blobs": 10**9, "after": True}, None),
    ("tritonparse, launch trace", "tritonparse", None, {"enable_trace_launch": True}),
    ("tritonparse, + tensor statistics", "tritonparse", None,
     {"enable_trace_launch": True, "enable_more_tensor_information": True}),
    ("tritonparse, + blobs", "tritonparse", None,
     {"enable_trace_launch": True, "enable_more_tensor_information": True, "enable_tensor_blob_storage": True}),
]


def overhead(cuda: bool, has_tp: bool, root: Path, timeout: float, deadline: float) -> list[dict]:
    sizes = [(4096, 2000, 200), (1 << 22, 500, 20)] if cuda else [(4096, 20, 5)]
    env = {} if cuda else {"TRITON_INTERPRET": "1"}
    rows = []
    for n, plain, with_blobs in sizes:
        for label, way, ours, tp in OVERHEAD_VARIANTS:
            if way == "tritonparse" and not has_tp:
                continue
            repeat = with_blobs if (ours or {}).get("blobs") or (tp or {}).get("enable_tensor_blob_storage") else plain
            if time.monotonic() > deadline:
                rows.append({"variant": label, "n": n, "skipped": "time budget"})
                continue
            name = f"overhead-{n}-{label.replace(' ', '_').replace(',', '').replace('+', 'and')}"
            res = run_way(name, "tracer_launch_loop.py", [str(n), str(repeat)], way, root, env, timeout,
                          ours=ours, tp_options=tp)
            row = {"variant": label, "n": n, "repeat": repeat, "rc": res["rc"], "seconds": res["seconds"]}
            try:
                row["per_launch_us"] = json.loads(res["stdout_tail"].strip().splitlines()[-1])["per_launch_us"]
            except (ValueError, IndexError, KeyError):
                row["error"] = res.get("stderr_tail", "")[-800:]
            row["trace"] = res.get("trace")
            rows.append(row)
    for row in rows:
        base = next((r for r in rows if r["n"] == row["n"] and r["variant"] == "untraced"), None)
        if base and "per_launch_us" in base and "per_launch_us" in row:
            row["overhead_us"] = row["per_launch_us"] - base["per_launch_us"]
    return rows


# --- report ------------------------------------------------------------------------------


def _fmt_run(run: dict) -> str:
    if "seconds" not in run:
        return str(run.get("rc"))
    text = f"rc {run['rc']}, {run['seconds']} s"
    if run.get("verdict"):
        text += f": {run['verdict']}"
    facts = run.get("trace") or {}
    if facts.get("readable"):
        text += (f"; {facts['launches']} launches ({facts['launches_with_args']} with args, "
                 f"{facts['with_outputs_after']} with outputs after), {facts['files']} files")
        if facts.get("tracer_losses"):
            text += f", {sum(x['count'] for x in facts['tracer_losses'])} records lost"
    elif facts and facts.get("readable") is None:
        text += "; no trace files"
    elif facts:
        text += "; trace NOT readable"
    for kernel, args in (facts.get("descriptor_and_tuple_args") or {}).items():
        good = sum(1 for _arg, _kind, rebuildable, after in args if rebuildable and after)
        text += f"; {kernel}: {good}/{len(args)} descriptor/tuple args rebuildable and recorded after"
    return text


def markdown(data: dict) -> str:
    lines = [f"## {SECTION}", "",
             f"`bench/tracer_gpu_check.py` on {data.get('gpu') or 'CPU (reduced form)'}, torch {data.get('torch')}, "
             f"triton {data.get('triton')}, tritonparse {data.get('tritonparse') or 'not installed'}; "
             f"{data.get('seconds')} s in all. Fresh Triton/Inductor caches per run. Verdicts compare with the "
             "untraced run: exit code, then every output bitwise (where the autotuner picked another kernel, "
             "both runs must be within tolerance of eager).", "",
             "| program | " + " | ".join(data["ways"]) + " |", "|---" * (1 + len(data["ways"])) + "|"]
    for name, entry in data["survival"].items():
        lines.append(f"| {name} | " + " | ".join(_fmt_run(entry.get(w, {})) for w in data["ways"]) + " |")
    survived = {w: [n for n, e in data["survival"].items()
                    if e.get(w, {}).get("verdict", "").startswith("same")] for w in data["ways"][1:]}
    lines.append("")
    for way, names in survived.items():
        lines.append(f"- {way} survives {len(names)} of {len(data['survival'])}: {', '.join(names) or 'none'}")
    lines += ["", "Per-launch cost (`tracer_launch_loop.py`: an add kernel in a loop, wall time per launch with a "
              "sync at the end; blobs are saved for every timed launch):", "",
              "| variant | n | launches | µs per launch | overhead µs |", "|---|---|---|---|---|"]
    for row in data["overhead"]:
        us = f"{row['per_launch_us']:.1f}" if "per_launch_us" in row else row.get("skipped") or "failed"
        over = f"{row['overhead_us']:+.1f}" if "overhead_us" in row else ""
        lines.append(f"| {row['variant']} | {row['n']} | {row.get('repeat', '')} | {us} | {over} |")
    return "\n".join(lines) + "\n"


def write_results(json_path: Path) -> None:
    sys.path.insert(0, str(HERE))
    from results_md import write_section

    data = json.loads(json_path.read_text())
    write_section(SECTION, markdown(data))
    print(f"wrote section '{SECTION}' of {HERE / 'RESULTS.md'}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path)
    parser.add_argument("--budget", type=float, default=330, help="seconds; runs not started by then are skipped")
    parser.add_argument("--parallel", type=int, default=5, help="survival runs at once")
    parser.add_argument("--timeout", type=float, default=150, help="per run, seconds")
    parser.add_argument("--runs", type=Path, help="keep every run (outputs, traces) under this folder")
    parser.add_argument("--results-from", type=Path, help="only write bench/RESULTS.md from this JSON")
    opts = parser.parse_args()
    if opts.results_from:
        write_results(opts.results_from)
        return 0
    if opts.out is None:
        parser.error("--out is required")
    start = time.monotonic()
    opts.out.mkdir(parents=True, exist_ok=True)
    work = opts.runs or Path(tempfile.mkdtemp(prefix="tracer-gpu-check-"))
    import torch
    import triton

    cuda = torch.cuda.is_available()
    has_tp = importlib.util.find_spec("tritonparse") is not None
    ways = ["untraced", "tritonbisect"] + (["tritonparse"] if has_tp else [])
    tp_version = None
    if has_tp:
        from importlib.metadata import PackageNotFoundError, version

        try:
            tp_version = version("tritonparse")
        except PackageNotFoundError:
            tp_version = "?"
    data: dict = {"python": sys.version.split()[0], "torch": torch.__version__, "triton": triton.__version__,
                  "tritonparse": tp_version, "gpu": torch.cuda.get_device_name() if cuda else None, "ways": ways,
                  "survival": {}, "overhead": []}
    survival_deadline = start + opts.budget * 0.6
    configs = survival_matrix(cuda)
    entries: dict[str, dict] = {c["name"]: {"program": c["program"], "args": c["args"], "env": c["env"]}
                                for c in configs}

    def one(task):
        config, way = task
        if time.monotonic() > survival_deadline:
            entries[config["name"]][way] = {"rc": "skipped (time budget)"}
            return
        result = run_way(config["name"], config["program"], config["args"], way, work, config["env"],
                         opts.timeout)
        entries[config["name"]][way] = result
        print(f"{config['name']:<40} {way:<13} rc {result['rc']} {result['seconds']} s", flush=True)

    with ThreadPoolExecutor(max(1, opts.parallel)) as pool:  # every (program, way) at once, in order
        list(pool.map(one, [(c, w) for c in configs for w in ways]))
    for config in configs:
        compare_config(config, entries[config["name"]], ways, work)
    data["survival"] = entries
    sample = work / "runs" / "tma_descriptors" / "tritonbisect" / "trace"
    if sample.is_dir():  # small, and a real trace of descriptor and tuple arguments for the oracle
        shutil.copytree(sample, opts.out / "tma_descriptors_trace", dirs_exist_ok=True)
    data["overhead"] = overhead(cuda, has_tp, work, opts.timeout, start + opts.budget)
    if opts.runs is None:
        shutil.rmtree(work, ignore_errors=True)
    data["seconds"] = round(time.monotonic() - start, 1)
    (opts.out / "tracer_gpu_check.json").write_text(json.dumps(data, indent=1))
    (opts.out / "tracer_gpu_check.md").write_text(markdown(data))
    print(markdown(data))
    return 0


if __name__ == "__main__":
    sys.exit(main())
