#!/usr/bin/env python3
"""A deterministic test's answer under --jobs: how often `run` says "low confidence" (exit 6).

    python bench/confidence_jobs_bench.py                # writes its section of bench/RESULTS.md
    python bench/confidence_jobs_bench.py --seeds 2 --no-write

Each session is the real CLI (`tritonbisect run --jobs J --json`) on a generated linear
history (bench/gitworld.py) with a test that never lies. Per row: the sessions that exited 6
(what a user sees now), and those whose stated posterior P(culprit) is below the threshold,
which is what the confidence was before a confirmed answer no verdict contradicts counted as
high (the rule then: high iff P >= the threshold): both read from the same sessions' --json.
"Split point": the culprit is one of the first batch's points (n * k / (J + 1)), where the
steps above it are stopped as useless and P is lowest; else the culprit is drawn per seed.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from gitworld import make_world  # noqa: E402
from results_md import RESULTS, write_section  # noqa: E402

SECTION = "## Confidence of a deterministic answer under --jobs"
BUILD = "mkdir -p out && cp state out/state"
TEST = "grep -q ok out/state"


@dataclass(frozen=True)
class Row:
    n: int  # commits strictly between good and bad
    jobs: int
    split: bool  # the culprit at a point of the first batch

    @property
    def label(self) -> str:
        return f"{self.n:,} commits, --jobs {self.jobs}" + (", culprit at a split point" if self.split else "")


@dataclass
class Figures:
    sessions: int = 0
    exit6: int = 0
    p_below: int = 0
    right: int = 0
    tests: list[int] = field(default_factory=list)
    p_min: float = 1.0
    seconds: float = 0.0


ROWS = [Row(5000, j, False) for j in (1, 2, 3, 4, 8)] + [Row(5000, 4, True), Row(50000, 4, False), Row(50000, 4, True)]


def culprit_of(row: Row, seed: int) -> int:
    rnd = random.Random(seed * 1009 + row.n + row.jobs)
    if row.split:
        return max(2, (row.n + 1) * rnd.randint(1, row.jobs) // (row.jobs + 1))
    return rnd.randint(2, row.n + 1)


def session(row: Row, seed: int, scratch: Path) -> dict:
    """One CLI session; its --json and exit code."""
    where = scratch / f"{row.n}-{row.jobs}-{int(row.split)}-{seed}"
    world = make_world(where / "repo", row.n, culprit=culprit_of(row, seed))
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env["TRITONBISECT_HOME"] = str(where / "home")
    proc = subprocess.run(
        [sys.executable, "-m", "tritonbisect.cli", "run", "--repo", str(world.repo), "--good", world.good,
         "--bad", world.bad, "--build", BUILD, "--test", TEST, "--jobs", str(row.jobs), "--json"],
        cwd=world.repo, env=env, capture_output=True, text=True, check=False, timeout=3600,
    )
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    out["exit"] = proc.returncode
    out["right"] = out.get("culprit") == world.shas[world.culprit]
    shutil.rmtree(where, ignore_errors=True)
    return out


def measure(rows: list[Row], seeds: int) -> dict[Row, Figures]:
    figures: dict[Row, Figures] = {}
    with tempfile.TemporaryDirectory(prefix="confidence-jobs-") as tmp:
        for row in rows:
            fig = figures.setdefault(row, Figures())
            for seed in range(seeds):
                t0 = time.perf_counter()
                out = session(row, seed, Path(tmp))
                fig.seconds += time.perf_counter() - t0
                post = out.get("posterior") or {}
                prob = post.get("probability")
                fig.sessions += 1
                fig.exit6 += out["exit"] == 6
                fig.right += bool(out["right"])
                fig.tests.append(int(out.get("tests") or 0))
                if prob is not None:
                    fig.p_below += prob < post.get("threshold", 0.95)
                    fig.p_min = min(fig.p_min, prob)
                print(f"{row.label} seed {seed}: exit {out['exit']}, P = {prob}", file=sys.stderr, flush=True)
    return figures


def render(figures: dict[Row, Figures], seeds: int, wall: float) -> str:
    out = [SECTION, ""]
    out.append(
        f"`python bench/confidence_jobs_bench.py` ({datetime.date.today().isoformat()}, Python "
        f"{platform.python_version()}, {wall / 60:.1f} min on this machine, shared). {seeds} sessions "
        "per row, each the real CLI (`tritonbisect run --jobs J --json`) on a generated linear "
        "history with a test that never lies. *Exit 6 now*: sessions that said low confidence. "
        "*P below the threshold*: sessions whose stated P(culprit) (`posterior.probability`, "
        "computed allowing for a flaky test) is below 0.95 — what the confidence was before a "
        "confirmed answer no verdict contradicts counted as high, read from the same sessions. "
        "*Split point*: the culprit is a point of the first batch (n·k/(J+1)), where the steps above "
        "it are stopped as useless and thousands of commits above it rest on its own two verdicts."
    )
    out.append("")
    out.append("| history | sessions | right | exit 6 now | P below the threshold (the rule before) | lowest P | mean tests | s/session |")
    out.append("|---------|----------|-------|------------|------------------------------------------|----------|------------|-----------|")
    for row, fig in figures.items():
        out.append(
            f"| {row.label} | {fig.sessions} | {fig.right}/{fig.sessions} | {fig.exit6}/{fig.sessions} | "
            f"{fig.p_below}/{fig.sessions} | {fig.p_min:.3f} | {statistics.mean(fig.tests):.1f} | "
            f"{fig.seconds / max(1, fig.sessions):.0f} |"
        )
    exit6 = sum(f.exit6 for f in figures.values())
    below = sum(f.p_below for f in figures.values())
    total = sum(f.sessions for f in figures.values())
    out.append("")
    out.append(
        f"Reading: {exit6} of {total} deterministic sessions exit 6 now; under the rule before, "
        f"{below} of the same {total} would have (their P is below the threshold although no "
        "verdict contradicts the answer and its confirmation agreed). P depends on where the "
        "tests fell, not on the test: it is lowest when the culprit is a point of the first batch."
    )
    return "\n".join(out) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seeds", type=int, default=10)
    ap.add_argument("--no-write", action="store_true", help="print, do not write bench/RESULTS.md")
    args = ap.parse_args(argv)
    t0 = time.perf_counter()
    figures = measure(ROWS, args.seeds)
    text = render(figures, args.seeds, time.perf_counter() - t0)
    if args.no_write:
        print(text)
    else:
        write_section(SECTION, text, RESULTS)
        print(f"wrote {SECTION!r} in {RESULTS}", file=sys.stderr)
    return 0 if all(f.exit6 == 0 and f.right == f.sessions for f in figures.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
