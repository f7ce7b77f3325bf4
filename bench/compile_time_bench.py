"""Compile-time regressions (`--regress compile-time`) on this machine: what a compile costs in
each real release, and what a bisect of the compile time takes.

1. Releases: the compile oracle of four real kernels -- the H100 trace's matmul, flash-attn
   2.7.4's Triton forward (causal) and backward, the tf32x3 GEMM of triton-lang/triton#11526 --
   compiled for sm_90 with `compile_repro.py --check compile-time --no-limits` (each sample a
   fresh process and cache: what every test run of a session measures) by every release from
   3.2.0 to 3.9.0, `--rounds` times in a shuffled order per round. Per kernel and release: the
   fastest CPU and wall seconds, the spread of the CPU samples (median over fastest), and the
   change from the release before.
2. Sessions: `tritonbisect run --regress compile-time` over the toy pass-pipeline Triton
   (toyworld/pass_triton.py, planted="slow"; every pass does real CPU work, about a quarter of
   a second in all, the culprit's TritonGPURemoveLayoutConversions that much more), for changes
   of 0 (A/A: no regression, a 2.5% threshold) to 40%, each judged at half its size, with
   `--narrow`. Per change: sessions that named the culprit, a wrong commit or none, the pass
   `narrow --time` named, test runs per search step (both sides of each pair), test runs and
   wall time per session -- from each session's --json. The machine's load average is
   sampled all along: the figures hold for that load.
3. `--real`: `wheels --regress compile-time --narrow` over the published releases on two real
   kernels -- the trace's matmul from 3.7.1 to 3.9.0 at 25%, flash-attn's forward from 3.7.0 to
   3.9.0 at 20% -- with the release and the part of the compile each names, its runs and wall time.

    python bench/compile_time_bench.py [--rounds 4] [--sessions 3] [--changes 0,0.05,0.1,0.2,0.4] [--real] [--json-out F] [--write-results]
    python bench/compile_time_bench.py --skip-releases --changes 0.02 --sessions 2 --add-to F --json-out F
    python bench/compile_time_bench.py --results-from bench/data/compile_time_bench.json --write-results
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import re
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from datetime import date
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "src"))
sys.path.insert(0, str(HERE.parent / "tests"))
sys.path.insert(0, str(HERE.parent))

SECTION = "Compile-time regressions"
RELEASES = ("3.2.0", "3.3.1", "3.4.0", "3.5.1", "3.6.0", "3.7.0", "3.8.0", "3.9.0")
CHANGES = (0.0, 0.05, 0.10, 0.20, 0.40)
TOY_WORK = 300_000  # iterations of each toy pass: about a quarter second of CPU per compile in all


class Load:
    """The 1-minute load average, sampled every 10 s while the benchmark runs."""

    def __init__(self) -> None:
        self.samples: list[float] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(10):
            self.samples.append(os.getloadavg()[0])

    def stop(self) -> dict[str, float]:
        self._stop.set()
        s = self.samples or [os.getloadavg()[0]]
        return {"min": min(s), "median": statistics.median(s), "max": max(s)}


def _cli(*args: str, cwd: Path | None = None, timeout: float = 7200) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("TRITONBISECT_RESULT", "TRITON_INTERPRET")}
    return subprocess.run([sys.executable, "-m", "tritonbisect.cli", *args], capture_output=True, text=True,
                          env=env, timeout=timeout, cwd=cwd)


# --- 1. the releases ---------------------------------------------------------------------------


def oracles(root: Path) -> dict[str, Path]:
    from oracle_support import scenario
    from real_kernels import (
        FLASH_ATTN_BWD,
        FLASH_ATTN_FWD,
        TF32X3_GEMM,
        flash_attn_triton,
        traced_compile_oracle,
    )

    out = {}
    matmul = root / "matmul"
    proc = _cli("repro", str(scenario("matmul")), "--kernel", "matmul_kernel", "--mode", "compile", "--out",
                str(matmul))
    if proc.returncode != 0:
        raise SystemExit(proc.stderr)
    out["matmul (the H100 trace)"] = matmul
    source = str(flash_attn_triton())
    out["flash-attn 2.7.4 forward, causal"] = traced_compile_oracle(root / "fwd", FLASH_ATTN_FWD, "_fwd_kernel",
                                                                    "cuda:90", source)
    out["flash-attn 2.7.4 backward"] = traced_compile_oracle(root / "bwd", FLASH_ATTN_BWD, "_bwd_kernel", "cuda:90",
                                                             source)
    out["tf32x3 GEMM (triton-lang/triton#11526)"] = traced_compile_oracle(root / "tf32", TF32X3_GEMM, "gemm_tf32x3",
                                                                          "cuda:90", "128", "64", "64", "4", "3")
    return out


def one_sample(python: Path, oracle: Path, work: Path) -> dict[str, Any]:
    result = work / "result.json"
    result.unlink(missing_ok=True)
    env = {k: v for k, v in os.environ.items() if k not in ("TRITONBISECT_RESULT", "TRITON_INTERPRET")}
    env["TRITON_DEFAULT_FP_FUSION"] = "1"  # 3.9 warns without it; the traced value is fused
    proc = subprocess.run([str(python), str(oracle / "compile_repro.py"), "--check", "compile-time", "--no-limits",
                           "--compile-target", "cuda:90", "--result", str(result)], capture_output=True, text=True,
                          env=env, timeout=1800)
    data = json.loads(result.read_text()) if result.is_file() else {"status": f"exit {proc.returncode}"}
    timing = data.get("compile_time") or {}
    return {"status": data.get("status"), "reason": (data.get("reason") or "")[:200],
            "cpu": timing.get("cpu_seconds"), "wall": timing.get("seconds"), "load": os.getloadavg()[0],
            "stages": {s["stage"]: s["cpu"] for s in timing.get("stages") or []}}


def run_releases(root: Path, rounds: int) -> dict[str, Any]:
    from real_triton import triton_release_python

    found = oracles(root / "oracles")
    pythons = {v: triton_release_python(v) for v in RELEASES}
    rng = random.Random(0)
    samples: dict[str, dict[str, list[dict[str, Any]]]] = {k: {v: [] for v in RELEASES} for k in found}
    load = Load()
    for rnd in range(rounds):
        for kernel, oracle in found.items():
            order = list(RELEASES)
            rng.shuffle(order)
            for version in order:
                s = one_sample(pythons[version], oracle, root)
                samples[kernel][version].append(s)
                print(f"  round {rnd + 1} {kernel[:24]:24} {version}: {s['status']} cpu {s['cpu']} wall {s['wall']} "
                      f"load {s['load']:.1f}", file=sys.stderr, flush=True)
    return {"rounds": rounds, "samples": samples, "load": load.stop()}


# --- 2. the toy sessions -----------------------------------------------------------------------


def run_sessions(root: Path, per_change: int, changes: tuple[float, ...]) -> dict[str, Any]:
    from testing.toyworld.pass_triton import SLOW_PASS, make_pass_triton

    load = Load()
    out: list[dict[str, Any]] = []
    for change in changes:
        threshold = change / 2 if change else 0.025
        for seed in range(per_change):
            where = root / f"toy-{change:g}-{seed}"
            culprit = 3 + 4 * seed
            truth = make_pass_triton(where / "repo", commits=16, culprit=culprit, planted="slow", slow=change,
                                     work=TOY_WORK)
            t0 = time.monotonic()
            proc = _cli("run", "--repo", str(where / "repo"), "--good", truth["order"][0], "--bad", truth["order"][-1],
                        "--build", truth["build"], "--artifact", truth["artifact"], "--repro", truth["ttir"],
                        "--oracle", "ir", "--compile-target", "cuda:90", "--env", "PYTHONPATH=build",
                        "--regress", "compile-time", "--perf-threshold", f"{threshold * 100:g}%", "--narrow",
                        "--workdir", str(where / "w"), "--json")
            wall = time.monotonic() - t0
            lines = [line for line in proc.stdout.splitlines() if line.startswith("{")]
            if not lines:
                raise SystemExit(f"no result (exit {proc.returncode}):\n{proc.stderr[-3000:]}")
            res = json.loads(lines[-1])
            recs = [json.loads(x) for x in (Path(res["session_dir"]) / "journal.jsonl").read_text().splitlines()]
            search = [len(r.get("tests") or []) + len(r.get("reference_tests") or []) for r in recs
                      if r.get("role") == "search"]
            grew = ((res.get("narrow") or {}).get("grew_most") or {}).get("name")
            row = {"change": change, "threshold": threshold, "seed": seed, "status": res["status"],
                   "exit": res["exit_code"], "right": res.get("culprit") == truth["culprit"],
                   "wrong": res.get("culprit") not in (None, truth["culprit"]), "tests": res["tests"],
                   "steps": res.get("steps"), "per_step": statistics.mean(search) if search else 0.0, "wall": wall,
                   "pass_named": grew, "pass_right": grew == SLOW_PASS, "load": os.getloadavg()[0]}
            out.append(row)
            print(f"  {change:.0%} seed {seed}: {row['status']} right={row['right']} tests={row['tests']} "
                  f"per step {row['per_step']:.1f} wall {wall:.0f}s pass {grew}", file=sys.stderr, flush=True)
    return {"rows": out, "load": load.stop(), "work": TOY_WORK}


# --- 3. the real bisect ------------------------------------------------------------------------


REAL = (  # kernel, its trace's kernel name, good, bad, threshold
    ("matmul (the H100 trace)", "matmul_kernel", "3.7.1", "3.9.0", "25%"),
    ("flash-attn 2.7.4 forward, causal", "_fwd_kernel", "3.7.0", "3.9.0", "20%"),
)


def run_real(root: Path) -> list[dict[str, Any]]:
    from oracle_support import scenario
    from real_kernels import FLASH_ATTN_FWD, flash_attn_triton, traced_compile_oracle
    from real_triton import make_linked_venv

    fwd = traced_compile_oracle(root / "real", FLASH_ATTN_FWD, "_fwd_kernel", "cuda:90", str(flash_attn_triton()))
    traces = {"matmul_kernel": scenario("matmul"), "_fwd_kernel": fwd.parent / "trace"}
    out = []
    for label, kernel, good, bad, threshold in REAL:
        venv = root / "real" / f"venv-{kernel}"
        make_linked_venv(venv)
        load = Load()
        t0 = time.monotonic()
        proc = _cli("wheels", "--good", good, "--bad", bad, "--venv", str(venv), "--repro", str(traces[kernel]),
                    "--kernel", kernel, "--oracle", "compile", "--compile-target", "cuda:90", "--regress",
                    "compile-time", "--perf-threshold", threshold, "--narrow", "--env", "TRITON_DEFAULT_FP_FUSION=1",
                    "--workdir", str(root / "real" / f"home-{kernel}"), "--json")
        wall = time.monotonic() - t0
        lines = [line for line in proc.stdout.splitlines() if line.startswith("{")]
        if not lines:
            raise SystemExit(f"no result (exit {proc.returncode}):\n{proc.stderr[-3000:]}")
        res = json.loads(lines[-1])
        grew = (res.get("narrow") or {}).get("grew_most") or {}
        recs = [json.loads(x) for x in (Path(res["session_dir"]) / "journal.jsonl").read_text().splitlines()]
        runs = sum(len(r.get("tests") or []) + len(r.get("reference_tests") or []) for r in recs)
        slow = [r.get("reason") for r in recs if r.get("kind") == "perf"]
        row = {"kernel": label, "good": good, "bad": bad, "threshold": threshold, "exit": res.get("exit_code"),
               "first_bad": res.get("first_bad"), "last_good": res.get("last_good"), "status": res.get("status"),
               "slow_reason": slow[-1] if slow else None, "tests": runs, "wall": wall, "load": load.stop(),
               "grew_most": {k: grew.get(k) for k in ("name", "stage", "parent", "culprit")},
               "next": [p.get("name") for p in ((res.get("narrow") or {}).get("parts") or [])[1:3]]}
        out.append(row)
        print(f"  real {label}: {row['status']} first bad {row['first_bad']} grew {row['grew_most']} "
              f"wall {wall:.0f}s", file=sys.stderr, flush=True)
    return out


# --- the section --------------------------------------------------------------------------------


def _pct(x: float) -> str:
    return f"{x * 100:+.0f}%"


def _per_step(rows: list[dict[str, Any]]) -> str:
    steps = [r["per_step"] for r in rows if r["per_step"]]
    return f"{statistics.mean(steps):.1f}" if steps else "— (no search)"


def section(data: dict[str, Any]) -> str:
    out = [f"Run {data['date']} on {data['machine']}, a machine shared with other work all along.", ""]
    rel = data.get("releases")
    if rel:
        ld = rel["load"]
        out += [f"**Compile time of real kernels across the releases** (`--check compile-time`, sm_90; "
                f"CPU seconds, the fastest of {rel['rounds']} samples, each a fresh process; change from the "
                f"release before; load average {ld['min']:.1f} to {ld['max']:.1f}, median {ld['median']:.1f}):", "",
                "| kernel | " + " | ".join(RELEASES) + " |", "| --- | " + " | ".join("---" for _ in RELEASES) + " |"]
        spreads, walls = [], []
        for kernel, per in rel["samples"].items():
            cells, prev = [], None
            for v in RELEASES:
                cpu = [s["cpu"] for s in per[v] if s["status"] == "pass" and s["cpu"]]
                if not cpu:
                    cells.append(per[v][0]["status"] if per[v] else "—")
                    prev = None
                    continue
                best = min(cpu)
                spreads.append(statistics.median(cpu) / best - 1)
                walls += [s["wall"] / s["cpu"] for s in per[v] if s["status"] == "pass" and s["cpu"]]
                cells.append(f"{best:.3f}" + (f" ({_pct(best / prev - 1)})" if prev else ""))
                prev = best
            out.append(f"| {kernel} | " + " | ".join(cells) + " |")
        out += ["", f"The CPU samples of one kernel and release lay {statistics.median(spreads):.1%} (median) and at most "
                f"{max(spreads):.1%} above their fastest; their wall-clock time was {statistics.median(walls):.1f} times "
                "their CPU time (median): the machine's other work made the compiles wait, which the CPU clock does "
                "not count.", ""]
    ses = data.get("sessions")
    if ses:
        ld = ses["load"]
        out += [f"**Bisecting a compile-time change** (`run --regress compile-time --narrow`, the toy pass-pipeline "
                f"Triton: 16 commits, every pass real CPU work, about {ses['work'] // 1000}k iterations each, the "
                f"culprit's TritonGPURemoveLayoutConversions that much more; default paired design; load "
                f"{ld['min']:.1f} to {ld['max']:.1f}, median {ld['median']:.1f}):", "",
                "| change | threshold | culprit named | wrong | none | pass named by `narrow --time` | runs per search step | runs per session | wall per session |",
                "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
        for change in sorted({r["change"] for r in ses["rows"]}):
            rows = [r for r in ses["rows"] if r["change"] == change]
            if not rows:
                continue
            n = len(rows)
            right = sum(r["right"] for r in rows)
            wrong = sum(r["wrong"] for r in rows)
            named = sum(r["pass_right"] for r in rows)
            what = "A/A: no regression" if not change else f"{change:.0%}"
            out.append(f"| {what} | {rows[0]['threshold']:.1%} | {right}/{n} | {wrong}/{n} | {n - right - wrong}/{n} | "
                       f"{named}/{n} | {_per_step(rows)} | "
                       f"{statistics.mean(r['tests'] for r in rows):.0f} | {statistics.mean(r['wall'] for r in rows):.0f} s |")
        ran = sorted({r["change"] for r in ses["rows"] if r["change"]})
        # the smallest change from which on every session (of that change and every larger one) named the culprit
        reliable = [c for c in ran if all(r["right"] for r in ses["rows"] if r["change"] >= c)]
        steps = [r["per_step"] for r in ses["rows"] if r["per_step"]]
        if steps:
            out += ["", f"Compiles per search step (both sides of its pairs): {min(steps):.0f} to {max(steps):.0f}, "
                    f"mean {statistics.mean(steps):.1f}; a step takes at least 10 pairs, and more (`--repeat` at a "
                    "time, up to `--max-samples`) only while its interval straddles the threshold; an inconclusive session (none named) "
                    "ends with steps still straddling it."]
        aa = [r for r in ses["rows"] if not r["change"]]
        out += ["", f"Smallest change found reliably (every session of it and of every larger change named the culprit): "
                f"{min(reliable):.0%}" if reliable else "", ""]
        if aa:
            out += [f"With no change (A/A), {sum(r['status'] != 'found' for r in aa)} of {len(aa)} sessions found no "
                    "regression (the bad endpoint within the threshold: exit 3).", ""]
    real = data.get("real")
    if real:
        out += ["**The real bisects** (`wheels --oracle compile --compile-target cuda:90 --regress compile-time "
                "--narrow`, the published wheels, a venv of this machine's torch):", "",
                "| kernel | releases | threshold | first bad (last good) | its slow-down | `narrow --time`: grew most | "
                "then | test runs | wall |", "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
        for r in real:
            g = r["grew_most"]
            grew = (f"{g['name']} ({g['stage']}): {g['parent']:.3f} s → {g['culprit']:.3f} s" if g.get("name")
                    else "—")
            # the figure and its interval (the reason names the reference by its ladder commit)
            why = re.search(r"[+-][\d.]+% \[[^\]]*\]", r.get("slow_reason") or "")
            out.append(f"| {r['kernel']} | {r['good']} to {r['bad']} | {r['threshold']} | {r['first_bad']} "
                       f"({r['last_good']}) | {why.group(0) if why else '—'} against {r['last_good']} | {grew} | {', '.join(r['next']) or '—'} | {r['tests']} | "
                       f"{r['wall'] / 60:.1f} min (load median {r['load']['median']:.1f}) |")
        out.append("")
    return "\n".join(out).rstrip() + "\n"


def _add_sessions(before: dict[str, Any] | None, now: dict[str, Any]) -> dict[str, Any]:
    if not before:
        return now
    rows = [r for r in before["rows"] if r["change"] not in {x["change"] for x in now["rows"]}] + now["rows"]
    loads = [r["load"] for r in rows]
    return {**now, "rows": rows, "load": {"min": min(before["load"]["min"], now["load"]["min"]),
                                          "median": statistics.median(loads),
                                          "max": max(before["load"]["max"], now["load"]["max"])}}


def _keep(data: dict[str, Any], path: Path | None) -> None:
    if path:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(data, indent=1))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=4, help="samples per kernel and release")
    ap.add_argument("--sessions", type=int, default=3, help="toy sessions per change")
    ap.add_argument("--changes", default=",".join(f"{c:g}" for c in CHANGES),
                    help="the planted slow-downs, as fractions (0 is the A/A)")
    ap.add_argument("--skip-releases", action="store_true")
    ap.add_argument("--skip-sessions", action="store_true")
    ap.add_argument("--real", action="store_true", help="also the wheels bisects of the real kernels")
    ap.add_argument("--add-to", type=Path, help="a results file this run adds to: its toy sessions are added to "
                    "the file's, its other parts replace the file's")
    ap.add_argument("--json-out", type=Path)
    ap.add_argument("--results-from", type=Path)
    ap.add_argument("--write-results", action="store_true")
    args = ap.parse_args()
    if args.results_from:
        data = json.loads(args.results_from.read_text())
    else:
        data = {"date": date.today().isoformat(),
                "machine": f"{os.cpu_count()} CPUs, {platform.machine()}, Python {platform.python_version()}"}
        before = json.loads(args.add_to.read_text()) if args.add_to else {}
        data = {**before, **data}
        with tempfile.TemporaryDirectory(prefix="compile-time-bench-") as tmp:
            root = Path(tmp)
            # each part's figures are kept as soon as it ends: a later part's failure loses none of them
            if not args.skip_releases:
                data["releases"] = run_releases(root, args.rounds)
                _keep(data, args.json_out)
            if not args.skip_sessions:
                data["sessions"] = _add_sessions(before.get("sessions"), run_sessions(
                    root, args.sessions, tuple(float(c) for c in args.changes.split(","))))
                _keep(data, args.json_out)
            if args.real:
                data["real"] = run_real(root)
                _keep(data, args.json_out)
    text = section(data)
    print(text)
    if args.write_results:
        from results_md import write_section

        write_section(SECTION, text)


if __name__ == "__main__":
    main()
