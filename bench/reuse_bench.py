"""A second bisect over an overlapping range: how many builds does it perform?

On the toy world, with one workdir (so one artifact cache) for every run:

  triton    `tritonbisect triton` over a range holding the Triton regression, then over a
            shifted range that overlaps it (both hold the regression)
  descent   `tritonbisect triton` over a range holding the LLVM bump (the Triton phase finds
            the bump, the LLVM phase descends into llvm-project, no compatibility map), then
            over a narrower range that still holds the bump

For the second run of each pair: the steps it ran, the builds it performed, and how many of
its steps had been built (or had failed to build) in an earlier run. Target: builds
performed == steps never built before (nothing is rebuilt). For contrast, a tool without an
artifact cache builds at every step.

    python bench/reuse_bench.py [--write-results]
"""

from __future__ import annotations

import argparse
import json
import platform
import subprocess
import sys
import tempfile
import time
from datetime import date
from pathlib import Path

from results_md import RESULTS, write_section

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # testing/: the toy worlds
from testing.toyworld import make_world

SECTION = "## Second bisect over an overlapping range"


def tritonbisect(*args: str) -> tuple[dict, float]:
    """Run the real CLI; (its --json result, wall seconds)."""
    start = time.monotonic()
    proc = subprocess.run(
        [sys.executable, "-m", "tritonbisect.cli", *args, "--json"],
        capture_output=True,
        text=True,
    )
    seconds = time.monotonic() - start
    lines = [line for line in proc.stdout.splitlines() if line.startswith("{")]
    if not lines:
        raise SystemExit(f"tritonbisect {' '.join(args)} gave no result:\n{proc.stderr[-3000:]}")
    return json.loads(lines[-1]), seconds


def journal(result: dict) -> list[dict]:
    path = Path(result["session_dir"]) / "journal.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def steps(result: dict) -> set[tuple[str, str]]:
    """(phase, commit) of every step that built or took a build from the cache."""
    return {(r["phase"], r["commit"]) for r in journal(result) if r.get("build")}


def performed(result: dict) -> set[tuple[str, str]]:
    return {
        (r["phase"], r["commit"])
        for r in journal(result)
        if (r.get("build") or {}).get("performed")
    }


def scenario(
    name: str, first: list[str], second: list[str], seen: set, expected: list[str]
) -> dict:
    r1, t1 = tritonbisect(*first)
    seen |= steps(r1)
    r2, t2 = tritonbisect(*second)
    s2 = steps(r2)
    new = s2 - seen
    built = performed(r2)
    row = {
        "scenario": name,
        "first": {
            "steps": len(steps(r1)),
            "builds": r1["builds"],
            "seconds": round(t1, 1),
            "culprits": [p["culprit"] for p in r1["phases"]],
        },
        "second": {
            "steps": len(s2),
            "builds": r2["builds"],
            "seconds": round(t2, 1),
            "culprits": [p["culprit"] for p in r2["phases"]],
        },
        "seen_before": len(s2 & seen),
        "never_built_before": len(new),
        "rebuilt": len(built & seen),
        "culprits_ok": all([p["culprit"] for p in r["phases"]] == expected for r in (r1, r2)),
        "target_met": built == new and r2["builds"] == len(new),
    }
    seen |= s2
    return row


def run() -> tuple[list[dict], dict]:
    tmp = Path(tempfile.mkdtemp(prefix="reuse-bench-"))
    world = make_world(tmp / "world")
    t = world.truth
    tri = t["triton_order"]
    common = [
        "--triton-dir",
        str(world.triton),
        "--llvm-dir",
        str(world.llvm),
        "--test",
        t["triton_test"],
        "--workdir",
        str(tmp / "home"),
    ]
    r, fix = tri.index(t["triton_regression"]), tri.index(t["triton_regression_fix"])
    seen: set = set()
    rows = [
        scenario(
            "triton",
            ["triton", "--good", tri[1], "--bad", tri[r + 2], *common],
            ["triton", "--good", tri[max(1, r - 4)], "--bad", tri[fix - 1], *common],
            seen,
            [t["triton_regression"]],
        )
    ]
    b = tri.index(t["bump"])
    rows.append(
        scenario(
            "descent",
            ["triton", "--good", t["good_triton"], "--bad", t["bad_triton_llvm"], *common],
            [
                "triton",
                "--good",
                tri[tri.index(t["good_triton"]) + 2],
                "--bad",
                tri[b + 2],
                *common,
            ],
            seen,
            [t["bump"], t["llvm_regression"]],
        )
    )
    facts = {
        "triton_regression": t["triton_regression"],
        "bump": t["bump"],
        "llvm_regression": t["llvm_regression"],
        "llvm_commits": len(t["llvm_order"]),
        "triton_commits": len(tri),
    }
    return rows, facts


def render(rows: list[dict], facts: dict) -> str:
    lines = [
        SECTION,
        "",
        f"`python bench/reuse_bench.py` on {platform.machine()}, {platform.system().lower()} "
        f"({date.today().isoformat()}); toy world of {facts['llvm_commits']} LLVM and "
        f"{facts['triton_commits']} Triton commits; one workdir (artifact cache) for all runs. "
        "A step is one (phase, commit): a Triton commit with its pinned LLVM built from "
        "`--llvm-dir`, or an LLVM commit with the Triton built against it.",
        "",
        "| scenario | run 1: steps / builds / s | run 2: steps / builds / s | run 2 steps built before | never built before | rebuilt | without a cache, run 2 builds | culprits |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | --- |",
    ]
    for row in rows:
        f, s = row["first"], row["second"]
        lines.append(
            f"| {row['scenario']} | {f['steps']} / {f['builds']} / {f['seconds']} | "
            f"{s['steps']} / **{s['builds']}** / {s['seconds']} | {row['seen_before']} | "
            f"{row['never_built_before']} | {row['rebuilt']} | {s['steps']} | "
            f"{'right' if row['culprits_ok'] else 'WRONG'} |"
        )
    ok = all(row["target_met"] and row["culprits_ok"] for row in rows)
    lines += [
        "",
        "Target (run 2 builds only the steps never built before, rebuilds nothing): "
        + ("**met** in every scenario." if ok else "**NOT met**; see the rows."),
        "",
        "The descent's second run re-tests the same LLVM range (the bump is the same), so its "
        "LLVM phase is all cache hits, and its endpoints (the bump and its parent) are the Triton "
        "phase's own steps. Failed builds count as built: they are recorded and not retried. "
        "Run 2's seconds are installs and tests (a cached step still installs its wheel into the "
        "target venv). The machine is shared by concurrent sessions (2 cores); seconds vary.",
        "",
    ]
    return "\n".join(lines)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--write-results", action="store_true", help=f"update {RESULTS.name}")
    args = ap.parse_args()
    rows, facts = run()
    print(json.dumps(rows, indent=2))
    text = render(rows, facts)
    print(text)
    if args.write_results:
        write_section(SECTION, text)
    return 0 if all(row["target_met"] and row["culprits_ok"] for row in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
