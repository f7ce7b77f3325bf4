"""`--regress perf` on machines that drift: the paired design against the unpaired one, in the
same run, on the same simulated machines and seeds; and the statistics on real samples from
a shared H200.

1. Whole sessions: `tritonbisect run --regress perf --perf-threshold 3%` over 120 commits, 6%
   slower from one commit on (a different one each seed), with the test program of
   tests/perf_machine.sh: a machine 12% slow in alternating windows of 4 runs (the bar), a
   run in three slowed 3x (bursts, as a co-tenant on the GPU), or a quiet one; 1% noise.
   Per design: how many seeds named the culprit, a wrong commit, or none; test runs (both
   sides of each pair counted), runs per search step, wall time -- from each session's --json.
2. One step's verdict on the real samples of tests/data/perf_samples (an H200 quiet, and with
   a co-tenant running matmuls 4 s on, 4 s off; a kernel 21% slower): the floors' ratio, the
   paired ratios, the medians' ratio and the old unpaired rule, on every 20 consecutive pairs.

    python bench/perf_paired_bench.py [--seeds 10] [--at-once 4] [--json-out F] [--write-results]
    python bench/perf_paired_bench.py --results-from bench/data/perf_paired_bench.json --write-results
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import date
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "src"))
sys.path.insert(0, str(HERE.parent / "tests"))

SECTION = "Perf verdicts on a drifting machine: paired against unpaired"
MACHINE = HERE.parent / "tests" / "perf_machine.sh"
CONDITIONS = {
    "windows": ("4", "0.12", "0.01", "windows"),  # 12% slow in alternating windows of 4 runs
    "bursts": ("4", "0.12", "0.01", "bursts"),  # a run in three 3x slower
    "quiet": ("1000000", "0.0", "0.01", "windows"),
}


def run_sessions(root: Path, condition: str, design: str, seeds: int, at_once: int) -> list[dict[str, Any]]:
    from test_perf_paired import perf_history

    window, slow, noise, mode = CONDITIONS[condition]
    jobs = []
    for seed in range(seeds):
        where = root / f"{condition}-{design}-{seed}"
        culprit = 17 + 9 * seed
        shas = perf_history(where / "repo", 120, culprit)
        test = f"sh {MACHINE} {where / 'machine'} {seed} {window} {slow} {noise} {mode}"
        argv = [sys.executable, "-m", "tritonbisect.cli", "run", "--repo", str(where / "repo"), "--good", shas[0],
                "--bad", shas[-1], "--test", test, "--regress", "perf", "--perf-threshold", "3%",
                "--perf-design", design, "--workdir", str(where / "w"), "--json"]
        jobs.append((shas, culprit, argv))
    out = []
    for start in range(0, len(jobs), at_once):
        running = []
        for shas, culprit, argv in jobs[start:start + at_once]:
            running.append((shas, culprit, time.monotonic(),
                            subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)))
        for shas, culprit, t0, proc in running:
            stdout, stderr = proc.communicate()
            wall = time.monotonic() - t0
            lines = [line for line in stdout.splitlines() if line.startswith("{")]
            if not lines:
                raise SystemExit(f"no result (exit {proc.returncode}):\n{stderr[-3000:]}")
            res = json.loads(lines[-1])
            recs = [json.loads(x) for x in (Path(res["session_dir"]) / "journal.jsonl").read_text().splitlines()]
            search = [len(r.get("tests") or []) + len(r.get("reference_tests") or []) for r in recs
                      if r.get("role") == "search"]
            out.append({
                "seed": len(out), "right": res["culprit"] == shas[culprit],
                "wrong": res["culprit"] is not None and res["culprit"] != shas[culprit],
                "status": res["status"], "exit": res["exit_code"], "tests": res["tests"], "steps": res["steps"],
                "per_step": statistics.mean(search) if search else 0.0, "wall": wall,
                "undecided": sum(1 for r in recs if (r.get("perf") or {}).get("decision") == "undecided"),
            })
    return out


def real_samples() -> list[dict[str, Any]]:
    """Each statistic's verdict on every 20 consecutive pairs of the real samples."""
    from test_pairstats import real_pairs
    from tritonbisect.core.pairstats import FLOOR, PAIRED, compare
    from tritonbisect.search.perfstats import judge

    rows = []
    for name in ("h200-quiet.json", "h200-bursty-cotenant.json"):
        ref, cand = real_pairs(name)
        whole = compare(ref, cand, threshold=0.05, alpha=0.01)
        for threshold in (0.10, 0.15, 0.30):
            counts: dict[str, dict[str, int]] = {}
            windows = range(len(ref) - 19)
            for s in windows:
                r, c = ref[s:s + 20], cand[s:s + 20]
                for label, decision in (
                    ("auto (floor, check)", compare(r, c, threshold=threshold, alpha=0.01, interval=False).decision),
                    ("floor", compare(r, c, threshold=threshold, alpha=0.01, method=FLOOR, interval=False).decision),
                    ("paired (signed-rank)", compare(r, c, threshold=threshold, alpha=0.01, method=PAIRED,
                                                     interval=False).decision),
                    ("unpaired Mann-Whitney", judge(r, c, threshold=threshold, alpha=0.01).decision),
                ):
                    counts.setdefault(label, {}).setdefault(decision, 0)
                    counts[label][decision] += 1
            rows.append({"samples": name, "threshold": threshold, "windows": len(windows), "counts": counts,
                         "whole": whole.describe(), "paired_whole": whole.paired.text(),
                         "medians": statistics.median(cand) / statistics.median(ref) - 1})
    return rows


def markdown(sessions: dict[tuple[str, str], list[dict[str, Any]]], real: list[dict[str, Any]], seeds: int,
             when: str | None) -> str:
    lines = [
        f"`python bench/perf_paired_bench.py --seeds {seeds}` on {platform.machine()}, {platform.system().lower()}, "
        f"a shared 2-CPU machine ({when or date.today().isoformat()}).",
        "",
        "**Whole sessions**: `run --regress perf --perf-threshold 3%`, 120 commits, 6% slower from one commit on "
        "(a different one per seed), the test `tests/perf_machine.sh` (1% noise): *windows* = 12% slow in alternating "
        "windows of 4 runs (the bar), *bursts* = a run in three 3x slower, *quiet* = neither. Both designs on the same "
        "seeds. Test runs count both sides of each pair; runs per search step likewise; wall per session, several at once.",
        "",
        "| machine | design | culprit named | wrong commit | none (inconclusive / invalid) | mean test runs | runs per search step | undecided steps per session | mean wall s |",
        "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for (cond, design), rows in sessions.items():
        right = sum(r["right"] for r in rows)
        wrong = sum(r["wrong"] for r in rows)
        lines.append(
            f"| {cond} | {design} | **{right}/{len(rows)}** | {wrong} | {len(rows) - right - wrong} "
            f"| {statistics.mean(r['tests'] for r in rows):.0f} | {statistics.mean(r['per_step'] for r in rows):.1f} "
            f"| {statistics.mean(r['undecided'] for r in rows):.1f} | {statistics.mean(r['wall'] for r in rows):.0f} |")
    bar = sessions.get(("windows", "paired"))
    if bar:
        named = sum(r["right"] for r in bar)
        wrong = sum(r["wrong"] for r in bar)
        lines += ["", f"The bar (*windows*, paired): the culprit named in {named} of {len(bar)} seeds, another commit "
                  f"in {wrong} (tests/test_perf_paired.py runs the same sessions and asserts at least 9 and none). "
                  "The unpaired design measures the good endpoint once, in windows other than the steps': its "
                  "steps stay undecided at their bound and the range ends inconclusive. Without interference it "
                  "needs a third of the runs: use `--perf-design unpaired` on a machine known to be quiet."]
    lines += [
        "",
        "**One step on real samples** (`tests/data/perf_samples`: an H200, a Triton matmul 21.2% slower, quiet and "
        "with a co-tenant running 8192x8192 matmuls 4 s on / 4 s off; every 20 consecutive pairs; verdicts "
        "worse / within / undecided at p < 0.01; the unpaired rule on the same interleaved samples, its best case: "
        "in a session its reference is measured once, before):",
        "",
        "| samples | threshold | auto (floor, check) | floor | paired (signed-rank) | unpaired Mann-Whitney |",
        "| --- | ---: | --- | --- | --- | --- |",
    ]
    for row in real:
        cells = []
        for label in ("auto (floor, check)", "floor", "paired (signed-rank)", "unpaired Mann-Whitney"):
            c = row["counts"][label]
            cells.append(f"{c.get('worse', 0)} / {c.get('within', 0)} / {c.get('undecided', 0)}")
        lines.append(f"| {row['samples']} | {row['threshold'] * 100:g}% | " + " | ".join(cells) + " |")
    for row in real[::3]:
        lines.append("")
        lines.append(f"All pairs of `{row['samples']}`: {row['whole']}; the paired ratios' estimate "
                     f"{row['paired_whole']}; the medians' ratio {row['medians'] * 100:+.1f}%.")
    return "\n".join(lines) + "\n"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=10)
    ap.add_argument("--at-once", type=int, default=4)
    ap.add_argument("--conditions", default=",".join(CONDITIONS))
    ap.add_argument("--write-results", action="store_true")
    ap.add_argument("--json-out", type=Path)
    ap.add_argument("--results-from", type=Path, help="a --json-out of an earlier run: its section again")
    args = ap.parse_args()
    sessions: dict[tuple[str, str], list[dict[str, Any]]] = {}
    if args.results_from:
        saved = json.loads(args.results_from.read_text())
        for key, rows in saved["sessions"].items():
            cond, design = key.split("/")
            sessions[(cond, design)] = rows
        real, seeds, when = saved["real"], saved.get("seeds", args.seeds), saved.get("date")
    else:
        with tempfile.TemporaryDirectory(prefix="perf-paired-") as tmp:
            for cond in args.conditions.split(","):
                for design in ("paired", "unpaired"):
                    sessions[(cond, design)] = run_sessions(Path(tmp), cond, design, args.seeds, args.at_once)
                    print(cond, design, [(r["right"], r["tests"]) for r in sessions[(cond, design)]], flush=True)
        real, seeds, when = real_samples(), args.seeds, date.today().isoformat()
    text = markdown(sessions, real, seeds, when)
    if args.json_out:
        args.json_out.write_text(json.dumps({"sessions": {f"{c}/{d}": v for (c, d), v in sessions.items()},
                                             "real": real, "seeds": seeds, "date": when}, indent=1))
    print(text)
    if args.write_results:
        from results_md import write_section

        write_section(SECTION, text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
