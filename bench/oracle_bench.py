"""Benchmark of the reproducer oracle on the shared traces.

    python bench/oracle_bench.py [--traces DIR] [--device cpu|cuda] [--repeat 20] [--results bench/RESULTS.md]

Per trace:
  * mutation detection: each planted bug (tritonbisect.oracles.mutations) applied to the
    embedded kernel must end as mismatch / compile_error / runtime_error;
  * false alarms: the oracle records a golden, then compares `--repeat` times (both input
    vectors) in one process; any failure there is a false alarm;
  * overhead: a bare launch of the same kernel on prepared arguments, against one oracle
    iteration (rebuild arguments for both vectors, launch, synchronise, snapshot, compare)
    and against the whole `python repro.py` process (imports, compile, run, compare).

On the CPU the kernels run under TRITON_INTERPRET=1. With --results, the `## Reproducer
oracle` section of that file is replaced by the new figures.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "src"))

from results_md import write_section  # noqa: E402
from tritonbisect.oracles.runtime import generate_oracle  # noqa: E402
from tritonbisect.oracles.selfcheck import DETECTED, interpreter_env, self_check  # noqa: E402
from tritonbisect.traces.reader import load_trace  # noqa: E402

SELECT = {"vadd_zstd": 1}  # as in the tests: vadd_zstd reproduces its launch on offset views
EQUIVALENT_REASON = {
    ("matmul", "mask_grow"): "M, N, K are multiples of the blocks: every mask is all-true",
    ("matmul", "drop_other"): "every mask is all-true: `other=` is never used",
}

TIMING = r"""
import json, os, runpy, statistics, sys, time
folder, n, device = sys.argv[1], int(sys.argv[2]), sys.argv[3]
g = runpy.run_path(os.path.join(folder, "repro.py"), run_name="oracle_bench")
import torch
device = g["choose_device"](torch, device)
interpret = device == "cpu"
if interpret:
    os.environ["TRITON_INTERPRET"] = "1"
import triton
ctx = json.load(open(os.path.join(folder, "context.json")))
kernel = g["load_kernel"]()
cache = {}
golden = torch.load(os.path.join(folder, "golden.pt"), weights_only=True)
tol = {k: tuple(v) for k, v in g["TOLERANCES"].items()}
vectors = ctx.get("vectors", ["recorded", "fresh"])
state = g["build_state"](torch, ctx, device, "recorded", cache)
g["launch"](torch, triton, kernel, ctx, state, device, interpret)  # compile, warm caches
grid = tuple(ctx["launch"]["grid"])
opts = g["compile_options"](triton, ctx)
bare = []
for _ in range(n):
    t = time.perf_counter()
    kernel[grid](**state["values"], **opts)
    g["synchronize"](torch, device)
    bare.append(time.perf_counter() - t)
full = []
for _ in range(n):
    t = time.perf_counter()
    for v in vectors:
        st = g["build_state"](torch, ctx, device, v, cache)
        g["launch"](torch, triton, kernel, ctx, st, device, interpret)
        recs = g["compare"](torch, g["snapshot"](st, ctx, v), golden, tol)
        assert all(r["status"] == "pass" for r in recs), recs
    full.append(time.perf_counter() - t)
print(json.dumps({"bare_ms": 1e3 * statistics.median(bare), "iteration_ms": 1e3 * statistics.median(full),
                  "vectors": len(vectors)}))
"""


def overhead(oracle_dir: Path, n: int, device: str, env: dict) -> dict:
    proc = subprocess.run([sys.executable, "-c", TIMING, str(oracle_dir), str(n), device], env=env,
                          capture_output=True, text=True, timeout=1800)
    if proc.returncode != 0:
        return {"error": proc.stderr[-500:]}
    figures = json.loads(proc.stdout.strip().splitlines()[-1])
    t = time.perf_counter()
    run = subprocess.run([sys.executable, str(oracle_dir / "repro.py"), "--golden", str(oracle_dir / "golden.pt")],
                         env=env, capture_output=True, text=True, timeout=1800)
    figures["process_s"] = time.perf_counter() - t
    figures["process_status"] = run.returncode
    return figures


def bench(traces: Path, out: Path, repeat: int, device: str, timing_runs: int, only: set[str] | None) -> list[dict]:
    env = interpreter_env() if device == "cpu" else dict(os.environ)
    rows = []
    for folder in sorted(p.parent for p in traces.glob("*/logs")):
        if only and folder.name not in only:
            continue
        try:
            rows.append(bench_one(folder, out, repeat, device, timing_runs, env))
        except Exception as exc:  # one broken trace must not hide the others
            print(f"{folder.name}: {exc!r}", flush=True)
    return rows


def bench_one(folder: Path, out: Path, repeat: int, device: str, timing_runs: int, env: dict) -> dict:
    t0 = time.time()
    kernel = load_trace(folder / "logs").kernels()[0]
    oracle = generate_oracle(folder, kernel, out / folder.name, launch_id=SELECT.get(folder.name))
    check = self_check(oracle.out_dir, kernel, repeat=repeat, env=env, timeout=3600)
    row = {
        "trace": folder.name,
        "kernel": kernel,
        "launch": oracle.launch.index,
        "record": check.record.status,
        "reruns": repeat,
        "reruns_status": check.reruns.status if check.reruns else None,
        "false_alarms": 0 if check.reruns and check.reruns.status == "pass" else 1,
        "mutations": {m: (r.status if r else "n/a") for m, r in check.mutations.items()},
    }
    applicable = {m: s for m, s in row["mutations"].items() if s != "n/a"}
    equivalent = {m for m in applicable if (folder.name, m) in EQUIVALENT_REASON}
    row["applicable"] = len(applicable)
    row["equivalent"] = sorted(equivalent)
    row["detected"] = sum(1 for s in applicable.values() if s in DETECTED)
    row["overhead"] = overhead(oracle.out_dir, timing_runs, device, env) if check.record.status == "pass" else {}
    row["seconds"] = round(time.time() - t0, 1)
    print(json.dumps(row), flush=True)
    return row


def _ms(value: float | None) -> str:
    if value is None:
        return "?"
    return f"{value * 1000:.0f} µs" if value < 1 else f"{value:.1f} ms"


def markdown(rows: list[dict], device_label: str, repeat: int) -> str:
    lines = [
        "## Reproducer oracle",
        "",
        f"`python bench/oracle_bench.py` — {device_label}. Oracle for the default launch of each shared trace",
        "(vadd_zstd: launch 1, on views with storage_offset=3). Planted bugs: `op_swap`, `mask_grow` (`<`→`<=`), `mask_shrink` (`<`→`< b-1`),",
        "`store_dtype` (value rounded through the wrong dtype), `drop_other` (`other=` removed from a load).",
        "",
        f"| trace | launch | mutations detected | not detected (equivalent) | false alarms in {repeat} reruns "
        "| bare launch | oracle iteration (2 vectors = 2 launches) | overhead per launch | whole `python repro.py` |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for r in rows:
        o = r["overhead"]
        ratio = o["iteration_ms"] / o["vectors"] / o["bare_ms"] if o.get("bare_ms") else float("nan")
        non_equiv = r["applicable"] - len(r["equivalent"])
        missed = [m for m, s in r["mutations"].items() if s not in DETECTED and s != "n/a"]
        na = [m for m, s in r["mutations"].items() if s == "n/a"]
        lines.append(
            f"| {r['trace']} | {r['launch']} | {r['detected']}/{non_equiv} non-equivalent"
            f"{' (n/a: ' + ', '.join(na) + ')' if na else ''} | {', '.join(missed) or '—'} | "
            f"{r['false_alarms']}/{repeat} | {_ms(o.get('bare_ms'))} | "
            f"{_ms(o.get('iteration_ms'))} | {ratio:.1f}× | {o.get('process_s', float('nan')):.1f} s |"
        )
    total = sum(r["detected"] for r in rows)
    possible = sum(r["applicable"] - len(r["equivalent"]) for r in rows)
    lines += [
        "",
        f"Detection: {total}/{possible} planted bugs that change the launch's result; "
        f"false alarms: {sum(r['false_alarms'] for r in rows)} in {len(rows) * repeat} reruns.",
    ]
    for (trace, mutation), reason in EQUIVALENT_REASON.items():
        lines.append(f"Equivalent mutant {trace}/{mutation}: {reason} (the oracle passes it, as it should).")
    lines.append("")
    return "\n".join(lines)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    default = Path(os.environ.get("TRITONBISECT_TRACES", REPO.parent / "shared" / "traces"))
    ap.add_argument("--traces", type=Path, default=default)
    ap.add_argument("--out", type=Path, default=Path("/tmp/tritonbisect-oracle-bench"))
    ap.add_argument("--repeat", type=int, default=20)
    ap.add_argument("--device", default="cpu", help="cpu (TRITON_INTERPRET=1) or cuda")
    ap.add_argument("--timing-runs", type=int, default=5)
    ap.add_argument("--only", help="comma list of traces")
    ap.add_argument("--results", type=Path, help="update the '## Reproducer oracle' section of this file")
    args = ap.parse_args()
    traces = args.traces
    if not any(traces.glob("*/logs")):
        traces = next((p for p in traces.glob("*") if any(p.glob("*/logs"))), traces)
    rows = bench(traces, args.out, args.repeat, args.device, args.timing_runs,
                 set(args.only.split(",")) if args.only else None)
    import torch
    import triton

    label = (f"CPU ({platform.processor() or platform.machine()}, {os.cpu_count()} cores) under TRITON_INTERPRET=1"
             if args.device == "cpu" else args.device)
    label += f", torch {torch.__version__}, triton {triton.__version__}"
    section = markdown(rows, label, args.repeat)
    print(section)
    (args.out / "oracle_bench.json").write_text(json.dumps(rows, indent=1))
    if args.results:
        write_section("Reproducer oracle", section, args.results)
    return 0


if __name__ == "__main__":
    sys.exit(main())
