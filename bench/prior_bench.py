#!/usr/bin/env python3
"""The pass hint: builds with the hint right, with the hint wrong, and without a hint.

    python bench/prior_bench.py                 # 200 seeded histories per case; writes bench/RESULTS.md
    python bench/prior_bench.py --seeds 40 --no-write

A history is N commits between two tags (N = 600 by default), about 5% of them touching the
hinted pass's files (scattered at random), one culprit. "right": the culprit is one of those
commits; "wrong": it is one of the others (a misleading hint). Cases: a deterministic test;
the same with an unbuildable cluster (25 commits in a row that do not build, never the
culprit); a flaky test (p = 0.1 false failures) under `--flaky auto`.

Strategies, all driven through the pure search (search/classic.py, bayes.py, bayes_step.py)
as the session drives them (one worker, the endpoints known; a re-test of a commit already
built costs no build):

    classic      no hint, --flaky detect on a deterministic test: bisection, then the
                 confirmation of the culprit and its parent
    bayes        no hint, the Bayesian search (its deterministic limit, or --flaky auto)
    hint         --prefer-pass: the Bayesian search from the prior of search/prior.py
    bayesect10   git_bayesect's file-based prior as its README shows it
                 (`priors_from_filenames`: weight 10 for a commit touching the files, else 1),
                 in the same search

Builds = distinct commits built by the search (endpoints not counted: every strategy
builds them). Right = the answer is the planted culprit.
"""

from __future__ import annotations

import argparse
import datetime
import platform
import random
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from results_md import write_section  # noqa: E402
from tritonbisect.search import bayes, bayes_step, prior
from tritonbisect.search import classic as search
from tritonbisect.session.flakiness import CLASSIC_TRUST, ENDPOINT_RUNS  # noqa: E402

SECTION = "## Pass hint: --prefer-pass builds, hint right / wrong / none"
STRATEGIES = ("classic", "bayes", "hint", "bayesect10")


def make_history(rng: random.Random, n: int, share: float, where: str, cluster: int) -> dict:
    order = [f"c{i:04d}" for i in range(n)]  # order[-1] is the bad endpoint
    m = max(1, round(share * n))
    hinted = set(rng.sample(range(n - 1), m))
    skipped: set[int] = set()
    if cluster:
        start = rng.randrange(5, n - cluster - 5)
        skipped = set(range(start, start + cluster))
    pool = [i for i in range(n) if (i in hinted) == (where == "right") and i not in skipped
            and i - 1 not in skipped]
    culprit = rng.choice(pool)
    return {"order": order, "hinted": {order[i] for i in hinted}, "culprit": culprit,
            "skipped": {order[i] for i in skipped}}


def verdict(h: dict, commit: str, rng: random.Random, p: float) -> str:
    i = h["order"].index(commit)
    if commit in h["skipped"]:
        return "skip"
    bad = i >= h["culprit"]
    if not bad and rng.random() < p:
        return "bad"
    return "bad" if bad else "good"


def run_classic(h: dict, rng: random.Random, p: float) -> tuple[int, bool]:
    cands = search.Candidates.linear(h["order"])
    verdicts: dict[str, str] = {h["order"][-1]: "bad"}
    built: set[str] = set()
    for _ in range(200):
        action = search.next_step(cands, verdicts, workers=1)
        if isinstance(action, search.TestNext):
            c = action.commits[0]
            built.add(c)
            verdicts[c] = verdict(h, c, rng, p)
            continue
        if isinstance(action, search.Found):
            i = h["order"].index(action.culprit)
            for c in (action.culprit, h["order"][i - 1] if i else None):
                if c is not None:
                    built.add(c)  # the confirmation: free when already built
            return len(built - {h["order"][-1]}), i == h["culprit"]
        return len(built - {h["order"][-1]}), False
    return len(built), False


def run_bayes(h: dict, rng: random.Random, p: float, weights: list[float] | None, flaky: bool) -> tuple[int, bool]:
    order = h["order"]
    cands = search.Candidates.linear(order)
    counts: dict[str, list[int]] = {}
    if flaky:  # --flaky auto: the endpoints run 3 times each
        counts["good-endpoint"] = [sum(1 for _ in range(ENDPOINT_RUNS) if rng.random() >= p), 0]
        counts["good-endpoint"][1] = ENDPOINT_RUNS - counts["good-endpoint"][0]
        counts[order[-1]] = [0, ENDPOINT_RUNS]
        model = bayes.FlakeModel()
        confidence = 0.99
    else:
        counts[order[-1]] = [0, 1]
        model = bayes.FlakeModel(trust=CLASSIC_TRUST)
        confidence = 0.95
    skipped: set[str] = set()
    built: set[str] = set()
    budget = 6 * 10 + 10
    for tests in range(budget + 1):
        action = bayes_step.next_step(
            cands, {c: (g, b) for c, (g, b) in counts.items()}, model=model, skipped=skipped,
            workers=1, cached=frozenset(built), confidence=confidence, tests_left=budget - tests,
            prior=weights,
        )
        if isinstance(action, search.TestNext):
            c = action.commits[0]
            built.add(c)
            v = verdict(h, c, rng, p)
            if v == "skip":
                skipped.add(c)
            else:
                counts.setdefault(c, [0, 0])[0 if v == "good" else 1] += 1
            continue
        right = isinstance(action, search.Found) and order.index(action.culprit) == h["culprit"]
        return len(built - {order[-1]}), right
    return len(built), False


def one(h: dict, strategy: str, seed: int, p: float, flaky: bool) -> tuple[int, bool]:
    rng = random.Random(seed * 7 + 1)
    n = len(h["order"])
    if strategy == "classic":
        return run_classic(h, rng, p)
    if strategy == "bayes":
        return run_bayes(h, rng, p, None, flaky)
    ratio = 10.0 if strategy == "bayesect10" else None
    weights = prior.prior_weights(h["order"], h["hinted"], ratio=ratio)
    assert len(weights) == n
    return run_bayes(h, rng, p, weights, flaky)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seeds", type=int, default=200)
    ap.add_argument("--commits", type=int, default=600)
    ap.add_argument("--share", type=float, default=0.05)
    ap.add_argument("--no-write", action="store_true")
    args = ap.parse_args()
    cases = [("deterministic", 0.0, 0, False), ("unbuildable cluster of 25", 0.0, 25, False),
             ("flaky p=0.1, --flaky auto", 0.1, 0, True)]
    t0 = time.time()
    rows = []
    for name, p, cluster, flaky in cases:
        strategies = [s for s in STRATEGIES if not (flaky and s == "classic")]
        for where in ("right", "wrong"):
            builds: dict[str, list[int]] = {s: [] for s in strategies}
            rights: dict[str, int] = {s: 0 for s in strategies}
            for seed in range(args.seeds):
                h = make_history(random.Random(seed * 1009 + (where == "wrong") * 97 + cluster), args.commits,
                                 args.share, where, cluster)
                for s in strategies:
                    b, ok = one(h, s, seed, p, flaky)
                    builds[s].append(b)
                    rights[s] += ok
            rows.append((name, where, builds, rights))
            line = " ".join(f"{s}={statistics.mean(builds[s]):.2f}({rights[s]})" for s in strategies)
            print(f"{name:30} {where:5} {line}", flush=True)
    seconds = time.time() - t0
    body = render(rows, args, seconds)
    print(body)
    if not args.no_write:
        write_section(SECTION, body)


def render(rows: list, args: argparse.Namespace, seconds: float) -> str:
    today = datetime.date.today().isoformat()
    out = [SECTION, "",
           f"`bench/prior_bench.py`, {today}, {platform.processor() or platform.machine()}, "
           f"{args.seeds} seeded histories per row, {args.commits} commits between the tags, "
           f"{args.share:.0%} of them touching the hinted pass (m = {round(args.share * args.commits)}); "
           f"hint ratio r = 1 + 3n/m = {prior.hint_ratio(args.commits, round(args.share * args.commits)):.0f} "
           f"(a wrong hint costs <= {prior.WRONG_HINT_BITS:g} bits). Builds: distinct commits the search "
           "built (mean, max), endpoints not counted; right: answers that are the planted culprit. "
           f"{seconds:.0f} s.", "",
           "The default is `classic` on a deterministic test, `bayes` under `--flaky auto`.",
           "",
           "| case | hint | classic (no hint) | bayes (no hint) | --prefer-pass | git_bayesect weight 10 | hint / bayes | hint - default, same history: mean, 95th pct, max |",
           "| --- | --- | --- | --- | --- | --- | --- | --- |"]
    for name, where, builds, rights in rows:
        cells = []
        for s in STRATEGIES:
            if s not in builds:
                cells.append("—")
                continue
            b = builds[s]
            cells.append(f"{statistics.mean(b):.2f} (max {max(b)}), {rights[s]}/{len(b)} right")
        ratio = statistics.mean(builds["hint"]) / max(statistics.mean(builds["bayes"]), 1e-9)
        base = statistics.mean(builds["classic"]) if "classic" in builds else statistics.mean(builds["bayes"])
        delta = statistics.mean(builds["hint"]) - base
        cells.append(f"{ratio:.2f}x")
        default = builds["classic"] if "classic" in builds else builds["bayes"]
        diffs = sorted(h - d for h, d in zip(builds["hint"], default, strict=True))
        p95 = diffs[min(len(diffs) - 1, int(0.95 * len(diffs)))]
        cells.append(f"{delta:+.2f}, {p95:+d}, {diffs[-1]:+d}")
        out.append(f"| {name} | {where} | " + " | ".join(cells) + " |")
    return "\n".join(out)


if __name__ == "__main__":
    main()
