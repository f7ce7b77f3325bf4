"""Flake-aware search: a posterior over the first bad commit, and the next tests by information.

Pure like `search.py` (no I/O, nothing of ours but `search`), so it is tested with plain lists.

Model
-----
The culprit C is one commit of `Candidates.order` (uniform prior). Commit x is truly bad iff C is
one of its ancestors-or-self. A test's verdict is wrong with a fixed probability per run:

    P(verdict bad  | x truly good) = p     (a false failure: atomics, timing, a driver hiccup)
    P(verdict good | x truly bad)  = q     (a false pass)

Given `--flake-rate p[,q]` the rates are fixed. Otherwise they are learned: p ~ Beta(a, b) and
q ~ Beta(a, b) are integrated out exactly, so for a hypothesis C = c with A false failures, B
true passes, Q false passes and D true failures among all verdicts,

    P(verdicts | c) = Beta(A + a, B + b) / Beta(a, b)  *  Beta(Q + a, D + b) / Beta(a, b)

Every verdict counts, repeats of a commit included, and a verdict on a commit outside the set
(the good endpoint, run several times under `--flaky auto`) is a verdict on a good commit under
every hypothesis: it informs p alone. A person's mark (`tritonbisect mark`) is not a test run:
it is a constraint (a commit marked good excludes its ancestors-or-self, one marked bad every
other commit).

Choosing tests
--------------
The next test is the commit x whose verdict Y tells most about C: the mutual information

    I(C; Y_x) = h(sum_c w_c pi_c(x)) - sum_c w_c h(pi_c(x)),   pi_c(x) = P(Y_x = bad | c, data)

(h the binary entropy). Re-testing a commit is a candidate like any other and often the best.
For k free workers the batch is chosen greedily: each next point maximises the information it
adds to the points already chosen or in flight (their unknown verdicts are enumerated). As in
the classic search, a commit with a cached build whose gain is within `CACHED_TOLERANCE` of the
best is preferred (its build is free) and a commit near known-untestable ones is discounted by
its risk of not building.

Stopping
--------
Commits that no testable commit can tell apart (a run of untestable commits and the testable
commit after it) form one class. When one class holds >= `confidence` of the mass, the search
stops: a single commit is the culprit (Found), a larger class is Inconclusive with that set.
With `tests_left` spent, it stops with the smallest set of commits holding `confidence` of the
mass. The probability stated for an answer is exactly this posterior mass: "high" confidence
means P(culprit | every verdict) >= the threshold, and bench/flaky_bench.py measures how often
such answers are right (calibration).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass

from tritonbisect.bisect.search import (
    Candidates,
    Found,
    Inconclusive,
    TestNext,
    Wait,
    ancestry,
    skip_risk,
)

Action = TestNext | Found | Inconclusive | Wait

# Beta(a, b) prior of each learned error rate: mean ~0.08 and worth ~3 runs, so a few runs at
# the endpoints or a contradiction in the search outweigh it (bench/flaky_bench.py tunes it).
DEFAULT_PRIOR = (0.3, 3.2)
# The error rate of a "deterministic" test (a bit-flip, a broken machine): never exactly 0.
DETERMINISTIC_RATE = 1e-3
# A cached commit whose information is within this fraction of the best is taken instead
# (quality 0.94 is the classic search's ±2Δ/7 window).
CACHED_TOLERANCE = 0.94
# Below this many bits no test is worth running.
MIN_GAIN = 1e-4
# Fixed rates are kept inside (RATE_FLOOR, 1 - RATE_FLOOR): a verdict is never impossible.
RATE_FLOOR = 1e-4
# More joint outcomes than this (2**8) and the batch's later points are chosen alone.
_MAX_ENUM = 8
# On a DAG a batch is chosen among this many commits, the most informative alone.
_DAG_CANDIDATES = 96


@dataclass(frozen=True)
class FlakeModel:
    """How often the test lies. `p`/`q` fixed (--flake-rate), or None: learned from verdicts."""

    p: float | None = None
    q: float | None = None
    prior: tuple[float, float] = DEFAULT_PRIOR
    # Learned rates only: the prior probability that the test is deterministic (errs at
    # DETERMINISTIC_RATE) rather than flaky at Beta(prior) rates. 0 once flakiness is known.
    trust: float = 0.0

    def __post_init__(self) -> None:
        if not 0.0 <= self.trust < 1.0:
            raise ValueError("trust must be in [0, 1)")
        for name, rate in (("p", self.p), ("q", self.q)):
            if rate is not None and not 0.0 <= rate < 0.5:
                raise ValueError(f"flake rate {name} must be in [0, 0.5), not {rate}")
        if self.prior[0] <= 0 or self.prior[1] <= 0:
            raise ValueError("Beta prior parameters must be positive")

    @property
    def fixed(self) -> bool:
        return self.p is not None


# --------------------------------------------------------------------------------------------
# The posterior.


def _lbeta(a: float, b: float) -> float:
    return math.lgamma(a) + math.lgamma(b) - math.lgamma(a + b)


def _h(p: float) -> float:
    if p <= 0.0 or p >= 1.0:
        return 0.0
    return -(p * math.log2(p) + (1.0 - p) * math.log2(1.0 - p))


def _plogp(x: float) -> float:
    return x * math.log2(x) if x > 0.0 else 0.0


class Posterior:
    """P(culprit = order[i] | verdicts), with each hypothesis' predictive error rates."""

    def __init__(
        self,
        cands: Candidates,
        counts: Mapping[str, tuple[int, int]],
        model: FlakeModel,
        marks: Mapping[str, str],
    ) -> None:
        idx = ancestry(cands)
        self.cands = cands
        self.idx = idx
        n = idx.n
        self.n = n
        g = [0] * n
        b = [0] * n
        out_g = out_b = 0
        for commit, (good, bad) in counts.items():
            i = idx.pos.get(commit)
            if i is None:
                out_g += int(good)  # outside the set: an ancestor of good, good everywhere
                out_b += int(bad)
            else:
                g[i] += int(good)
                b[i] += int(bad)
        self.tests = out_g + out_b + sum(g) + sum(b)
        # Per hypothesis j: false fails A, true passes B (on truly good commits), false passes
        # Q and true fails D (on truly bad ones).
        tot_g, tot_b = sum(g), sum(b)
        Q = [0] * n
        D = [0] * n
        if idx.linear:
            qs, ds = tot_g, tot_b
            for j in range(n):
                Q[j], D[j] = qs, ds
                qs -= g[j]
                ds -= b[j]
        else:
            for x in range(n):
                if g[x] or b[x]:
                    for c in _bits(idx.anc(x)):
                        Q[c] += g[x]
                        D[c] += b[x]
        allowed = self._allowed(marks)
        a0, b0 = model.prior
        logw = [-math.inf] * n
        pc = [0.0] * n
        qc = [0.0] * n
        trust = 0.0 if model.fixed else model.trust
        if trust > 0.0:
            ld_err, ld_ok = math.log(DETERMINISTIC_RATE), math.log1p(-DETERMINISTIC_RATE)
            log_trust, log_flaky = math.log(trust), math.log1p(-trust)
        if model.fixed:
            p = min(max(float(model.p or 0.0), RATE_FLOOR), 1 - RATE_FLOOR)
            q = min(max(float(model.q or 0.0), RATE_FLOOR), 1 - RATE_FLOOR)
            lp, l1p, lq, l1q = math.log(p), math.log1p(-p), math.log(q), math.log1p(-q)
        for j in range(n):
            A = out_b + tot_b - D[j]
            B = out_g + tot_g - Q[j]
            if model.fixed:
                pc[j], qc[j] = p, q
                if allowed[j]:
                    logw[j] = A * lp + B * l1p + Q[j] * lq + D[j] * l1q
            else:
                pc[j] = (A + a0) / (A + B + a0 + b0)
                qc[j] = (Q[j] + a0) / (Q[j] + D[j] + a0 + b0)
                lf = _lbeta(A + a0, B + b0) + _lbeta(Q[j] + a0, D[j] + b0) - 2 * _lbeta(a0, b0)
                if trust > 0.0:
                    # mixture: a deterministic test (errs at DETERMINISTIC_RATE) or a flaky one
                    ld = (A + Q[j]) * ld_err + (B + D[j]) * ld_ok + log_trust
                    lf += log_flaky
                    top_ = max(ld, lf)
                    r = math.exp(ld - top_) / (math.exp(ld - top_) + math.exp(lf - top_))
                    pc[j] = r * DETERMINISTIC_RATE + (1.0 - r) * pc[j]
                    qc[j] = r * DETERMINISTIC_RATE + (1.0 - r) * qc[j]
                    lf = top_ + math.log(math.exp(ld - top_) + math.exp(lf - top_))
                if allowed[j]:
                    logw[j] = lf
        top = max(logw)
        if top == -math.inf:
            raise ValueError("the marks exclude every commit: they contradict each other")
        w = [math.exp(v - top) if v != -math.inf else 0.0 for v in logw]
        total = sum(w)
        self.w = [x / total for x in w]
        self.pc = pc
        self.qc = qc
        self.model = model

    def _allowed(self, marks: Mapping[str, str]) -> list[bool]:
        n, idx = self.n, self.idx
        mask = (1 << n) - 1
        for commit, verdict in marks.items():
            i = idx.pos.get(commit)
            if i is None or verdict not in ("good", "bad"):
                continue
            anc = idx.anc(i)
            mask &= ~anc if verdict == "good" else anc
        return [bool(mask >> j & 1) for j in range(n)]

    # summaries ---------------------------------------------------------------------------

    def prob(self, commit: str) -> float:
        i = self.idx.pos.get(commit)
        return self.w[i] if i is not None else 0.0

    def p_bad(self, commit: str) -> float:
        """P(commit is truly bad): the mass of its ancestors-or-self."""
        i = self.idx.pos.get(commit)
        if i is None:
            return 0.0
        if self.idx.linear:
            return sum(self.w[: i + 1])
        return sum(self.w[c] for c in _bits(self.idx.anc(i)))

    def rates(self) -> tuple[float, float]:
        """Posterior means of p and q."""
        return (
            sum(w * p for w, p in zip(self.w, self.pc, strict=True)),
            sum(w * q for w, q in zip(self.w, self.qc, strict=True)),
        )

    def entropy(self) -> float:
        return -sum(_plogp(w) for w in self.w)

    def top(self, k: int = 5) -> list[tuple[str, float]]:
        ranked = sorted(range(self.n), key=lambda i: (-self.w[i], i))[:k]
        return [(self.idx.order[i], self.w[i]) for i in ranked]

    def credible_set(self, mass: float) -> tuple[str, ...]:
        """The fewest commits holding >= mass, in topological order."""
        chosen: list[int] = []
        acc = 0.0
        for i in sorted(range(self.n), key=lambda i: (-self.w[i], i)):
            if acc >= mass or self.w[i] == 0.0:
                break
            chosen.append(i)
            acc += self.w[i]
        return tuple(self.idx.order[i] for i in sorted(chosen))

    def summary(self, k: int = 5) -> dict:
        """JSON-able: the top candidates with probabilities, the error rates, the entropy."""
        p, q = self.rates()
        return {
            "top": [{"commit": c, "probability": round(w, 6)} for c, w in self.top(k)],
            "p": round(p, 4),
            "q": round(q, 4),
            "rates": "fixed" if self.model.fixed else "learned",
            "entropy_bits": round(self.entropy(), 4),
            "verdicts": self.tests,
        }

    # the hypotheses' verdict probabilities at a commit --------------------------------------

    def pi(self, x: int) -> list[float]:
        """P(verdict bad at order[x] | C = c) for every c."""
        if self.idx.linear:
            return [1.0 - q for q in self.qc[: x + 1]] + self.pc[x + 1 :]
        anc = self.idx.anc(x)
        return [
            (1.0 - self.qc[c]) if anc >> c & 1 else self.pc[c]
            for c in range(self.n)
        ]


def _bits(mask: int):
    while mask:
        low = mask & -mask
        yield low.bit_length() - 1
        mask ^= low


def posterior(
    cands: Candidates,
    counts: Mapping[str, tuple[int, int]],
    *,
    model: FlakeModel | None = None,
    marks: Mapping[str, str] | None = None,
) -> Posterior:
    """The posterior over the culprit. `counts`: commit -> (good verdicts, bad verdicts)."""
    return Posterior(cands, counts, model or FlakeModel(), marks or {})


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
            for c in _bits(idx.anc(x)):
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
        self._cond_diff = [w[c] * (_h(1.0 - qc[c]) - _h(pc[c])) for c in range(n)]
        self._cond_base = sum(w[c] * _h(pc[c]) for c in range(n))
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
        return {x: sum(f[c] for c in _bits(idx.anc(x))) for x in self.cand}

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
            h_prev -= _plogp(mass)
            base = sum(ui * p for ui, p in zip(u, pc, strict=True))
            slope = self._anc_sums([ui * s for ui, s in zip(u, self._slope, strict=True)])
            for x in self.cand:
                bad = min(max(base + slope[x], 0.0), mass)
                joint[x] -= _plogp(bad) + _plogp(mass - bad)
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
) -> Action:
    """Test some commits (re-tests allowed), or the culprit, or a set that holds it, or wait.

    `counts` maps commits to (good verdicts, bad verdicts); `skipped` commits cannot be tested
    (they do not build); `marks` are a person's verdicts (constraints). `tests_left`: the test
    budget still open (None: no budget); at 0 the search stops with what it knows.
    """
    if not 0.5 <= confidence < 1.0:
        raise ValueError("confidence must be in [0.5, 1)")
    marks = dict(marks or {})
    post = posterior(cands, counts, model=model, marks=marks)
    idx, n = post.idx, post.n
    skip_i = {idx.pos[c] for c in skipped if c in idx.pos}
    marked = {idx.pos[c] for c in marks if c in idx.pos}
    testable = [j not in skip_i and j not in marked for j in range(n)]
    classes = _classes(post, testable)
    best_class = max(classes, key=lambda grp: sum(post.w[j] for j in grp))
    if sum(post.w[j] for j in best_class) >= confidence:
        return _decide([idx.order[j] for j in best_class])
    if tests_left is not None and tests_left <= 0:
        return _decide(list(post.credible_set(confidence)))

    flying = [idx.pos[c] for c in in_flight if c in idx.pos]
    cand = [j for j in range(n) if testable[j] and j not in flying]
    k = int(workers)
    if tests_left is not None:
        k = min(k, tests_left)
    if not cand or k < 1:
        return Wait() if flying or k < 1 else _decide(list(post.credible_set(confidence)))

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
    best_first = 0.0
    for _ in range(k):
        gains = gain.gains(flying + chosen)
        best_score, best = 0.0, None
        best_cached_gain, best_cached = 0.0, None
        for x in cand:
            if x in chosen:
                continue
            gx = gains[x]
            free_build = x in cached_i
            score = gx if free_build or risk is None else gx * (1.0 - risk[x])
            if score > best_score:
                best_score, best = score, x
            if free_build and gx > best_cached_gain:
                best_cached_gain, best_cached = gx, x
        if best is None or best_score < MIN_GAIN:
            break
        if best_cached is not None and best_cached_gain >= CACHED_TOLERANCE * best_score:
            best = best_cached
        if not chosen:
            best_first = max(best_score, MIN_GAIN)
        chosen.append(best)
    if not chosen:
        return Wait() if flying else _decide(list(post.credible_set(confidence)))
    return TestNext(
        commits=tuple(idx.order[j] for j in chosen),
        remaining=len(post.credible_set(0.99)),
        steps_left=_steps_left(post, confidence, best_first, max(1, k + len(flying))),
    )


def _decide(commits: list[str]) -> Found | Inconclusive:
    if len(commits) == 1:
        return Found(commits[0])
    return Inconclusive(tuple(commits))


def _steps_left(post: Posterior, confidence: float, gain: float, parallel: int) -> int:
    """Rounds still needed, roughly: the bits left (and those of the confidence margin) over
    the bits the best test brings now."""
    bits = post.entropy() + math.log2(1.0 / (1.0 - confidence))
    return max(1, math.ceil(bits / max(gain, 0.05) / parallel))
