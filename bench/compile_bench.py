"""Benchmark of the compile oracle across real Triton releases (CPU only, no GPU).

    python bench/compile_bench.py [--releases 3.0.0,3.3.1,...] [--traces DIR] [--captures DIR] [--results bench/RESULTS.md]

For every kernel of the real traces (the shared H100 traces, the trimmed captures in
tests/data/compile_traces, and with --captures every kernel of a capture folder such as
/work/notes/gpu/capture1) it writes the compile oracle, records a codegen golden with the
traced Triton (3.6.0), then runs one bisect step per release exactly as a bisect would:
`python compile_repro.py --golden G --check codegen`, in a venv holding that release
(tests/real_triton.py: cached under ~/.cache/tritonbisect-tests). It reports:

  * which kernels each release compiles (pass / compile_error / crash / usage_error…);
  * the cost of a step: whole process, and inside it the child's interpreter start + import,
    the compile itself, and the codegen statistics (cuobjdump/nvdisasm from the wheel);
  * fidelity at the traced release: the TTIR and TTGIR it produces against the ones the
    trace recorded on the GPU machine.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "src"))
sys.path.insert(0, str(REPO / "tests"))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # testing/: the toy worlds

from results_md import write_section  # noqa: E402
from tritonbisect.core.errors import InputError  # noqa: E402
from tritonbisect.oracles.compile.folder import generate_compile_oracle  # noqa: E402
from tritonbisect.traces.reader import iter_records, load_trace  # noqa: E402

TRACED = "3.6.0"
RELEASES = ("3.0.0", "3.1.0", "3.2.0", "3.3.1", "3.4.0", "3.5.1", "3.6.0", "3.7.0", "3.8.0", "3.9.0")
SECTION = "Compile oracle across Triton releases"


def kernels(traces: Path | None, captures: Path | None) -> list[tuple[str, Path, str]]:
    out: list[tuple[str, Path, str]] = []
    if traces and traces.is_dir():
        for logs in sorted(traces.glob("*/*/logs")) + sorted(traces.glob("*/logs")):
            scenario = logs.parent
            if scenario.name in ("vadd_zstd", "vadd_noblob", "softmax_gzip"):
                continue  # the same kernels as vadd / softmax, only stored differently
            out += [(scenario.name, logs, k) for k in load_trace(logs).kernels()]
    data = REPO / "tests" / "data" / "compile_traces"
    if not (captures and captures.is_dir()):  # the tests' trimmed copies of the same captures
        for folder in sorted(p for p in data.iterdir() if p.is_dir()):
            out += [(f"{folder.name}/{k}", folder, k) for k in load_trace(folder).kernels()]
    if captures and captures.is_dir():
        for trace in sorted(captures.glob("*/tritonparse/trace")):
            out += [(f"capture:{trace.parts[-3]}/{k}", trace, k) for k in load_trace(trace).kernels()]
    return out


def release_python(version: str) -> Path:
    from real_triton import triton_release_python

    return triton_release_python(version)


def _norm_ir(text: str) -> str:
    text = re.sub(r"\s*loc\([^()]*(\([^()]*\))?[^()]*\)", "", text)
    return "\n".join(line for line in text.splitlines() if line.strip() and not line.startswith("#loc"))


def fidelity(folder: Path, kept: Path) -> dict[str, bool]:
    """Whether this compile's TTIR/TTGIR equal the ones recorded on the GPU machine."""
    ctx = json.loads((folder / "compile_context.json").read_text())
    recorded: dict[str, str] = {}
    from tritonbisect.traces.reader import find_trace_files

    for tf in find_trace_files(Path(ctx["trace"]["path"])):
        for _line, rec in iter_records(tf):
            payload = rec.get("payload") or {}
            if rec.get("event_type") == "compilation" and (payload.get("metadata") or {}).get("hash") == ctx["compilation"]["hash"]:
                recorded = payload.get("file_content") or {}
                break
        if recorded:
            break
    out = {}
    for ext in ("ttir", "ttgir"):
        mine = kept / f"{ctx['kernel']}.{ext}"
        theirs = [v for k, v in recorded.items() if k.endswith("." + ext)]
        if mine.is_file() and theirs:
            out[ext] = _norm_ir(mine.read_text()) == _norm_ir(theirs[0])
    return out


def step(python: Path, folder: Path, golden: Path, keep: Path | None = None) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        result = Path(tmp) / "r.json"
        args = [str(python), str(folder / "compile_repro.py"), "--golden", str(golden), "--check", "codegen",
                "--result", str(result)]
        if keep is not None:
            args += ["--keep", str(keep)]
        env = {k: v for k, v in os.environ.items() if k not in ("TRITONBISECT_RESULT", "PYTHONPATH")}
        t0 = time.perf_counter()
        proc = subprocess.run(args, capture_output=True, text=True, env=env, timeout=900)
        wall = time.perf_counter() - t0
        data = json.loads(result.read_text()) if result.is_file() else {"status": f"no result (exit {proc.returncode})"}
    comp = data.get("compile") or {}
    child = comp.get("child_seconds") or {}
    return {
        "status": data.get("status"),
        "reason": data.get("reason", ""),
        "wall": wall,
        "child": comp.get("seconds"),
        "import": (child.get("start", 0) or 0) + (child.get("import", 0) or 0),
        "compile": child.get("compile"),
        "stats": (data.get("seconds") or 0) - (comp.get("seconds") or 0) if comp.get("seconds") else None,
        "over": [d["text"] for d in data.get("differences", []) if d.get("over_threshold")],
    }


def _median(values: list[float]) -> float:
    return statistics.median(values) if values else float("nan")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--releases", default=",".join(RELEASES))
    ap.add_argument("--traces", type=Path, default=Path(os.environ.get("TRITONBISECT_TRACES", REPO.parent / "shared" / "traces")))
    ap.add_argument("--captures", type=Path, default=None, help="also every kernel of <DIR>/*/tritonparse/trace")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--results", type=Path, default=None, help="write the section into this RESULTS.md")
    args = ap.parse_args()
    releases = [r.strip() for r in args.releases.split(",") if r.strip()]

    work = Path(tempfile.mkdtemp(prefix="compile-bench-"))
    todo = kernels(args.traces, args.captures)
    folders: dict[str, Path] = {}
    refused: dict[str, str] = {}
    for i, (name, trace, kernel) in enumerate(todo):
        folder = work / f"k{i:02d}"
        try:
            generate_compile_oracle(trace, kernel, folder)
            folders[name] = folder
        except InputError as exc:
            refused[name] = exc.message
    print(f"{len(todo)} kernels: {len(folders)} oracles written, {len(refused)} refused", flush=True)

    pythons = {r: release_python(r) for r in releases}
    traced_py = pythons.get(TRACED) or release_python(TRACED)
    goldens: dict[str, Path] = {}
    fid: dict[str, dict[str, bool]] = {}
    for name, folder in folders.items():
        golden = folder / "golden_codegen.json"
        keep = folder / "kept"
        proc = subprocess.run([str(traced_py), str(folder / "compile_repro.py"), "--record-golden", str(golden),
                               "--keep", str(keep)], capture_output=True, text=True)
        if proc.returncode == 0:
            goldens[name] = golden
            fid[name] = fidelity(folder, keep)
        else:
            print(f"  golden of {name} at {TRACED} failed: {proc.stdout.strip()[:200]}", flush=True)

    results: dict[tuple[str, str], dict] = {}
    jobs = [(r, n) for r in releases for n in goldens]

    def run(job):
        release, name = job
        return job, step(pythons[release], folders[name], goldens[name])

    with ThreadPoolExecutor(max_workers=args.jobs) as pool:
        for (release, name), res in pool.map(run, jobs):
            results[(release, name)] = res
            print(f"  {release:6} {name:60} {res['status']:14} {res['wall']:.2f}s {res['reason'][:80]}", flush=True)

    body = render(releases, list(goldens), refused, results, fid, len(todo))
    print(body)
    if args.results:
        write_section(SECTION, body, args.results)


def render(releases, names, refused, results, fid, total) -> str:
    import platform

    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    lines = [
        f"Measured by `bench/compile_bench.py` on {platform.machine()} ({os.cpu_count()} cores, no GPU; load "
        f"average {load} at the end: the machine is shared, so the times are upper bounds), "
        f"{time.strftime('%Y-%m-%d')}. Kernels: every kernel of the real H100 traces available to the run "
        f"({total}; {len(names)} became compile oracles, {len(refused)} were refused by the source extraction). "
        f"Each step is what a bisect runs: `python compile_repro.py --golden G --check codegen` in a venv "
        f"of that release, with the golden recorded at the traced Triton {TRACED}; a fresh child process "
        f"compiles for the traced target (cuda sm90) and the wheel's cuobjdump/nvdisasm give the statistics.",
        "",
        "| release | compiled | other outcomes | step (median / max) | child start + import | compile | statistics | checked codegen differences vs 3.6.0 |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for release in releases:
        rows = [results[(release, n)] for n in names if (release, n) in results]
        ok = [r for r in rows if r["status"] in ("pass", "perf")]
        other: dict[str, int] = {}
        for r in rows:
            if r["status"] not in ("pass", "perf"):
                other[r["status"]] = other.get(r["status"], 0) + 1
        perf = sum(1 for r in rows if r["status"] == "perf")
        walls = [r["wall"] for r in ok]
        lines.append(
            f"| {release} | {len(ok)}/{len(rows)} | {', '.join(f'{k} {v}' for k, v in sorted(other.items())) or '-'} "
            f"| {_median(walls):.2f} s / {max(walls, default=float('nan')):.2f} s "
            f"| {_median([r['import'] for r in ok if r['import'] is not None]):.2f} s "
            f"| {_median([r['compile'] for r in ok if r['compile'] is not None]):.2f} s "
            f"| {_median([r['stats'] for r in ok if r['stats'] is not None]):.2f} s | {perf} of {len(ok)} kernels |"
        )
    lines += ["", "Per kernel (`ok` compiles; `cg` compiles with a checked codegen difference; otherwise the outcome):", ""]
    lines.append("| kernel | " + " | ".join(releases) + " |")
    lines.append("|---|" + "---|" * len(releases))
    for name in names:
        cells = []
        for release in releases:
            r = results.get((release, name))
            cells.append("-" if r is None else {"pass": "ok", "perf": "cg"}.get(r["status"], r["status"]))
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    same = [n for n in names if fid.get(n) and all(fid[n].values())]
    differ = [n for n in names if fid.get(n) and not all(fid[n].values())]
    lines += ["", f"Fidelity at the traced release {TRACED}: the TTIR and TTGIR of {len(same)} of "
              f"{len(same) + len(differ)} kernels equal the ones recorded on the H100 (locations aside)"
              + (f"; different: {', '.join(differ)}." if differ else ".")]
    examples = [(release, n, r["over"]) for (release, n), r in results.items() if r["over"]]
    if examples:
        lines += ["", "Examples of checked differences (default thresholds):", ""]
        seen = set()
        for release, name, over in sorted(examples, key=lambda e: (e[1], e[0])):
            if name in seen:
                continue
            seen.add(name)
            lines.append(f"- {name} at {release}: {'; '.join(over[:3])}")
            if len(seen) >= 6:
                break
    if refused:
        lines += ["", "Refused before compiling (the kernel source could not be cut out of the trace):", ""]
        for name, why in sorted(refused.items()):
            lines.append(f"- {name}: {why[:160]}")
    return "\n".join(lines)


if __name__ == "__main__":
    main()
