"""Several cases in one session against one session per case: builds and tests of the real
`tritonbisect run` on toy histories (testing/toyworld/cases_repo.py), side by side in one run.

A linear history of N commits with 3 culprits (at N/5, N/2 and 4N/5); k cases break at
them (k = 5: two pairs of cases share a culprit). One session: the test reports every case
and the session finds each case's culprit. Separate sessions: one per case, each with a test
that judges that case alone (the same test script, reporting no cases: the classic search,
as before cases). Every
step builds (no `--artifact`), so builds are what a Triton bisect pays for. Also: the same
one session with --verify-revert (one revert build per distinct culprit).

Usage: python bench/cases_bench.py [--commits 300] [--ks 1,2,3,5]
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
from testing.toyworld.cases_repo import CasesWorld, make_cases_world
from testing.toyworld.gitstream import git_env

NAMES = ("gemm", "softmax", "layernorm", "attn", "embed")


def culprits(n: int, k: int) -> dict[str, int]:
    at = (n // 5, n // 2, (4 * n) // 5)
    return {NAMES[i]: at[i % 3] for i in range(k)}


def run(world: CasesWorld, home: Path, *extra: str, only: str | None = None) -> tuple[dict, float]:
    """One session; `only`: the test judges that case alone and reports no cases."""
    env = git_env()
    env["TRITONBISECT_HOME"] = str(home)
    env.update(world.env([only] if only else (), plain=only is not None))
    t0 = time.monotonic()
    proc = subprocess.run(
        [sys.executable, "-m", "tritonbisect.cli", "run", "--repo", str(world.repo), "--good", world.shas[0],
         "--bad", "main", "--build", world.build, "--test", world.test, "--json", *extra],
        cwd=world.repo, env=env, capture_output=True, text=True, check=False,
    )
    seconds = time.monotonic() - t0
    if proc.returncode not in (0, 6):
        raise SystemExit(f"run failed ({proc.returncode}): {proc.stderr[-2000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1]), seconds


def search_tests(home: Path, session: str) -> int:
    path = home / "sessions" / session / "journal.jsonl"
    return sum(1 for line in path.read_text().splitlines() if line.strip() and json.loads(line)["role"] == "search")


def one_k(tmp: Path, n: int, k: int) -> dict:
    planted = culprits(n, k)
    world = make_cases_world(tmp / f"k{k}", n, planted)
    together, t_together = run(world, tmp / f"k{k}-one")
    found = {c: e["culprit"] for c, e in together["cases"].items()}
    assert found == {c: world.culprit(c) for c in planted}, (found, planted)
    separate = {"builds": 0, "tests": 0, "search": 0, "seconds": 0.0}
    for case in planted:
        home = tmp / f"k{k}-{case}"
        out, seconds = run(world, home, only=case)
        assert out["culprit"] == world.culprit(case)
        separate["builds"] += out["builds"]
        separate["tests"] += out["tests"]
        separate["search"] += search_tests(home, out["session"])
        separate["seconds"] += seconds
    revert, t_revert = run(world, tmp / f"k{k}-revert", "--verify-revert")
    return {
        "k": k, "culprits": len(set(planted.values())),
        "one": {"builds": together["builds"], "tests": together["tests"],
                "search": search_tests(tmp / f"k{k}-one", together["session"]), "seconds": round(t_together, 1)},
        "separate": separate | {"seconds": round(separate["seconds"], 1)},
        "revert": {"builds": revert["builds"], "tests": revert["tests"], "seconds": round(t_revert, 1),
                   "verdicts": sorted({e["revert"] for e in revert["cases"].values()})},
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--commits", type=int, default=300)
    parser.add_argument("--ks", default="1,2,3,5")
    parser.add_argument("--json", dest="json_out", type=Path, help="also write the figures here")
    args = parser.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for k in (int(x) for x in args.ks.split(",")):
            rows.append(one_k(Path(tmp), args.commits, k))
    lines = [
        "| cases (culprits) | one session: builds / tests (search) | separate sessions: builds / tests (search) "
        "| builds saved | wall s one / separate | one session --verify-revert: builds |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for r in rows:
        one, sep, rev = r["one"], r["separate"], r["revert"]
        saved = 1 - one["builds"] / sep["builds"] if sep["builds"] else 0.0
        lines.append(
            f"| {r['k']} ({r['culprits']}) | {one['builds']} / {one['tests']} ({one['search']}) "
            f"| {sep['builds']} / {sep['tests']} ({sep['search']}) | {saved:.0%} "
            f"| {one['seconds']} / {sep['seconds']} | {rev['builds']} (+{rev['builds'] - one['builds']}: "
            f"{', '.join(rev['verdicts'])}) |"
        )
    print(f"{args.commits} commits; culprits at {sorted(set(culprits(args.commits, 3).values()))}; "
          f"{os.cpu_count()} CPUs")
    print("\n".join(lines))
    if args.json_out:
        args.json_out.write_text(json.dumps(rows, indent=1) + "\n")


if __name__ == "__main__":
    main()
