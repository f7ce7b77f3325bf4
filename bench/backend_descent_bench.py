#!/usr/bin/env python3
"""Builds and seconds per step of a backend-LLVM descent against a core-LLVM descent, on the
toy world with an AMD backend whose code generator is built against ROCm's LLVM.

    python bench/backend_descent_bench.py            # prints the table and a JSON line
    python bench/backend_descent_bench.py --write    # and writes its section of bench/RESULTS.md

Two `tritonbisect triton ... --llvm-dir L --amd-llvm-dir R --json` sessions, each in a fresh
workdir (cold caches), each over the one Triton commit that bumps an LLVM:
  core     the core LLVM bump: the "llvm" phase bisects llvm-project; each step builds that
           LLVM and the Triton commit against it (a new libtriton per step)
  backend  the AMD LLVM bump: the "amd-llvm" phase bisects ROCm's llvm-project; each step
           builds that LLVM and the AMD codegen library, and loads the library at run time
           into the one Triton wheel (built by the Triton phase already)
The figures are the sessions' own --json totals of the descent phase (`phases[*].totals`):
steps, what the steps compiled (`built`), and the seconds of its steps.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # testing/: the toy worlds
from testing.toyworld import make_world  # noqa: E402


def run(world, workdir: Path, good: str, bad: str) -> dict:
    rocm = world.root / "rocm-llvm-project"
    cmd = [sys.executable, "-m", "tritonbisect", "triton", "--triton-dir", str(world.triton),
           "--llvm-dir", str(world.llvm), "--amd-llvm-dir", str(rocm), "--good", good, "--bad", bad,
           "--test", world.truth["triton_test"], "--workdir", str(workdir), "--json"]
    proc = subprocess.run(cmd, capture_output=True, text=True, env=dict(os.environ))
    lines = [line for line in proc.stdout.splitlines() if line.startswith("{")]
    if not lines:
        raise SystemExit(f"no JSON (exit {proc.returncode}):\n{proc.stderr[-3000:]}")
    return json.loads(lines[-1])


def per_step(phase: dict) -> dict:
    totals = phase["totals"]
    steps = max(1, totals["steps"])
    built = totals["built"]
    return {
        "phase": phase["name"], "culprit": phase["culprit"], "steps": totals["steps"],
        "builds_per_step": round(totals["builds"] / steps, 2),
        "triton_builds_per_step": round(built.get("triton", 0) / steps, 2),
        "llvm_builds_per_step": round(sum(n for k, n in built.items() if k.startswith("llvm")) / steps, 2),
        "codegen_builds_per_step": round(sum(n for k, n in built.items() if k.startswith("codegen")) / steps, 2),
        "seconds_per_step": round(totals["seconds"] / steps, 1),
        "seconds": totals["seconds"],
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write", action="store_true", help="write the section of bench/RESULTS.md")
    parser.add_argument("--rocm-commits", type=int, default=16)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="tb-backend-bench-") as tmp:
        root = Path(tmp)
        world = make_world(root / "world", llvm_commits=22, triton_commits=44, eras=True, amd_backend=True,
                           rocm_commits=args.rocm_commits)
        t = world.truth
        core = run(world, root / "core", t["bump_parent"], t["bump"])
        backend = run(world, root / "backend", t["triton_order"][t["triton_order"].index(t["amd_bump"]) - 1],
                      t["amd_bump"])
        rows = []
        for label, res, name, want in (("core LLVM (llvm-project)", core, "llvm", t["llvm_regression"]),
                                       ("AMD LLVM (ROCm's)", backend, "amd-llvm", t["rocm_regression"])):
            phase = next(p for p in res["phases"] if p["name"] == name)
            row = per_step(phase)
            row["label"] = label
            row["right"] = phase["culprit"] == want
            rows.append(row)
    table = [
        "| descent | steps | builds/step | Triton builds/step | LLVM builds/step | codegen library builds/step "
        "| seconds/step | culprit right |",
        "| --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for r in rows:
        table.append(f"| {r['label']} | {r['steps']} | {r['builds_per_step']} | {r['triton_builds_per_step']} | "
                     f"{r['llvm_builds_per_step']} | {r['codegen_builds_per_step']} | {r['seconds_per_step']} | "
                     f"{'yes' if r['right'] else 'NO'} |")
    body = "\n".join([
        "`python bench/backend_descent_bench.py --write`: two `tritonbisect triton --llvm-dir L "
        "--amd-llvm-dir R --json` sessions on the toy world (cold caches), each over the one Triton "
        "commit that bumps an LLVM; the descent phase's own `--json` totals (`phases[*].totals`), "
        "per step of that phase (endpoints included: they reuse the Triton phase's builds).",
        "",
        *table,
        "",
        "A backend LLVM step builds that LLVM and the codegen library, never Triton: the library is "
        "loaded at run time into the one wheel the Triton phase built. A core LLVM step builds the "
        "LLVM and a Triton wheel against it. The toy Triton is small, so the seconds understate what "
        "a real Triton rebuild per step costs (minutes).",
    ])
    print(body)
    print(json.dumps(rows))
    if args.write:
        sys.path.insert(0, str(ROOT / "bench"))
        from results_md import write_section

        write_section("Backend LLVM descent against core LLVM descent", body)
    return 0


if __name__ == "__main__":
    sys.exit(main())
