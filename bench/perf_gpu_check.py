"""`--regress perf` against real GPU timings: the run-to-run noise of `triton.testing.do_bench`
across test processes, and the verdicts tritonbisect's rule gives on them.

Each sample is what a bisect step's test run is: a fresh Python process that launches a
real Triton kernel and prints `TRITONBISECT_METRIC=<ms>` from do_bench. Three sets are
measured, interleaved so that drift hits them alike:

    reference   the kernel on N elements          (the good endpoint)
    same        the same kernel and size again    (an unchanged commit: must not be "worse")
    slower      the same kernel on 1.3 N elements (a commit ~30% slower: must be "worse")

Then the runner's rule (bisect.perf.judge_step: 5 samples, up to 20, the reference all of
its samples, one-sided Mann-Whitney U at p < 0.01 against the reference scaled by the
threshold) is applied to many random orderings of the measured samples, at thresholds 5%
and 10%. Needs only the standard library, torch and triton (tritonbisect's perf modules
are pure Python: PYTHONPATH=src).

    PYTHONPATH=src python bench/perf_gpu_check.py --out $OUT/perf_gpu [--samples 20]

Writes results.json and results.md under --out; exit 0 when the 30% slower kernel is called
worse in every ordering and the unchanged one never is.
"""

from __future__ import annotations

import argparse
import json
import math
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

KERNEL = r'''
import sys
import torch
import triton
import triton.language as tl


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) + tl.load(y_ptr + offs, mask=mask), mask=mask)


n = int(sys.argv[1])
x = torch.rand(n, device="cuda")
y = torch.rand(n, device="cuda")
out = torch.empty_like(x)
grid = (triton.cdiv(n, 1024),)
ms = triton.testing.do_bench(lambda: add_kernel[grid](x, y, out, n, BLOCK=1024), warmup=25, rep=100)
print(f"TRITONBISECT_METRIC={ms:.6f}")
'''


def sample(script: Path, n: int) -> float:
    proc = subprocess.run([sys.executable, str(script), str(n)], capture_output=True, text=True, timeout=300)
    for line in reversed(proc.stdout.splitlines()):
        if line.startswith("TRITONBISECT_METRIC="):
            return float(line.split("=", 1)[1])
    raise SystemExit(f"no metric (exit {proc.returncode}):\n{proc.stdout[-2000:]}\n{proc.stderr[-2000:]}")


def decide(reference: list[float], candidate: list[float], threshold: float, rounds: int, seed: int) -> dict:
    """The runner's own rule (bisect.perf.judge_step) on random orderings of the measured
    candidate samples: 5 at a time until decided or 20 taken."""
    from tritonbisect.core.outcome import Kind, Policy, combine_runs
    from tritonbisect.core.perf import PerfSettings, judge_step

    perf = PerfSettings(samples=5, max_samples=20, threshold=threshold, significance=0.01)
    policy = Policy(regress="perf", perf=perf)
    rng = random.Random(seed)
    counts = {"worse": 0, "within": 0, "undecided": 0}
    used = 0
    for _ in range(rounds):
        pool = list(candidate)
        rng.shuffle(pool)
        taken = pool[: perf.samples]
        while True:
            tests = [{"metric": v, "reason": "test exited 0"} for v in taken]
            d = judge_step(perf, policy, [Kind.PASS] * len(taken), tests, tuple(reference), combine_runs)
            if not d.more or len(taken) >= len(pool):
                break
            taken = pool[: len(taken) + d.more]
        counts[d.record.get("decision", "undecided")] += 1
        used += len(taken)
    return {k: v / rounds for k, v in counts.items()} | {"mean_samples": used / rounds}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--samples", type=int, default=20, help="processes per set")
    ap.add_argument("--n", type=int, default=1 << 24, help="elements of the reference launch")
    ap.add_argument("--rounds", type=int, default=500, help="random orderings judged")
    args = ap.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    import torch  # noqa: F401  (fail early without a GPU stack)
    import triton

    script = Path(tempfile.mkdtemp()) / "kernel.py"
    script.write_text(KERNEL)
    sample(script, args.n)  # compile once: the cache makes later processes comparable
    sets: dict[str, list[float]] = {"reference": [], "same": [], "slower": []}
    sizes = {"reference": args.n, "same": args.n, "slower": int(args.n * 1.3)}
    t0 = time.monotonic()
    for _ in range(args.samples):
        for name in sets:
            sets[name].append(sample(script, sizes[name]))
    seconds = time.monotonic() - t0
    stats = {
        name: {"median": statistics.median(v), "cv": statistics.pstdev(v) / statistics.mean(v),
               "min": min(v), "max": max(v)}
        for name, v in sets.items()
    }
    verdicts = {}
    for threshold in (0.05, 0.10):
        for name in ("same", "slower"):
            verdicts[f"{name}@{threshold:g}"] = decide(sets["reference"], sets[name], threshold, args.rounds, seed=1)
    ratio = stats["slower"]["median"] / stats["reference"]["median"]
    data = {"device": torch.cuda.get_device_name(0), "triton": triton.__version__,
            "torch": torch.__version__, "samples": sets, "stats": stats, "verdicts": verdicts,
            "slower_ratio": ratio, "seconds": round(seconds, 1)}
    (args.out / "results.json").write_text(json.dumps(data, indent=2))
    lines = [
        f"# --regress perf on {data['device']} (triton {data['triton']}, torch {data['torch']})",
        "",
        f"{args.samples} processes per set, {seconds:.0f} s. The 1.3x launch measured "
        f"{(ratio - 1) * 100:+.1f}% against the reference.",
        "",
        "| set | median ms | noise (CV) | min | max |",
        "| --- | ---: | ---: | ---: | ---: |",
    ]
    for name, s in stats.items():
        lines.append(f"| {name} | {s['median']:.5f} | {s['cv'] * 100:.2f}% | {s['min']:.5f} | {s['max']:.5f} |")
    lines += ["", "| candidate @ threshold | worse | within | undecided | mean samples |",
              "| --- | ---: | ---: | ---: | ---: |"]
    for key, v in verdicts.items():
        lines.append(f"| {key} | {v['worse'] * 100:.1f}% | {v['within'] * 100:.1f}% | "
                     f"{v['undecided'] * 100:.1f}% | {v['mean_samples']:.1f} |")
    (args.out / "results.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    ok = all(verdicts[f"slower@{t:g}"]["worse"] == 1.0 and verdicts[f"same@{t:g}"]["worse"] == 0.0
             for t in (0.05, 0.10))
    return 0 if ok and not math.isnan(ratio) else 1


if __name__ == "__main__":
    sys.exit(main())
