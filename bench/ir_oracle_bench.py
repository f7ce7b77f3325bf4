"""Benchmark of the IR oracle and of pass-level narrowing, CPU only.

    python bench/ir_oracle_bench.py [--traces DIR] [--runs 5] [--results bench/RESULTS.md]

1. One oracle step (`python compile_repro.py`, as a bisect runs it) per kernel of the shared
   H100 traces, with the Triton of this Python, from the Python source (`--mode compile`),
   from the recorded TTIR and from the recorded TTGIR: median wall seconds of --runs.
2. Narrowing on the toy pass-pipeline Triton: `run --oracle ir --narrow`-style session, then
   `narrow SESSION` timed (builds: 0, the cached builds of culprit and parent).
3. Narrowing real release pairs (venvs from tests/real_triton.py): vadd's recorded TTIR under
   3.6.0 and 3.9.0; matmul's source under 3.3.1 and 3.4.0 (the release where its registers
   moved, as `wheels --check codegen` finds): the cost of two dumped compiles and the comparison.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "src"))
sys.path.insert(0, str(REPO / "tests"))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # testing/: the toy worlds

from results_md import write_section  # noqa: E402
from tritonbisect.traces.reader import load_trace  # noqa: E402

SECTION = "IR oracle and pass-level narrowing"
# measured once by hand (it downloads ~1 GB of wheels), 2026-11-24, this machine
WHEELS_SESSION = (
    "End to end on published releases: `tritonbisect wheels --good 3.3.1 --bad 3.9.0 --repro "
    "h100-triton3.6/matmul --kernel matmul_kernel --oracle compile --check codegen --codegen-threshold regs=0 "
    "--narrow` tested 6 versions (5 downloads, 955.6 MB), named 3.4.0 (registers moved), then narrowed it "
    "against 3.3.1 in 10.5 s with builds: 0 (the two published wheels from the download cache, installed into "
    "scratch venvs, compiled with dumps): the IR parts ways at `TritonGPUAssignLatencies`, where 3.4's software "
    "pipeliner replaced the warp-specialization passes; the last agreeing pass is "
    "`TritonGPUCombineTensorSelectAndIf`."
)
SCENARIOS = ("vadd", "softmax", "matmul", "transpose")


def _cli(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("TRITONBISECT_RESULT", "TRITON_INTERPRET")}
    env["PYTHONPATH"] = str(REPO / "src")
    return subprocess.run([sys.executable, "-m", "tritonbisect.cli", *args], capture_output=True, text=True,
                          env=env, cwd=cwd, check=False, timeout=600)


def _step_seconds(folder: Path, runs: int) -> tuple[float, str]:
    times, status = [], "?"
    env = {k: v for k, v in os.environ.items() if k != "TRITONBISECT_RESULT"}
    for _ in range(runs):
        t0 = time.perf_counter()
        proc = subprocess.run([sys.executable, str(folder / "compile_repro.py")], capture_output=True, text=True,
                              env=env, check=False)
        times.append(time.perf_counter() - t0)
        status = proc.stdout.split(":", 1)[0].lower() or f"exit {proc.returncode}"
    return statistics.median(times), status


def oracle_steps(traces: Path, runs: int, tmp: Path) -> list[str]:
    rows = ["| kernel | source (`--mode compile`) | TTIR (`--from ttir`) | TTGIR (`--from ttgir`) |",
            "|---|---|---|---|"]
    totals: dict[str, list[float]] = {"source": [], "ttir": [], "ttgir": []}
    for name in SCENARIOS:
        trace = traces / "h100-triton3.6" / name
        kernel = load_trace(trace / "logs").kernels()[0]
        cells = []
        for how, args in (("source", ["--mode", "compile"]), ("ttir", ["--from", "ttir"]),
                          ("ttgir", ["--from", "ttgir"])):
            out = tmp / f"{name}-{how}"
            proc = _cli("repro", str(trace), "--kernel", kernel, *args, "--out", str(out))
            if proc.returncode != 0:
                cells.append(f"not written: {proc.stderr.strip()[:80]}")
                continue
            seconds, status = _step_seconds(out, runs)
            totals[how].append(seconds)
            cells.append(f"{seconds:.2f} s ({status})")
        rows.append(f"| {kernel} | " + " | ".join(cells) + " |")
    med = {k: statistics.median(v) for k, v in totals.items() if v}
    rows.append(f"| **median** | {med.get('source', 0):.2f} s | {med.get('ttir', 0):.2f} s | {med.get('ttgir', 0):.2f} s |")
    return rows


def toy_narrowing(tmp: Path) -> dict[str, object]:
    from testing.toyworld.pass_triton import make_pass_triton

    truth = make_pass_triton(tmp / "toy" / "repo")
    home = tmp / "home"
    t0 = time.perf_counter()
    proc = _cli("run", "--repo", str(tmp / "toy" / "repo"), "--good", truth["order"][0], "--bad", truth["order"][-1],
                "--build", truth["build"], "--artifact", truth["artifact"], "--repro", truth["ttir"], "--oracle", "ir",
                "--compile-target", "cuda:90", "--env", "PYTHONPATH=build", "--workdir", str(home), "--json")
    bisect_s = time.perf_counter() - t0
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    t0 = time.perf_counter()
    narrowed = _cli("narrow", result["session"], "--workdir", str(home), "--json")
    wall = time.perf_counter() - t0
    data = json.loads(narrowed.stdout)
    return {"bisect_s": bisect_s, "bisect_builds": result["builds"], "narrow_wall_s": wall,
            "narrow_inside_s": data["seconds"], "builds": data["builds"],
            "named": data["first_difference"]["pass"], "right": data["first_difference"]["pass"].startswith(truth["planted_pass"])}


def release_narrowing(traces: Path, tmp: Path) -> list[dict[str, object]]:
    """Narrow real release pairs: (kernel, how, old, new)."""
    try:
        from real_triton import triton_release_python
    except BaseException as exc:  # noqa: BLE001
        print(f"releases unavailable: {exc}", file=sys.stderr)
        return []
    from tritonbisect.narrow.narrowing import narrow_compiles

    env = {k: v for k, v in os.environ.items() if k != "TRITONBISECT_RESULT"}
    out = []
    for name, how, old, new in (("vadd", "ttir", "3.6.0", "3.9.0"), ("matmul", "source", "3.3.1", "3.4.0")):
        trace = traces / "h100-triton3.6" / name
        kernel = load_trace(trace / "logs").kernels()[0]
        folder = tmp / f"narrow-{name}"
        args = ["--from", how] if how != "source" else ["--mode", "compile"]
        proc = _cli("repro", str(trace), "--kernel", kernel, *args, "--out", str(folder))
        if proc.returncode != 0:
            continue
        job = json.loads((folder / "compile_context.json").read_text())["job"]
        job["what"]["file"] = str(folder / job["what"]["file"])
        try:
            pythons = [str(triton_release_python(v)) for v in (old, new)]
        except BaseException as exc:  # noqa: BLE001 - pytest.skip without an index
            print(f"release unavailable: {exc}", file=sys.stderr)
            continue
        t0 = time.perf_counter()
        result, _ = narrow_compiles(job, (pythons[0], env, tmp), (pythons[1], env, tmp), tmp)
        out.append({"kernel": kernel, "how": how, "old": old, "new": new, "seconds": time.perf_counter() - t0,
                    "passes": result["passes"], "named": result["first_difference"]["pass"],
                    "last_agreeing": result["last_agreeing"]})
    return out


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--traces", type=Path, default=Path(os.environ.get("TRITONBISECT_TRACES", "/work/shared/traces")))
    p.add_argument("--runs", type=int, default=5)
    p.add_argument("--results", type=Path, default=REPO / "bench" / "RESULTS.md")
    args = p.parse_args()
    import triton  # noqa: F401 - the Triton the steps compile with

    version = subprocess.run([sys.executable, "-c", "import triton; print(triton.__version__)"],
                             capture_output=True, text=True, check=True).stdout.strip()
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        rows = oracle_steps(args.traces, args.runs, tmp)
        toy = toy_narrowing(tmp / "toy-world")
        real = release_narrowing(args.traces, tmp)
    lines = [
        f"One oracle step as a bisect runs it (`python compile_repro.py`, a fresh process and compile child), "
        f"Triton {version} from PyPI on this CPU-only machine, compiling for sm90; median of {args.runs} runs. "
        "The kernels are the shared H100 traces (recorded by Triton 3.6.0). `bench/ir_oracle_bench.py`.",
        "",
        *rows,
        "",
        "Replaying the IR saves only the frontend (AST → TTIR) and, from TTGIR, the TTIR passes: a step is "
        "dominated by two interpreter starts, `import triton` and the codegen statistics (cuobjdump/nvdisasm), "
        "so the IR oracle costs about what the source oracle costs. Its value is what it can replay (IR from MLIR "
        "builders, Helion, Inductor; a backend-only bug), not speed.",
        "",
        "Narrowing (`tritonbisect narrow SESSION`) after a bisect of the toy pass-pipeline Triton "
        "(toyworld/pass_triton.py: the culprit changes TritonGPUCoalesce; 8 commits):",
        "",
        "| what | seconds | builds |",
        "|---|---|---|",
        f"| the bisect (`run --oracle ir`) | {toy['bisect_s']:.2f} | {toy['bisect_builds']} |",
        f"| `narrow` (whole command) | {toy['narrow_wall_s']:.2f} | {toy['builds']} |",
        f"| of which the two dumped compiles and the comparison | {toy['narrow_inside_s']:.2f} | 0 |",
        "",
        f"It names `{toy['named']}` ({'right' if toy['right'] else 'WRONG'}).",
    ]
    if real:
        lines += ["", "Real release pairs (venvs of tests/real_triton.py; two dumped compiles and the comparison):", "",
                  "| kernel | compiled from | releases | passes | seconds | first pass whose output differs | "
                  "last agreeing |", "|---|---|---|---|---|---|---|"]
        for r in real:
            lines.append(f"| {r['kernel']} | {r['how']} | {r['old']} → {r['new']} | {r['passes']['parent']} / "
                         f"{r['passes']['culprit']} | {r['seconds']:.2f} | `{r['named']}` | `{r['last_agreeing']}` |")
    lines += ["", WHEELS_SESSION]
    body = "\n".join(lines)
    print(body)
    write_section(SECTION, body, args.results)
    return 0


if __name__ == "__main__":
    sys.exit(main())
