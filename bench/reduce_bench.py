"""`tritonbisect reduce` figures: size before and after, candidates tried, seconds, and what a
candidate costs on the reducer's long-lived forked workers against a fresh interpreter per run.

    TRITON_INTERPRET=1 PYTHONPATH=src python3 bench/reduce_bench.py --good-python PY36 [--bad-python PY39]
    PYTHONPATH=src python3 bench/reduce_bench.py --good-python PY36 --compile   # negate.py, ptx.sub
    PYTHONPATH=src python3 bench/reduce_bench.py --good-python PY36 --ir        # row_reductions.py, ptx.bar

The cases: tests/reduce_programs/several_things.py (tl.clamp of a NaN: NaN under Triton 3.6.0,
the low bound under 3.9.0), traced with the bad Python's Triton and reduced at every level;
negate.py's compile oracle for cuda:90; row_reductions.py (5 PTX barriers under 3.6.0, 3 under
3.9.0 for cuda:90) as a compile oracle, and as IR oracles of the TTGIR and the TTIR that the
good Triton makes of it (`repro --ir`). Prints Markdown rows for bench/RESULTS.md and writes
the figures as JSON (--json-out).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # testing/: the toy worlds
from tritonbisect.reduce import oracle_io, source_pass
from tritonbisect.reduce.candidate_runner import Runner, Settings
from tritonbisect.reduce.driver import cost
from tritonbisect.reduce.pool import Pool

ROOT = Path(__file__).resolve().parents[1]
PROGRAM = ROOT / "tests" / "reduce_programs" / "several_things.py"
NEGATE = ROOT / "tests" / "reduce_programs" / "negate.py"
ROWS = ROOT / "tests" / "reduce_programs" / "row_reductions.py"


def cli(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "tritonbisect.cli", *args], capture_output=True, text=True, env=env)


def per_candidate(oracle_dir: Path, settings: Settings, n: int, *, fresh: bool, work: Path) -> float:
    """Mean seconds per candidate verdict (good run + bad run) over the first n smaller candidates."""
    oracle = oracle_io.load(oracle_dir)
    here = cost(oracle.original)
    cands = [c for c in source_pass.candidates(oracle.original, oracle.kernel) if cost(c) < here][:n]
    pool = Pool(fresh=fresh)
    try:
        runner = Runner(oracle, work, settings, pool)
        runner.verdict(cands[0])  # warm-up: the fork servers start (not counted)
        t0 = time.monotonic()
        for cand in cands[1:]:
            runner.verdict(cand)
        runner.close()
        return (time.monotonic() - t0) / (len(cands) - 1)
    finally:
        pool.close()


def compile_case(args: argparse.Namespace, env: dict[str, str], root: Path) -> int:
    shutil.copy(NEGATE, root / "app.py")
    subprocess.run([sys.executable, "-m", "tritonbisect.cli", "trace", "--out", str(root / "trace"), "--",
                    args.bad_python, str(root / "app.py")], env=env, cwd=root, check=True, capture_output=True)
    proc = cli("repro", str(root / "trace"), "--kernel", "negate", "--mode", "compile", "--compile-target", "cuda:90",
               "--out", str(root / "oracle"), env=env)
    assert proc.returncode == 0, proc.stderr
    proc = cli("reduce", str(root / "oracle"), "--good-python", args.good_python, "--bad-python", args.bad_python,
               "--out", str(root / "out"), "--jobs", str(args.jobs), "--codegen-threshold", "ptx.sub=0", "--json",
               env=env)
    assert proc.returncode == 0, proc.stderr[-2000:]
    result = json.loads(proc.stdout)
    if args.json_out:
        args.json_out.write_text(json.dumps({"result": result, "jobs": args.jobs}, indent=1) + "\n")
    b, a = result["before"], result["after"]
    print(f"| negate, compile oracle cuda:90 (ptx.sub) | {result['good_triton']} → {result['bad_triton']} | "
          f"{b['kernel_lines']} → {a['kernel_lines']} | – | {result['tests']} | {result['seconds']} |")
    return 0


def ir_cases(args: argparse.Namespace, env: dict[str, str], root: Path) -> int:
    """row_reductions.py: its compile oracle (source level), then the good Triton's TTGIR and
    TTIR of it as IR oracles (IR level), each with --codegen-threshold ptx.bar=0."""
    shutil.copy(ROWS, root / "app.py")
    subprocess.run([sys.executable, "-m", "tritonbisect.cli", "trace", "--out", str(root / "trace"), "--",
                    args.bad_python, str(root / "app.py")], env=env, cwd=root, check=True, capture_output=True)
    proc = cli("repro", str(root / "trace"), "--kernel", "rowwise", "--mode", "compile", "--compile-target", "cuda:90",
               "--out", str(root / "source"), env=env)
    assert proc.returncode == 0, proc.stderr
    plain = {k: v for k, v in env.items() if k != "TRITON_INTERPRET"}
    subprocess.run([args.good_python, str(root / "source" / "compile_repro.py"), "--keep", str(root / "kept")],
                   env=plain, check=True, capture_output=True)
    for stage in ("ttgir", "ttir"):
        proc = cli("repro", "--ir", str(root / "kept" / f"rowwise.{stage}"), "--compile-target", "cuda:90",
                   "--out", str(root / stage), env=plain)
        assert proc.returncode == 0, proc.stderr
    figures = {}
    for case in ("source", "ttgir", "ttir"):
        proc = cli("reduce", str(root / case), "--good-python", args.good_python, "--bad-python", args.bad_python,
                   "--out", str(root / f"out-{case}"), "--jobs", str(args.jobs), "--codegen-threshold", "ptx.bar=0",
                   "--json", env=plain)
        assert proc.returncode == 0, proc.stderr[-2000:]
        result = figures[case] = json.loads(proc.stdout)
        b, a = result["before"], result["after"]
        label = {"source": "compile oracle (source level)", "ttgir": "IR oracle of its TTGIR (ir level)",
                 "ttir": "IR oracle of its TTIR (ir level)"}[case]
        ops = f"{b['ir_ops']} → {a['ir_ops']}" if "ir_ops" in b else "–"
        print(f"| row_reductions, {label}, cuda:90 (ptx.bar) | {result['good_triton']} → {result['bad_triton']} | "
              f"{b['kernel_lines']} → {a['kernel_lines']} | {ops} | {result['tests']} | {result['seconds']} |")
    if args.json_out:
        args.json_out.write_text(json.dumps({"results": figures, "jobs": args.jobs}, indent=1) + "\n")
    return 0


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--good-python", required=True)
    p.add_argument("--bad-python", default=sys.executable)
    p.add_argument("--jobs", type=int, default=2)
    p.add_argument("--candidates", type=int, default=9)
    p.add_argument("--json-out", type=Path)
    p.add_argument("--compile", action="store_true", help="the compile-oracle case (negate.py, cuda:90, ptx.sub) only")
    p.add_argument("--ir", action="store_true", help="the row_reductions.py cases (compile and IR oracles, ptx.bar) only")
    args = p.parse_args()
    env = {**os.environ, "TRITON_INTERPRET": "1"}
    root = Path(tempfile.mkdtemp(prefix="reduce-bench-"))
    if args.compile or args.ir:
        try:
            return compile_case(args, env, root) if args.compile else ir_cases(args, env, root)
        finally:
            shutil.rmtree(root, ignore_errors=True)
    try:
        shutil.copy(PROGRAM, root / "app.py")
        subprocess.run([sys.executable, "-m", "tritonbisect.cli", "trace", "--out", str(root / "trace"), "--",
                        args.bad_python, str(root / "app.py")], env=env, cwd=root, check=True, capture_output=True)
        proc = cli("repro", str(root / "trace"), "--kernel", "several_things", "--out", str(root / "oracle"), env=env)
        assert proc.returncode == 0, proc.stderr
        t0 = time.monotonic()
        proc = cli("reduce", str(root / "oracle"), "--good-python", args.good_python, "--bad-python", args.bad_python,
                   "--out", str(root / "out"), "--jobs", str(args.jobs), "--json", env=env)
        wall = time.monotonic() - t0
        assert proc.returncode == 0, proc.stderr[-2000:]
        result = json.loads(proc.stdout)
        settings = Settings(args.good_python, args.bad_python, jobs=1, timeout=120)
        fork = per_candidate(root / "oracle", settings, args.candidates, fresh=False, work=root / "w1")
        spawn = per_candidate(root / "oracle", settings, args.candidates, fresh=True, work=root / "w2")
        figures = {"result": result, "wall_seconds": round(wall, 1), "per_candidate_fork_s": round(fork, 3),
                   "per_candidate_fresh_s": round(spawn, 3), "jobs": args.jobs, "candidates_timed": args.candidates - 1}
    finally:
        shutil.rmtree(root, ignore_errors=True)
    if args.json_out:
        args.json_out.write_text(json.dumps(figures, indent=1) + "\n")
    b, a = result["before"], result["after"]
    print(f"| several_things (tl.clamp of NaN) | {result['good_triton']} → {result['bad_triton']} | "
          f"{b['kernel_lines']} → {a['kernel_lines']} | {b['elements']} → {a['elements']} | {result['tests']} | "
          f"{result['seconds']} | {figures['per_candidate_fork_s']} s | {figures['per_candidate_fresh_s']} s |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
