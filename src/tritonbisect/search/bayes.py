"""Flake-aware search: a posterior over the first bad commit, and the next tests by information.

Pure like `search.py` (no I/O, nothing of ours but `search`), so it is tested with plain lists.

Model
-----
The culprit C is one commit of `Candidates.order` (uniform prior, or the one given: a hint about
where the culprit is, search/prior.py). Commit x is truly bad iff C is
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

The next tests and when to stop are chosen in `bayes_step.py`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from tritonbisect.search.classic import Candidates, ancestry

# Beta(a, b) prior of each learned error rate: mean ~0.08 and worth ~3 runs, so a few runs at
# the endpoints or a contradiction in the search outweigh it (bench/flaky_bench.py tunes it).
DEFAULT_PRIOR = (0.3, 3.2)
# The error rate of a "deterministic" test (a bit-flip, a broken machine): never exactly 0.
DETERMINISTIC_RATE = 1e-3
# Fixed rates are kept inside (RATE_FLOOR, 1 - RATE_FLOOR): a verdict is never impossible.
RATE_FLOOR = 1e-4


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


def binary_entropy(p: float) -> float:
    if p <= 0.0 or p >= 1.0:
        return 0.0
    return -(p * math.log2(p) + (1.0 - p) * math.log2(1.0 - p))


def plogp(x: float) -> float:
    return x * math.log2(x) if x > 0.0 else 0.0


class Posterior:
    """P(culprit = order[i] | verdicts), with each hypothesis' predictive error rates."""

    def __init__(
        self,
        cands: Candidates,
        counts: Mapping[str, tuple[int, int]],
        model: FlakeModel,
        marks: Mapping[str, str],
        prior: Sequence[float] | None = None,
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
                    for c in bits_of(idx.anc(x)):
                        Q[c] += g[x]
                        D[c] += b[x]
        allowed = self._allowed(marks)
        if prior is not None:
            if len(prior) != n:
                raise ValueError(f"the prior has {len(prior)} weights for {n} commits")
            allowed = [ok and prior[j] > 0.0 for j, ok in enumerate(allowed)]
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
        # verdicts each hypothesis takes for wrong (false failures and false passes)
        self.wrong = [out_b + tot_b - D[j] + Q[j] for j in range(n)]
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
        if prior is not None:
            logw = [v + math.log(prior[j]) if v != -math.inf else v for j, v in enumerate(logw)]
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

    def wrong_verdicts(self, commit: str) -> int | None:
        """How many verdicts contradict `commit` as the culprit (None: not in the set)."""
        i = self.idx.pos.get(commit)
        return self.wrong[i] if i is not None else None

    def p_bad(self, commit: str) -> float:
        """P(commit is truly bad): the mass of its ancestors-or-self."""
        i = self.idx.pos.get(commit)
        if i is None:
            return 0.0
        if self.idx.linear:
            return sum(self.w[: i + 1])
        return sum(self.w[c] for c in bits_of(self.idx.anc(i)))

    def rates(self) -> tuple[float, float]:
        """Posterior means of p and q."""
        return (
            sum(w * p for w, p in zip(self.w, self.pc, strict=True)),
            sum(w * q for w, q in zip(self.w, self.qc, strict=True)),
        )

    def entropy(self) -> float:
        return -sum(plogp(w) for w in self.w)

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


def bits_of(mask: int):
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
    prior: Sequence[float] | None = None,
) -> Posterior:
    """The posterior over the culprit. `counts`: commit -> (good verdicts, bad verdicts);
    `prior`: P(culprit = order[i]) before any verdict (None: uniform)."""
    return Posterior(cands, counts, model or FlakeModel(), marks or {}, prior)
