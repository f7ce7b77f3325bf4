"""The flake-aware search's next step: which commits to test, and when to stop.

Pure like `search.py` and `bayes.py` (the posterior it reads); tested with plain lists.

Choosing tests
--------------
The next test is the commit x whose verdict Y tells most about C: the mutual information

    I(C; Y_x) = h(sum_c w_c pi_c(x)) - sum_c w_c h(pi_c(x)),   pi_c(x) = P(Y_x = bad | c, data)

(h the binary entropy). Re-testing a commit is a candidate like any other and often the best.
For k free workers the batch is chosen greedily: each next point maximises the information it
adds to the points already chosen or in flight (their unknown verdicts are enumerated). On a
linear range with nothing in flight, the batch that splits the mass into k + 1 equal parts is
taken instead when it carries more joint information (greedy choice alone gives k = 2 workers
1.5 bits a round where log2(3) is possible). As in
the classic search, a commit with a cached build whose gain is within `CACHED_TOLERANCE` of the
best is preferred (its build is free) and a commit near known-untestable ones is discounted by
its risk of not building.

Stopping
--------
Commits that no testable commit can tell apart (a run of untestable commits and the testable
commit after it) form one class; a commit a person marked good or bad is not tested again but
bounds a class like a tested one (its verdict is known). When one class holds >= `confidence` of the mass, the search
stops: a single commit is the culprit (Found), a larger class is Inconclusive with that set.
With `tests_left` spent, it stops with the smallest set of commits holding `confidence` of the
mass (with a hint's prior, the posterior under a uniform prior: the hint chooses the tests,
the evidence alone the answer). The probability stated for an answer is exactly this posterior mass: "high" confidence
means P(culprit | every verdict) >= the threshold, and bench/flaky_bench.py measures how often
such answers are right (calibration).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from collections.abc import Set as AbstractSet

from tritonbisect.search.bayes import (
    FlakeModel,
    Posterior,
    binary_entropy,
    bits_of,
    plogp,
    posterior,
)
from tritonbisect.search.classic import (
    Candidates,
    Found,
    Inconclusive,
    TestNext,
    Wait,
    skip_risk,
)

Action = TestNext | Found | Inconclusive | Wait

# A cached commit whose information is within this fraction of the best is taken instead
# (quality 0.94 is the classic search's ±2Δ/7 window).
CACHED_TOLERANCE = 0.94
# Below this many bits no test is worth running.
MIN_GAIN = 1e-4
# More joint outcomes than this (2**8) and the batch's later points are chosen alone.
_MAX_ENUM = 8
# On a DAG a batch is chosen among this many commits, the most informative alone.
_DAG_CANDIDATES = 96


# --------------------------------------------------------------------------------------------
# Classes of indistinguishable culprits.


def _classes(post: Posterior, testable: list[bool]) -> list[list[int]]:
    """Group the hypotheses no testable commit can tell apart (same testable descendants)."""
    idx, n = post.idx, post.n
    if idx.linear:
        groups: list[list[int]] = []
        run: list[int] = []
        for j in range(n):
            run.append(j)
            if testable[j] or j == n - 1:
                groups.append(run)
                run = []
        return groups
    tmask = sum(1 << x for x in range(n) if testable[x])
    sig: dict[int, list[int]] = {}
    desc = [0] * n
    for x in range(n):
        if tmask >> x & 1:
            for c in bits_of(idx.anc(x)):
                desc[c] |= 1 << x
    for c in range(n):
        sig.setdefault(desc[c], []).append(c)
    return list(sig.values())


# --------------------------------------------------------------------------------------------
# Information of a batch.


class _Gain:
    """Marginal information of one more test at each commit, given the points already chosen."""

    def __init__(self, post: Posterior, cand: list[int]) -> None:
        self.post = post
        self.cand = cand
        self.linear = post.idx.linear
        n = post.n
        w, pc, qc = post.w, post.pc, post.qc
        # sum_c w_c h(pi_c(x)) = sum_{c in anc(x)} w_c (h(1-q_c) - h(p_c)) + sum_c w_c h(p_c)
        self._cond_diff = [w[c] * (binary_entropy(1.0 - qc[c]) - binary_entropy(pc[c])) for c in range(n)]
        self._cond_base = sum(w[c] * binary_entropy(pc[c]) for c in range(n))
        self._cond = self._anc_sums(self._cond_diff)
        self._slope = [1.0 - qc[c] - pc[c] for c in range(n)]
        self._pi_cache: dict[int, list[float]] = {}

    def _anc_sums(self, f: Sequence[float]) -> dict[int, float]:
        """sum_{c in anc(x)} f[c] for every candidate x."""
        if self.linear:
            out: dict[int, float] = {}
            acc = 0.0
            want = set(self.cand)
            for x in range(self.post.n):
                acc += f[x]
                if x in want:
                    out[x] = acc
            return out
        idx = self.post.idx
        return {x: sum(f[c] for c in bits_of(idx.anc(x))) for x in self.cand}

    def _pi(self, x: int) -> list[float]:
        if x not in self._pi_cache:
            self._pi_cache[x] = self.post.pi(x)
        return self._pi_cache[x]

    def gains(self, chosen: Sequence[int]) -> dict[int, float]:
        """I(C; Y_x | Y_chosen unknown) added by x, for every candidate x."""
        post = self.post
        branches = [post.w]
        for s in chosen[:_MAX_ENUM]:
            pis = self._pi(s)
            nxt = []
            for u in branches:
                nxt.append([ui * pi for ui, pi in zip(u, pis, strict=True)])
                nxt.append([ui * (1.0 - pi) for ui, pi in zip(u, pis, strict=True)])
            branches = nxt
        joint = {x: 0.0 for x in self.cand}
        h_prev = 0.0
        pc = post.pc
        for u in branches:
            mass = sum(u)
            if mass <= 0.0:
                continue
            h_prev -= plogp(mass)
            base = sum(ui * p for ui, p in zip(u, pc, strict=True))
            slope = self._anc_sums([ui * s for ui, s in zip(u, self._slope, strict=True)])
            for x in self.cand:
                bad = min(max(base + slope[x], 0.0), mass)
                joint[x] -= plogp(bad) + plogp(mass - bad)
        return {
            x: joint[x] - h_prev - (self._cond_base + self._cond[x]) for x in self.cand
        }


# --------------------------------------------------------------------------------------------
# The next step.


def next_step(
    cands: Candidates,
    counts: Mapping[str, tuple[int, int]],
    *,
    model: FlakeModel | None = None,
    marks: Mapping[str, str] | None = None,
    skipped: AbstractSet[str] = frozenset(),
    workers: int = 1,
    in_flight: AbstractSet[str] = frozenset(),
    cached: AbstractSet[str] = frozenset(),
    confidence: float = 0.95,
    tests_left: int | None = None,
    prior: Sequence[float] | None = None,
) -> Action:
    """Test some commits (re-tests allowed), or the culprit, or a set that holds it, or wait.

    `counts` maps commits to (good verdicts, bad verdicts); `skipped` commits cannot be tested
    (they do not build); `marks` are a person's verdicts (constraints). `tests_left`: the test
    budget still open (None: no budget); at 0 the search stops with what it knows. `prior`:
    P(culprit = order[i]) before any test (a hint, search/prior.py; None: uniform): it chooses
    the tests; when to stop and what to answer are decided on the evidence alone (a uniform
    prior), so a misleading hint costs tests, never a wrong answer.
    """
    if not 0.5 <= confidence < 1.0:
        raise ValueError("confidence must be in [0.5, 1)")
    marks = dict(marks or {})
    post = posterior(cands, counts, model=model, marks=marks, prior=prior)
    # the answer stands on the evidence alone: a prior steers the tests, never the stop
    proof = post if prior is None else posterior(cands, counts, model=model, marks=marks)
    idx, n = post.idx, post.n
    skip_i = {idx.pos[c] for c in skipped if c in idx.pos}
    marked = {idx.pos[c] for c in marks if c in idx.pos}
    # a commit marked good or bad is never tested again, yet it tells hypotheses apart as a
    # verdict does: it bounds a class (a skip mark is untestable like a commit that fails to build)
    known = {idx.pos[c] for c, v in marks.items() if c in idx.pos and v in ("good", "bad")}
    telling = [j not in skip_i and (j not in marked or j in known) for j in range(n)]
    testable = [j not in skip_i and j not in marked for j in range(n)]
    classes = _classes(proof, telling)
    best_class = max(classes, key=lambda grp: sum(proof.w[j] for j in grp))
    if sum(proof.w[j] for j in best_class) >= confidence:
        # a commit the marks exclude holds no mass: it is not part of the answer
        return _decide([idx.order[j] for j in best_class if proof.w[j] > 0.0])
    if tests_left is not None and tests_left <= 0:
        return _decide(list(proof.credible_set(confidence)))

    flying = [idx.pos[c] for c in in_flight if c in idx.pos]
    cand = [j for j in range(n) if testable[j] and j not in flying]
    k = int(workers)
    if tests_left is not None:
        k = min(k, tests_left)
    if not cand or k < 1:
        return Wait() if flying or k < 1 else _decide(list(proof.credible_set(confidence)))

    cached_i = {idx.pos[c] for c in cached if c in idx.pos}
    tested = {idx.pos[c] for c, (g, b) in counts.items() if c in idx.pos and g + b > 0}
    risk = skip_risk(cands, skipped, {idx.order[j] for j in tested | cached_i})
    if not idx.linear and len(cand) > _DAG_CANDIDATES:
        # sums over ancestor sets cost O(n) each: keep the commits that are best alone
        alone = _Gain(post, cand).gains([])
        keep = sorted(cand, key=lambda x: -alone[x])[:_DAG_CANDIDATES]
        cand = sorted(set(keep) | ({x for x in cand if x in cached_i and alone[x] > MIN_GAIN}))
    gain = _Gain(post, cand)
    chosen: list[int] = []
    chosen_worth = 0.0
    best_first = 0.0
    for _ in range(k):
        gains = gain.gains(flying + chosen)
        best_score, best = 0.0, None
        best_cached_gain, best_cached = 0.0, None
        for x in cand:
            if x in chosen:
                continue
            gx = gains[x]
            score = _worth(gx, x, risk, cached_i)
            if score > best_score:
                best_score, best = score, x
            if x in cached_i and gx > best_cached_gain:
                best_cached_gain, best_cached = gx, x
        if best is None or best_score < MIN_GAIN:
            break
        if not chosen:
            best_first = max(best_score, MIN_GAIN)
        if best_cached is not None and best_cached_gain >= CACHED_TOLERANCE * best_score:
            best, best_score = best_cached, best_cached_gain
        chosen.append(best)
        chosen_worth += best_score
    if not chosen:
        return Wait() if flying else _decide(list(proof.credible_set(confidence)))
    if len(chosen) > 1 and idx.linear and not flying:
        even = _quantile_batch(post, cand, len(chosen))
        if len(even) == len(chosen) and _batch_worth(gain, even, risk, cached_i) > chosen_worth * 1.001:
            chosen = even
    return TestNext(
        commits=tuple(idx.order[j] for j in chosen),
        remaining=len(proof.credible_set(0.99)),
        steps_left=_steps_left(post, confidence, best_first, max(1, k + len(flying))),
    )


def _quantile_batch(post: Posterior, cand: list[int], k: int) -> list[int]:
    """k commits splitting the mass into k + 1 equal parts (linear history): the batch a
    noiseless search wants, which greedy choice misses (for k = 2 it takes the middle, then a
    quarter point: 1.5 bits a round instead of log2(3))."""
    picks: list[int] = []
    acc, j = 0.0, 0
    targets = [(i + 1) / (k + 1) for i in range(k)]
    cand_set = set(cand)
    for x in range(post.n):
        acc += post.w[x]
        while j < k and acc >= targets[j]:
            if x in cand_set and x not in picks:
                picks.append(x)
            j += 1
    return picks


def _worth(gain: float, x: int, risk: list[float] | None, cached: AbstractSet[int]) -> float:
    """A test's information, discounted by its risk of not building unless its build is cached."""
    return gain if risk is None or x in cached else gain * (1.0 - risk[x])


def _batch_worth(gain: _Gain, batch: list[int], risk: list[float] | None,
                 cached: AbstractSet[int]) -> float:
    """The batch's joint information, point by point as the greedy choice counts it."""
    return sum(_worth(gain.gains(batch[:i])[x], x, risk, cached) for i, x in enumerate(batch))


def _decide(commits: list[str]) -> Found | Inconclusive:
    if len(commits) == 1:
        return Found(commits[0])
    return Inconclusive(tuple(commits))


def _steps_left(post: Posterior, confidence: float, gain: float, parallel: int) -> int:
    """Rounds still needed, roughly: the bits left (and those of the confidence margin) over
    the bits the best test brings now."""
    bits = post.entropy() + math.log2(1.0 / (1.0 - confidence))
    return max(1, math.ceil(bits / max(gain, 0.05) / parallel))
