#!/usr/bin/env python3
"""The Ray executor against the local one, on the same histories and commands.

    python bench/executor_bench.py                 # writes bench/RESULTS.md
    python bench/executor_bench.py --no-write --sleep 0.5

Two measurements, each `tritonbisect run` in a subprocess (as a user runs it):

  overhead  trivial steps (a `cp` build, a `grep` test), --jobs 1, on a linear history:
            wall time per step, local workers vs Ray actors. The Ray figure is taken on a
            running cluster (its start-up is reported on its own line), so it is the price
            of each step's remote call, log copying and bookkeeping.
  scaling   steps whose build sleeps (a scaled-down build), --jobs 1, 2 and 4: search rounds
            and wall time, local vs Ray.

Ray runs on a two-node cluster made with `ray.cluster_utils.Cluster` on this machine (the
second node is another raylet, not another host). Needs the `ray` extra.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # testing/: the toy worlds
from engine_repo import env_for, linear  # noqa: E402
from results_md import RESULTS, write_section  # noqa: E402

SECTION = "## Ray executor vs local workers"
BUILD = "if [ -e BROKEN ]; then exit 1; fi; mkdir -p out; cp state out/state"
TEST = "grep -q ok out/state"


def run(repo: Path, home: Path, good: str, *, jobs: int, build: str, address: str | None) -> dict:
    args = [sys.executable, "-m", "tritonbisect.cli", "run", "--repo", str(repo), "--good", good,
            "--bad", "main", "--build", build, "--test", TEST, "--jobs", str(jobs), "--json"]
    if address:
        args += ["--executor", "ray", "--ray-address", address]
    start = time.monotonic()
    proc = subprocess.run(args, cwd=repo, env=env_for(home), capture_output=True, text=True,
                          timeout=1800, check=False)
    wall = time.monotonic() - start
    if proc.returncode != 0:
        raise SystemExit(f"tritonbisect failed ({proc.returncode}):\n{proc.stderr[-3000:]}")
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    out["wall"] = wall
    return out


def join_seconds(address: str) -> float:
    """How long a fresh process takes to join the cluster and leave it (ray.init +
    ray.shutdown): what a `tritonbisect --executor ray` run pays once, start-up aside."""
    code = f"import ray, logging; ray.init(address={address!r}, logging_level=logging.ERROR); ray.shutdown()"
    start = time.monotonic()
    subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    return time.monotonic() - start


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=64, help="commits between good and bad")
    ap.add_argument("--overhead-n", type=int, default=256, help="commits for the overhead runs")
    ap.add_argument("--sleep", type=float, default=1.0, help="seconds each scaled-down build sleeps")
    ap.add_argument("--repeats", type=int, default=3, help="overhead runs per executor (median)")
    ap.add_argument("--no-write", action="store_true")
    opts = ap.parse_args()

    from ray.cluster_utils import Cluster

    tmp = Path(tempfile.mkdtemp(prefix="tbexb-", dir="/tmp"))
    t0 = time.monotonic()
    cluster = Cluster(initialize_head=True, head_node_args={
        "num_cpus": 8, "include_dashboard": False, "temp_dir": str(tmp / "ray")})
    cluster.add_node(num_cpus=8)
    cluster.wait_for_nodes()
    cluster_start = time.monotonic() - t0
    rows_overhead, rows_scaling = [], []
    try:
        # per-step overhead: trivial steps, one worker
        repo = tmp / "trivial"
        shas = linear(repo, opts.overhead_n + 1, culprit=opts.overhead_n * 2 // 3)
        join_seconds(cluster.address)  # warm-up: the first join also starts worker processes
        join_s = join_seconds(cluster.address)
        for name, address in (("local", None), ("ray", cluster.address)):
            walls, per_step = [], []
            for r in range(opts.repeats):
                home = tmp / f"home-o-{name}-{r}"
                res = run(repo, home, shas[0], jobs=1, build=BUILD, address=address)
                walls.append(res["wall"])
                per_step.append(res["wall"] / res["steps"])
                shutil.rmtree(home, ignore_errors=True)
            walls.sort()
            per_step.sort()
            rows_overhead.append((name, res["steps"], walls[len(walls) // 2], per_step[len(per_step) // 2]))
        # scaling: builds that sleep
        repo = tmp / "sleepy"
        shas = linear(repo, opts.n + 1, culprit=opts.n * 3 // 5)
        build = f"sleep {opts.sleep}; {BUILD}"
        for jobs in (1, 2, 4):
            for name, address in (("local", None), ("ray", cluster.address)):
                home = tmp / f"home-s-{name}-{jobs}"
                res = run(repo, home, shas[0], jobs=jobs, build=build, address=address)
                assert res["culprit"] == shas[opts.n * 3 // 5], res
                rows_scaling.append((jobs, name, res["rounds"], res["steps"], res["builds"], res["wall"]))
                shutil.rmtree(home, ignore_errors=True)
    finally:
        cluster.shutdown()
        shutil.rmtree(tmp, ignore_errors=True)

    local = next(r for r in rows_overhead if r[0] == "local")
    ray_row = next(r for r in rows_overhead if r[0] == "ray")
    lines = [
        SECTION,
        "",
        f"`python bench/executor_bench.py` on {platform.machine()}, {os.cpu_count()} cores, "
        f"Python {platform.python_version()}, Ray {_ray_version()}; "
        f"{time.strftime('%Y-%m-%d')}. Two-node Ray cluster on this machine "
        "(`ray.cluster_utils.Cluster`); `tritonbisect run` as a subprocess each time.",
        "",
        f"Cluster start-up (head + second node): {cluster_start:.1f} s. A process joining it "
        f"(`ray.init` + `ray.shutdown`): {join_s:.1f} s; `--ray-address local` starts a private "
        "cluster instead (about the first figure).",
        "",
        f"### Per-step overhead: trivial steps, --jobs 1, {opts.overhead_n} commits "
        f"(median of {opts.repeats} runs)",
        "",
        "| executor | steps | wall | wall per step |",
        "| --- | ---: | ---: | ---: |",
    ]
    for name, steps, wall, per in rows_overhead:
        lines.append(f"| {name} | {steps} | {wall:.2f} s | {per * 1000:.0f} ms |")
    extra = (ray_row[2] - local[2] - join_s) / max(1, ray_row[1])
    lines += [
        "",
        f"Ray's cost per step beyond the local one, joining aside: about "
        f"{extra * 1000:.0f} ms ((ray wall - local wall - join) / steps; this still holds the "
        "start of the worker actor's process, paid once per worker and session), against a "
        "Triton build of 30-60 minutes.",
        "",
        f"### Scaling: builds that sleep {opts.sleep:g} s, {opts.n} commits",
        "",
        "| --jobs | executor | search rounds | steps | builds | wall |",
        "| ---: | --- | ---: | ---: | ---: | ---: |",
    ]
    for jobs, name, rounds, steps, builds, wall in rows_scaling:
        lines.append(f"| {jobs} | {name} | {rounds} | {steps} | {builds} | {wall:.1f} s |")
    lines += [
        "",
        "Rounds are the search's (endpoints and confirmation come on top, 2 steps each in "
        "parallel); the same search runs on both executors, so rounds match and wall time "
        "differs by the joining, worker start and per-step figures above. Step and build "
        "counts can differ by a step or two: a step whose verdict stopped mattering is "
        "cancelled, and whether it had finished by then depends on timing.",
    ]
    text = "\n".join(lines) + "\n"
    print(text)
    if not opts.no_write:
        write_section(SECTION, text, RESULTS)
    return 0


def _ray_version() -> str:
    import ray

    return ray.__version__


if __name__ == "__main__":
    sys.exit(main())
