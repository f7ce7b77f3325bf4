#!/usr/bin/env python3
"""Flaky tests: plain bisection, `--repeat 3` majority, the default, and `--flaky auto`.

    python bench/flaky_bench.py                  # all cases, 200 seeds; writes bench/RESULTS.md
    python bench/flaky_bench.py --seeds 50 --no-write
    python bench/flaky_bench.py --cli-seeds 0    # skip the end-to-end runs

A test that lies: on a good commit it fails with probability p, on a bad one it passes with
probability q, independently at every run. Histories are bench/gitworld.py's: N commits
strictly between good and bad, a planted culprit, and optionally 15% of the commits in
unbuildable clusters (never the culprit or its parent). Strategies, as a user runs them:

    plain      tritonbisect run --flaky off              (classic search, the old behaviour)
    repeat3    tritonbisect run --flaky off --repeat 3   (each step: majority of 3 runs)
    default    tritonbisect run                          (--flaky detect: classic until a
                                                          verdict contradicts, then Bayesian)
    auto       tritonbisect run --flaky auto             (endpoints run 3 times; Bayesian;
                                                          confidence 0.99 by default)
    auto95     tritonbisect run --flaky auto --confidence 0.95

Right = the session ends `found` with the planted culprit (an invalid-endpoints exit, an
inconclusive end or a wrong commit are not right). Tests = every test execution (endpoints,
search, confirmation, repeats). Calibration: of the answers stated with confidence "high"
(posterior >= the threshold, or a classic answer whose confirmation agreed and that no verdict
contradicts), the share that is right.

The large seed counts drive the pure search (search/classic.py, search/bayes.py, bayes_step.py) through a
replica of the session's loop (session/phase_run.py and the parts it drives: the
same endpoint checks, conflict handling, confirmation, switch and budget). A smaller set of
seeds runs the real CLI on real git repositories with a bash test drawing the same
pseudo-random verdicts (a hash of seed, commit and run number), and the script checks that
the CLI and the replica agree seed by seed: the same answer after the same number of tests.
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
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace

sys.path.insert(0, str(Path(__file__).resolve().parent))
from gitworld import broken_clusters, make_world  # noqa: E402
from results_md import RESULTS, write_section  # noqa: E402
from tritonbisect.search import bayes, bayes_step
from tritonbisect.search import classic as search
from tritonbisect.session.evidence import evidence_of  # noqa: E402
from tritonbisect.session.flakiness import (  # noqa: E402
    CLASSIC_TRUST,
    ENDPOINT_RUNS,
    confidence_of,
    default_test_budget,
)

SECTION = "## Flaky tests: plain, --repeat 3, --flaky auto"
STRATEGIES = {
    "plain": ["--flaky", "off"],
    "repeat3": ["--flaky", "off", "--repeat", "3"],
    "default": [],
    "auto": ["--flaky", "auto"],
    "auto95": ["--flaky", "auto", "--confidence", "0.95"],
}
_M = 2147483647  # the Park-Miller prime: every product below fits bash's 64-bit arithmetic


def draw(seed: int, index: int, run: int) -> int:
    """The pseudo-random number (0 <= h < _M) of a commit's n-th run; bash computes the same."""
    h = (seed * 7919 + index * 104729 + run * 1299709 + 12345) % _M
    for _ in range(3):  # multiplications mod a prime, xor-shifts between them: not linear
        h = h * 48271 % _M
        h ^= h >> 13
        h = h * 69621 % _M
        h ^= h >> 7
    return h


def threshold(rate: float) -> int:
    return int(rate * _M)


# --- the replica of a session (one worker, the command recipe: nothing cached) -------------


@dataclass
class Outcome:
    status: str
    culprit: int | None
    tests: int
    builds: int
    prob: float | None
    high: bool
    search: str = "classic"


@dataclass
class Replica:
    n: int  # commits strictly between good and bad
    culprit: int  # index in 0..n+1 (0 good, n+1 bad)
    broken: set[int]
    seed: int
    p: float
    q: float
    repeat: int = 1
    flaky: str = "detect"
    confidence: float = 0.95
    records: list[dict] = field(default_factory=list)
    runs: Counter = field(default_factory=Counter)
    tests: int = 0
    builds: int = 0

    def __post_init__(self) -> None:
        self.names = [f"c{i}" for i in range(self.n + 2)]
        self.cands = search.Candidates.linear(self.names[1:])
        self.in_set = set(self.names[1:])
        self.bayes_on: bool | None = None

    # one step: build (fails on a broken commit), then `repeat` test runs, majority verdict
    def step(self, commit: str, role: str) -> dict:
        i = int(commit[1:])
        self.builds += 1
        if i in self.broken:
            rec = {"role": role, "commit": commit, "verdict": "skip", "kind": "build_failed", "tests": []}
        else:
            verdicts = []
            for _ in range(self.repeat):
                self.runs[i] += 1
                self.tests += 1
                h = draw(self.seed, i, self.runs[i])
                bad = i >= self.culprit
                lies = h < threshold(self.q if bad else self.p)
                verdicts.append("bad" if bad != lies else "good")
            top, n_top = Counter(verdicts).most_common(1)[0]
            kind = "flaky" if len(set(verdicts)) > 1 else ("fail" if top == "bad" else "pass")
            verdict = top if n_top * 2 > len(verdicts) else "skip"
            rec = {"role": role, "commit": commit, "verdict": verdict, "kind": kind,
                   "tests": [1] * len(verdicts)}
        rec["seq"] = len(self.records) + 1
        self.records.append(rec)
        return rec

    def evidence(self):
        return evidence_of(self.records)

    def run(self) -> Outcome:
        good, bad = self.names[0], self.names[-1]
        runs = ENDPOINT_RUNS if self.flaky == "auto" else 1
        for commit in (good, bad):
            for _ in range(runs):
                self.step(commit, "endpoint")
        if not self.endpoints_ok(good, bad, runs):
            return Outcome("invalid-endpoints", None, self.tests, self.builds, None, False)
        if self.flaky == "auto":
            self.bayes_on = True
        action = self.search()
        if not self.bayes_on and isinstance(action, search.Found):
            return self.confirm(action.culprit)
        return self.finish(action)

    def endpoints_ok(self, good: str, bad: str, runs: int) -> bool:
        tally = {c: Counter(r["verdict"] for r in self.records if r["commit"] == c) for c in (good, bad)}
        g, b = tally[good], tally[bad]
        if runs <= 1:
            return g["good"] == 1 and b["bad"] == 1
        g_rate = g["good"] / max(1, g["good"] + g["bad"])
        b_rate = b["good"] / max(1, b["good"] + b["bad"])
        return bool(g["good"] and b["bad"] and g_rate > b_rate)

    def search(self):
        if self.bayes_on:
            return self.bayes_search()
        verdicts = {r["commit"]: r["verdict"] for r in self.records if r["commit"] in self.in_set}
        verdicts.setdefault(self.names[-1], "bad")
        overrides: dict[str, str] = {}
        counts: Counter = Counter()
        while True:
            action = search.next_step(self.cands, {**verdicts, **overrides}, workers=1)
            if isinstance(action, search.TestNext):
                commit = action.commits[0]
            elif isinstance(action, search.Conflict):
                if self.flaky == "detect":
                    self.bayes_on = True
                    return self.bayes_search()
                retest = []
                for commit in action.commits:
                    if counts[commit] >= 2 or commit not in self.in_set:
                        overrides[commit] = "skip"
                    elif not retest:
                        retest.append(commit)
                if not retest:
                    continue
                commit = retest[0]
                counts[commit] += 1
            else:
                return action
            rec = self.step(commit, "search")
            verdicts[commit] = rec["verdict"]
            if self.flaky == "detect" and self.evidence().flakiness_seen:
                self.bayes_on = True
                return self.bayes_search()

    def bayes_search(self):
        budget = default_test_budget(len(self.cands.order))
        while True:
            ev = self.evidence()
            action = bayes_step.next_step(
                self.cands, ev.counts, model=bayes.FlakeModel(), marks=ev.marks,
                skipped={c for c in ev.skipped if c not in ev.counts}, workers=1,
                confidence=self.confidence, tests_left=max(0, budget - ev.search_tests),
            )
            if not isinstance(action, search.TestNext):
                return action
            self.step(action.commits[0], "search")

    def confirm(self, culprit: str) -> Outcome:
        i = int(culprit[1:])
        parent = self.names[i - 1]
        done = {}
        for commit in dict.fromkeys((culprit, parent)):
            done[commit] = self.step(commit, "confirm")["verdict"]
        ok = done[culprit] == "bad" and done[parent] == "good"
        if not ok and self.flaky == "detect" and self.evidence().flakiness_seen:
            self.bayes_on = True
            return self.finish(self.bayes_search())
        post = self.posterior(CLASSIC_TRUST)
        prob = post.prob(culprit)
        # session/flakiness.py confirmed_confidence: P reaches the threshold, or no verdict contradicts
        high = ok and (prob >= self.confidence or post.wrong_verdicts(culprit) == 0)
        return Outcome("found", i, self.tests, self.builds, prob, high)

    def posterior(self, trust: float):
        ev = self.evidence()
        return bayes.posterior(self.cands, ev.counts, model=bayes.FlakeModel(trust=trust), marks=ev.marks)

    def finish(self, action) -> Outcome:
        kind = "flake-aware" if self.bayes_on else "classic"
        if isinstance(action, search.Found):
            prob = self.posterior(0.0 if self.bayes_on else CLASSIC_TRUST).prob(action.culprit)
            return Outcome("found", int(action.culprit[1:]), self.tests, self.builds, prob,
                           prob >= self.confidence, kind)
        return Outcome("inconclusive", None, self.tests, self.builds, None, False, kind)


def world_of(n: int, seed: int, broken_fraction: float) -> tuple[int, set[int]]:
    """The culprit and broken commits bench/gitworld.make_world plants for this seed."""
    rnd = random.Random(seed)
    culprit = rnd.randint(2, n + 1) if n >= 1 else 1
    broken = (broken_clusters(n, broken_fraction, rnd, keep={culprit, culprit - 1})
              if broken_fraction > 0 else set())
    return culprit, broken


def replica(case: Case, strategy: str, seed: int) -> Replica:
    culprit, broken = world_of(case.n, seed, case.broken)
    args = STRATEGIES[strategy]
    flaky = args[args.index("--flaky") + 1] if "--flaky" in args else "detect"
    given = float(args[args.index("--confidence") + 1]) if "--confidence" in args else None
    return Replica(
        case.n, culprit, broken, seed, case.p, case.q,
        repeat=3 if "--repeat" in args else 1,
        flaky=flaky,
        confidence=confidence_of(SimpleNamespace(flaky=flaky, confidence=given, flake_rate=None)),
    )


# --- cases and figures ------------------------------------------------------------------------


@dataclass(frozen=True)
class Case:
    n: int
    p: float
    q: float = 0.0
    broken: float = 0.0

    @property
    def label(self) -> str:
        extra = f", q = {self.q:g}" if self.q else ""
        extra += ", 15% unbuildable" if self.broken else ""
        return f"N = {self.n}, p = {self.p:g}{extra}"


CASES = [
    *(Case(n, p) for n in (64, 1000) for p in (0.05, 0.1, 0.2)),
    Case(64, 0.1, q=0.05), Case(1000, 0.1, q=0.05),
    Case(64, 0.1, broken=0.15), Case(1000, 0.1, broken=0.15),
]


@dataclass
class Figures:
    right: int = 0
    runs: int = 0
    tests: list[int] = field(default_factory=list)
    builds: list[int] = field(default_factory=list)
    high: int = 0
    high_right: int = 0
    seconds: float = 0.0

    def add(self, out: Outcome, truth: int, seconds: float) -> None:
        self.runs += 1
        ok = out.status == "found" and out.culprit == truth
        self.right += ok
        self.tests.append(out.tests)
        self.builds.append(out.builds)
        if out.high:
            self.high += 1
            self.high_right += ok
        self.seconds += seconds


def simulate(cases: list[Case], seeds: int) -> dict[tuple[Case, str], Figures]:
    out: dict[tuple[Case, str], Figures] = {}
    for case in cases:
        for strategy in STRATEGIES:
            fig = Figures()
            for seed in range(seeds):
                rep = replica(case, strategy, seed)
                t0 = time.perf_counter()
                result = rep.run()
                fig.add(result, rep.culprit, time.perf_counter() - t0)
            out[(case, strategy)] = fig
            print(f"{case.label:38} {strategy:8} right {fig.right / fig.runs:6.1%}  "
                  f"tests {statistics.mean(fig.tests):5.1f}  calib "
                  f"{fig.high_right}/{fig.high}  {fig.seconds:.1f}s", file=sys.stderr)
    return out


# --- the real CLI ------------------------------------------------------------------------------

BUILD_SH = """\
if [ -e BROKEN ]; then echo "error: does not build" >&2; exit 1; fi
mkdir -p out && cp state out/state
"""

TEST_SH = """\
read -r i < src.txt
f={counts}/$i
n=$(( $(cat "$f" 2>/dev/null || echo 0) + 1 )); echo "$n" > "$f"
h=$(( ({seed} * 7919 + i * 104729 + n * 1299709 + 12345) % {m} ))
for r in 1 2 3; do
  h=$(( h * 48271 % {m} )); h=$(( h ^ (h >> 13) )); h=$(( h * 69621 % {m} )); h=$(( h ^ (h >> 7) ))
done
if grep -q bad out/state; then
  [ "$h" -lt {q} ] && exit 0; exit 1
else
  [ "$h" -lt {p} ] && exit 1; exit 0
fi
"""


def tritonbisect_cmd() -> list[str]:
    exe = shutil.which("tritonbisect")
    return [exe] if exe else [sys.executable, "-m", "tritonbisect.cli"]


def run_cli(case: Case, strategy: str, seed: int, scratch: Path) -> tuple[Outcome, int]:
    """One session of the real CLI on a real repository; (outcome, culprit index)."""
    base = scratch / f"{strategy}-{seed}"
    world = make_world(base / "repo", case.n, seed=seed, broken_fraction=case.broken)
    counts = base / "counts"
    counts.mkdir()
    (base / "build.sh").write_text(BUILD_SH)
    (base / "test.sh").write_text(TEST_SH.format(
        counts=counts, seed=seed, m=_M, p=threshold(case.p), q=threshold(case.q)))
    cmd = [*tritonbisect_cmd(), "run", "--repo", str(world.repo), "--good", world.good,
           "--bad", world.bad, "--build", f"bash {base / 'build.sh'}",
           "--test", f"bash {base / 'test.sh'}", "--workdir", str(base / "work"), "--json",
           *STRATEGIES[strategy]]
    env = dict(os.environ, TERM="dumb")
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, stdin=subprocess.DEVNULL)
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    culprit = world.shas.index(out["culprit"]) if out.get("culprit") else None
    post = out.get("posterior") or {}
    outcome = Outcome(out["status"], culprit, out["tests"], out["builds"],
                      post.get("probability"), out.get("confidence") == "high",
                      post.get("search", "classic"))
    shutil.rmtree(base, ignore_errors=True)
    return outcome, world.culprit


def compare_cli(cases: list[Case], seeds: int) -> tuple[list[str], int, int]:
    """Run the CLI and the replica on the same seeds; table rows and (agreeing, total)."""
    rows = []
    agree = total = 0
    with tempfile.TemporaryDirectory(prefix="flaky-bench-") as tmp:
        for case in cases:
            for strategy in STRATEGIES:
                cli, sim = Figures(), Figures()
                same = 0
                for seed in range(seeds):
                    t0 = time.perf_counter()
                    got, truth = run_cli(case, strategy, seed, Path(tmp))
                    cli.add(got, truth, time.perf_counter() - t0)
                    rep = replica(case, strategy, seed)
                    want = rep.run()
                    sim.add(want, rep.culprit, 0.0)
                    match = (got.status, got.culprit, got.tests, got.high) == (
                        want.status, want.culprit, want.tests, want.high)
                    same += match
                    if not match:
                        print(f"  differs: {case.label} {strategy} seed {seed}: cli {got} "
                              f"replica {want}", file=sys.stderr)
                agree += same
                total += seeds
                rows.append(
                    f"| {case.label} | {strategy} | {pct(cli.right, cli.runs)} | "
                    f"{pct(sim.right, sim.runs)} | {num(statistics.mean(cli.tests))} | "
                    f"{num(statistics.mean(sim.tests))} | {same}/{seeds} | "
                    f"{cli.seconds / max(1, cli.runs):.1f}s |"
                )
                print(rows[-1], file=sys.stderr)
    return rows, agree, total


# --- the report --------------------------------------------------------------------------------


def pct(a: int, b: int) -> str:
    return f"{100.0 * a / b:.1f}%" if b else "—"


def num(x: float) -> str:
    return f"{x:.1f}"


def render(figures, seeds: int, cli_rows: list[str], cli_seeds: int, agree: int, total: int,
           wall: float) -> str:
    out = [SECTION, ""]
    out.append(
        f"`python bench/flaky_bench.py` ({datetime.date.today().isoformat()}, Python "
        f"{platform.python_version()}, {wall / 60:.1f} min on this machine). A test that lies: "
        "on a good commit it fails with probability p, on a bad one it passes with probability "
        f"q, at every run. {seeds} seeds per row (one culprit and, where said, one set of "
        "unbuildable clusters per seed, the same for every strategy). Strategies: `plain` = "
        "`--flaky off`; `repeat3` = `--flaky off --repeat 3`; `default` = no option (`--flaky "
        "detect`); `auto` = `--flaky auto` (confidence 0.99, its default); `auto95` = `--flaky "
        "auto --confidence 0.95`. "
        "*Right*: ends `found` with the planted culprit. *Tests*: every test execution "
        "(endpoints, search, confirmation, repeats). *Builds*: steps that built (the command "
        "recipe caches nothing; with a cache, re-tests of a commit cost no build). "
        "*Calibration*: of the answers with confidence `high` (posterior >= the threshold, or a "
        "classic answer whose confirmation agreed and that no verdict contradicts), "
        "the share that is right."
    )
    out.append("")
    out.append("| case | strategy | right | mean tests | max tests | mean builds | high | right among high |")
    out.append("|------|----------|-------|-----------|-----------|-------------|------|------------------|")
    for (case, strategy), fig in figures.items():
        out.append(
            f"| {case.label} | {strategy} | {pct(fig.right, fig.runs)} | "
            f"{num(statistics.mean(fig.tests))} | {max(fig.tests)} | "
            f"{num(statistics.mean(fig.builds))} | {pct(fig.high, fig.runs)} | "
            f"{pct(fig.high_right, fig.high)} |"
        )
    out.append("")
    out += targets(figures)
    if cli_rows:
        out.append("")
        out.append(
            f"End to end: the real CLI (`tritonbisect run` on real git repositories, a bash "
            f"test drawing the same verdicts) against the replica on the first {cli_seeds} "
            f"seeds: **{agree}/{total} sessions identical** (same status, culprit, number of "
            "tests and confidence)."
        )
        out.append("")
        out.append("| case | strategy | right (CLI) | right (replica) | tests (CLI) | tests (replica) | identical | CLI s/session |")
        out.append("|------|----------|-------------|-----------------|-------------|-----------------|-----------|---------------|")
        out += cli_rows
    return "\n".join(out) + "\n"


def targets(figures) -> list[str]:
    lines = ["Targets:"]
    for n in (64, 1000):
        key = {s: figures.get((Case(n, 0.1), s)) for s in STRATEGIES}
        if not all(key.values()):
            continue
        rep = statistics.mean(key["repeat3"].tests)
        for s in ("auto", "auto95"):
            fig = key[s]
            right = fig.right / fig.runs
            mean = statistics.mean(fig.tests)
            ok = right >= 0.99 and mean < rep
            lines.append(
                f"- N = {n}, p = 0.1, `{s}`: {right:.1%} right (target >= 99%) with "
                f"{mean:.1f} tests against {rep:.1f} for `--repeat 3`: "
                f"{'met' if ok else 'NOT met'}"
            )
    high = sum(f.high for (c, s), f in figures.items() if s.startswith("auto"))
    high_right = sum(f.high_right for (c, s), f in figures.items() if s.startswith("auto"))
    lines.append(
        f"- Calibration of `--flaky auto` over every case: {high_right}/{high} answers with "
        f"confidence high are right ({pct(high_right, high)})."
    )
    return lines


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seeds", type=int, default=200)
    ap.add_argument("--cli-seeds", type=int, default=12, help="seeds run end to end by the CLI (0: none)")
    ap.add_argument("--no-write", action="store_true", help="print, do not write bench/RESULTS.md")
    ap.add_argument("--quick", action="store_true", help="only N = 64, p = 0.1 (a smoke run)")
    args = ap.parse_args(argv)
    t0 = time.perf_counter()
    cases = [Case(64, 0.1)] if args.quick else CASES
    figures = simulate(cases, args.seeds)
    cli_rows, agree, total = ([], 0, 0)
    if args.cli_seeds:
        cli_cases = [Case(64, 0.1), Case(64, 0.1, broken=0.15)][: 1 if args.quick else 2]
        cli_rows, agree, total = compare_cli(cli_cases, args.cli_seeds)
    text = render(figures, args.seeds, cli_rows, args.cli_seeds, agree, total,
                  time.perf_counter() - t0)
    if args.no_write:
        print(text)
    else:
        write_section(SECTION, text, RESULTS)
        print(f"wrote {SECTION!r} in {RESULTS}", file=sys.stderr)
    return 0 if agree == total else 1


if __name__ == "__main__":
    sys.exit(main())
