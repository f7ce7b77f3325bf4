"""What --verify-revert costs: builds and tests of `tritonbisect run` with and without it.

Three linear histories of N commits (generated with the toy world's `write_history`), each
bisected by the real CLI (`run --build ... --test ... --json`) with the check off and on:

    one culprit        the state turns bad at one commit; its revert fixes the bad commit
    conflicting revert a later commit rewrites the line the culprit changed: the revert
                       does not apply (no build, no test)
    broken twice       a second, independent commit breaks a second file: the revert of the
                       first still fails, the second search (with it reverted) finds the other

Usage: python bench/revert_bench.py [--commits 300] [--markdown]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # testing/: the toy worlds
from testing.toyworld.gitstream import CommitSpec, git_env, write_history

BUILD = "if [ -e BROKEN ]; then exit 1; fi; mkdir -p out; cp state b out/"
TEST = "grep -q ok out/state && grep -q ok out/b"


def history(repo: Path, n: int, case: str) -> list[str]:
    first, second = n // 3, (2 * n) // 3
    commits = []
    for i in range(n):
        state = "bad\n" if i >= first else "ok\n"
        if case == "conflicting revert" and i >= first + 5:
            state = "bad, edited again\n"
        b = "bad\n" if case == "broken twice" and i >= second else "ok\n"
        tree = {"state": state, "b": b, f"log/{i}": f"{i}\n", ".gitignore": "out/\n"}
        commits.append(CommitSpec(tree=tree, subject=f"c{i}", timestamp=1_700_000_000 + 60 * i))
    return write_history(repo, commits)


def run(repo: Path, home: Path, good: str, *extra: str) -> tuple[dict, float]:
    env = git_env()
    env["TRITONBISECT_HOME"] = str(home)
    t0 = time.monotonic()
    proc = subprocess.run(
        [sys.executable, "-m", "tritonbisect.cli", "run", "--repo", str(repo), "--good", good, "--bad", "main",
         "--build", BUILD, "--test", TEST, "--json", *extra],
        cwd=repo, env=env, capture_output=True, text=True, check=False,
    )
    seconds = time.monotonic() - t0
    if proc.returncode not in (0, 6):
        raise SystemExit(f"run failed ({proc.returncode}): {proc.stderr[-2000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1]), seconds


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--commits", type=int, default=300)
    parser.add_argument("--markdown", action="store_true")
    args = parser.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for case in ("one culprit", "conflicting revert", "broken twice"):
            repo = Path(tmp) / case.replace(" ", "-")
            shas = history(repo, args.commits, case)
            off, t_off = run(repo, Path(tmp) / f"home-off-{repo.name}", shas[0])
            on, t_on = run(repo, Path(tmp) / f"home-on-{repo.name}", shas[0], "--verify-revert")
            verdicts = ", ".join(f"{c['culprit'][:7]} {c['revert']}" for c in on.get("culprits") or [])
            rows.append((case, off, t_off, on, t_on, verdicts))
    header = "| history | culprit(s), check on | builds off / on | tests off / on | wall s off / on |"
    lines = [header, "| --- | --- | --- | --- | --- |"]
    for case, off, t_off, on, t_on, verdicts in rows:
        lines.append(
            f"| {case} | {verdicts} | {off['builds']} / {on['builds']} | {off['tests']} / {on['tests']} "
            f"| {t_off:.1f} / {t_on:.1f} |"
        )
    print(f"{args.commits} commits per history; {os.cpu_count()} CPUs")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
