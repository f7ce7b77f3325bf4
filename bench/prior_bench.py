#!/usr/bin/env python3
"""The pass hint, as a user's session reports it: total builds with the hint right, with the
hint wrong, and without a hint.

    python bench/prior_bench.py                 # 8 histories per row; writes bench/RESULTS.md
    python bench/prior_bench.py --seeds 4 --no-write

Each history is a real git repository laid out like Triton (testing/toyworld/pass_history.py):
N commits between two tags (N = 600), about 5% of them touching the hinted pass's sources
(Coalesce.cpp or its Passes.td, scattered at random), one culprit. "right": the culprit is one
of those commits; "wrong": it is one of the others (a misleading hint). Cases: a deterministic
test; the same with an unbuildable cluster (25 commits in a row that do not build, never the
culprit); a flaky test (a good commit fails with p = 0.1, the same draws in every session)
under `--flaky auto`.

Every figure is what the session's `--json` says, the session started as a user types it:

    tritonbisect run --repo R --good v3.5.0 --bad v3.6.0 --build CMD --test T --json \
        [--prefer-pass TritonGPUCoalesce] [--flaky auto]

`builds` counts every build of the session -- both endpoints, the search, the confirmation --
and a re-test on a build a checkout kept is not a build (`cached_builds`). No --artifact: the
build command's output is not cached, as in the plain command above.

The floor: any search that ends, as this one does, on the evidence alone (the culprit tested
bad, its parent tested good) after both endpoints must build, for a culprit among m scattered
hinted commits, the culprit and its parent and enough of the others to tell which: 2 + F(m)
builds, F from the dynamic programme below (F(30) = 5.97) -- that is, with the answer never
resting on the hint, no hinted search gets under about 8 builds where bisection takes 11.3.
"""

from __future__ import annotations

import argparse
import datetime
import json
import math
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from functools import lru_cache
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))
from results_md import write_section  # noqa: E402
from testing.toyworld.pass_history import HINTED_PASS, REGRESSION_MARK, make_pass_history  # noqa: E402

SECTION = "## Pass hint: --prefer-pass builds, hint right / wrong / none"

CHECK = f'''
import hashlib, pathlib, subprocess, sys
mark = {REGRESSION_MARK!r}
bad = any(p.is_file() and mark in p.read_text(errors="replace")
          for p in pathlib.Path(".").rglob("*") if not any(part.startswith(".git") for part in p.parts))
if len(sys.argv) > 2:  # flaky: a good commit fails with probability p, the same draws every session
    state, p = pathlib.Path(sys.argv[1]), float(sys.argv[2])
    head = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip()
    counter = state / head
    n = int(counter.read_text()) if counter.exists() else 0
    counter.write_text(str(n + 1))
    draw = int(hashlib.sha256(f"{{head}}:{{n}}".encode()).hexdigest(), 16) / 2 ** 256
    if not bad and draw < p:
        sys.exit(1)
sys.exit(1 if bad else 0)
'''

CASES = (("deterministic", 0.0, 0), ("unbuildable cluster of 25", 0.0, 25), ("flaky p=0.1, --flaky auto", 0.1, 0))


def session(tmp: Path, truth: dict, name: str, p: float, hint: bool) -> dict:
    """One session through the CLI; its --json, with `right` added."""
    test = f"python3 {tmp / 'check.py'}"
    extra: list[str] = []
    if p:
        state = tmp / f"draws-{name}"
        state.mkdir()
        test += f" {state} {p}"
        extra += ["--flaky", "auto"]
    if hint:
        extra += ["--prefer-pass", HINTED_PASS]
    env = {k: v for k, v in os.environ.items() if not k.startswith("TRITONBISECT_")}
    proc = subprocess.run(
        [sys.executable, "-m", "tritonbisect.cli", "run", "--repo", str(tmp / "repo"), "--good", truth["good"],
         "--bad", truth["bad"], "--build", truth["build"], "--test", test, "--workdir", str(tmp / name),
         "--json", *extra],
        capture_output=True, text=True, env=env, cwd=tmp, timeout=1800, check=False,
    )
    lines = proc.stdout.strip().splitlines()
    if not lines:
        raise SystemExit(f"session {name} printed no JSON (exit {proc.returncode}): {proc.stderr[-2000:]}")
    out = json.loads(lines[-1])
    out["right"] = out.get("culprit") == truth["culprit"]
    return out


@lru_cache(None)
def _floor(a: int, b: int, lower: bool, upper: bool) -> float:
    """Expected builds to prove the culprit among hinted commits a..b (uniform), where `lower`:
    the parent of hinted commit a is known good, `upper`: hinted commit b is known bad. A test
    at hinted commit k, or at its parent, splits the set; the answer needs both proofs."""
    if a == b:
        return float(not lower) + float(not upper)
    n = b - a + 1
    best = math.inf
    for k in range(a + 1, b + 1):
        left, right = (k - a) / n, (b - k + 1) / n
        at_prev = 1 + left * _floor(a, k - 1, lower, True) + right * _floor(k, b, False, upper)
        at_parent = 1 + left * _floor(a, k - 1, lower, False) + right * _floor(k, b, True, upper)
        best = min(best, at_prev, at_parent)
    return best


def floor_builds(m: int) -> float:
    """Both endpoints and the fewest search builds of any search whose answer rests on the
    evidence alone, for a culprit among m scattered hinted commits (the hint known right)."""
    return 2 + _floor(0, m - 1, False, False)


def bisection_builds(n: int) -> float:
    """Both endpoints and plain bisection's mean over n candidates (the confirmation re-tests
    kept builds)."""
    deep = 2 * (n - 2 ** int(math.log2(n)))
    return 2 + (deep * math.ceil(math.log2(n)) + (n - deep) * int(math.log2(n))) / n


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seeds", type=int, default=8, help="histories per row")
    ap.add_argument("--commits", type=int, default=600)
    ap.add_argument("--share", type=float, default=0.05)
    ap.add_argument("--no-write", action="store_true")
    args = ap.parse_args()
    t0 = time.time()
    rows = []
    for name, p, cluster in CASES:
        for where in ("right", "wrong"):
            runs: dict[str, list[dict]] = {"none": [], "hint": []}
            for seed in range(args.seeds):
                tmp = Path(tempfile.mkdtemp(prefix="prior-bench-"))
                try:
                    truth = make_pass_history(tmp / "repo", commits=args.commits, share=args.share,
                                              culprit_in_pass=where == "right", seed=seed * 1009 + cluster,
                                              broken=cluster)
                    (tmp / "check.py").write_text(CHECK)
                    for label in runs:
                        runs[label].append(session(tmp, truth, label, p, label == "hint"))
                finally:
                    shutil.rmtree(tmp, ignore_errors=True)
            rows.append((name, where, runs))
            none, hint = (statistics.mean(r["builds"] for r in runs[k]) for k in ("none", "hint"))
            print(f"{name:28} {where:5} builds none={none:.2f} hint={hint:.2f} ({hint / none:.2f}x)", flush=True)
    body = render(rows, args, time.time() - t0)
    print(body)
    if not args.no_write:
        write_section(SECTION, body)


def _cell(runs: list[dict]) -> str:
    builds = [r["builds"] for r in runs]
    tests = statistics.mean(r["tests"] for r in runs)
    right = sum(r["right"] for r in runs)
    return f"{statistics.mean(builds):.2f} (max {max(builds)}), {tests:.1f} tests, {right}/{len(runs)} right"


def render(rows: list, args: argparse.Namespace, seconds: float) -> str:
    from tritonbisect.search import prior

    today = datetime.date.today().isoformat()
    m = round(args.share * args.commits)
    out = [SECTION, "",
           f"`bench/prior_bench.py`, {today}, {platform.processor() or platform.machine()}, {args.seeds} "
           f"histories per row (real git repositories, testing/toyworld/pass_history.py), {args.commits} commits "
           f"between the tags, {args.share:.0%} of them touching the hinted pass (m = {m}); hint ratio "
           f"r = 1 + 3n/m = {prior.hint_ratio(args.commits, m):.0f}. Every figure is the session's own `--json` "
           "(`run --build CMD --test T --json`, no `--artifact`): builds = every build of the session, both "
           "endpoints, the search and the confirmation; a re-test on a build a checkout kept is not one. "
           f"Mean (max) over the histories; right: answers that are the planted culprit. {seconds:.0f} s.", "",
           "| case | hint | no hint | --prefer-pass | hint / no hint | hint - no hint, same history: mean, max |",
           "| --- | --- | --- | --- | --- | --- |"]
    for name, where, runs in rows:
        none = [r["builds"] for r in runs["none"]]
        hint = [r["builds"] for r in runs["hint"]]
        diffs = [h - n for h, n in zip(hint, none, strict=True)]
        out.append(f"| {name} | {where} | {_cell(runs['none'])} | {_cell(runs['hint'])} | "
                   f"{statistics.mean(hint) / statistics.mean(none):.2f}x | "
                   f"{statistics.mean(diffs):+.2f}, {max(diffs):+d} |")
    out += ["", f"The floor (see the script's docstring): with both endpoints tested first and the answer "
            f"resting on the evidence alone (the culprit tested bad and its parent good), a search that "
            f"knows the culprit is one of {m} scattered hinted commits builds at least "
            f"{floor_builds(m):.2f} times on average, where bisection builds {bisection_builds(args.commits):.2f}: "
            f"{floor_builds(m) / bisection_builds(args.commits):.3f}x."]
    return "\n".join(out)


if __name__ == "__main__":
    main()
