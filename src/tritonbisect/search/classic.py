"""The pure search: candidates + verdicts -> next batch | culprit | inconclusive set.

No I/O and no imports from tritonbisect, so the whole algorithm is testable with plain lists.

Model
-----
`Candidates.order` holds the commits of ``good..bad`` (git's ``bad ^good``) in topological
order, oldest first, the bad endpoint last. Every commit outside the set that a candidate
descends from is an ancestor of the good endpoint, hence good; the bad endpoint is bad. With a
single culprit, a commit is bad iff the culprit is one of its ancestors-or-self, so the
commits that can still be the culprit are

    R = (ancestors-or-self of every bad commit) - (ancestors-or-self of any good commit)

Testing an untested commit x in R splits R into ``anc(x) & R`` (x bad) and the rest (x good):
its *weight* is ``w(x) = |anc(x) & R|`` (git's ``--bisect-all`` weight is min(w, |R| - w)).

Choosing points
---------------
Points live in "weight space" ``(0, |R|)``: on a linear range the weight of a commit is just
its position in R. Commits already in flight are fixed cut points; the free workers are
apportioned to the segments between cut points so that the largest part is as small as
possible, and each gets the target spacing ``Δ = segment / (points + 1)``. For a target t the
chosen commit maximises

    quality(e) * (1 - P(skip)),   e = (w - t) / Δ,   quality(e) = H(1/2 + e/2)

where H is the binary entropy (expected bits of the test) and P(skip) is an estimate of how
likely the commit is to be untestable from its topological distance to the nearest known
skipped commit (skips cluster: a commit next to an unbuildable one is often unbuildable too;
a commit known to build, i.e. with a verdict or a cached build, ends a cluster). So the ideal
point is taken when nothing is known to be broken near it, and the search steps away from
clusters of skips, further when the range is large (moving off-centre costs little there).
A cached commit within ``±2Δ/7`` of the target (±range/7 with one worker) beats any uncached
one: its build is free.

With one worker on a clean linear range of N commits strictly between good and bad (N + 1
candidates, the bad endpoint known), every test halves R exactly (floor/ceil), so the search
takes at most ceil(log2(N + 1)) tests -- and exactly that many when N + 1 is a power of two.
With k workers the k points split R into k + 1 parts of at most ceil(|R| / (k + 1)) commits.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field

GOOD = "good"
BAD = "bad"
SKIP = "skip"
_VERDICTS = (GOOD, BAD, SKIP)

# P(a commit at topological distance d from a known skipped commit is itself untestable)
# = _SKIP_NEAR * exp(-(d - 1) / scale), scale = max(_SKIP_SCALE, extent of the run of skips
# seen there): 0.85 right next to an isolated skip, ~0.35 ten commits away (unbuildable
# commits come in clusters, and a wasted build costs as much as a useful one).
_SKIP_NEAR = 0.85
_SKIP_SCALE = 10.0


@dataclass(frozen=True)
class Candidates:
    """The commits in (good, bad], topological order oldest first, the bad endpoint last.

    `parents` maps a commit to its parents that are inside the set (parents outside the set
    are ancestors of good and may be given too: they are ignored). A missing key means no
    parent inside the set.
    """

    order: tuple[str, ...]
    parents: Mapping[str, tuple[str, ...]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        object.__setattr__(self, "order", tuple(self.order))
        if not self.order:
            raise ValueError("Candidates needs at least the bad endpoint")

    @classmethod
    def linear(cls, commits: Sequence[str]) -> Candidates:
        """A linear range: each commit's parent is the one before it."""
        commits = tuple(commits)
        parents = {c: ((commits[i - 1],) if i else ()) for i, c in enumerate(commits)}
        return cls(commits, parents)

    @property
    def bad(self) -> str:
        return self.order[-1]

    def __len__(self) -> int:
        return len(self.order)


@dataclass(frozen=True)
class TestNext:
    __test__ = False  # not a pytest test class

    commits: tuple[str, ...]
    remaining: int
    steps_left: int


@dataclass(frozen=True)
class Found:
    culprit: str


@dataclass(frozen=True)
class Inconclusive:
    candidates: tuple[str, ...]  # topological order; contains the true culprit


@dataclass(frozen=True)
class Wait:
    """Every useful point is already in flight: wait for a result."""


@dataclass(frozen=True)
class Conflict:
    commits: tuple[str, ...]  # verdicts contradict ancestry: re-test these (flaky?)


Action = TestNext | Found | Inconclusive | Wait | Conflict


# --------------------------------------------------------------------------------------------
# Index: positions and ancestor bitsets (bit i = order[i]), memoised on the Candidates object.


class _Index:
    def __init__(self, cands: Candidates) -> None:
        order = cands.order
        pos = {c: i for i, c in enumerate(order)}
        if len(pos) != len(order):
            raise ValueError("Candidates.order has duplicate commits")
        self.order = order
        self.pos = pos
        self.n = len(order)
        linear = True
        parents: list[tuple[int, ...]] = []
        for i, c in enumerate(order):
            ps = tuple(pos[p] for p in cands.parents.get(c, ()) if p in pos)
            for p in ps:
                if p >= i:
                    raise ValueError(
                        f"Candidates.order is not topological: {c} comes before its parent {order[p]}"
                    )
            if ps != ((i - 1,) if i else ()):
                linear = False
            parents.append(ps)
        self.linear = linear
        self._anc: list[int] | None = None
        if not linear:
            anc: list[int] = []
            for i, ps in enumerate(parents):
                a = 1 << i
                for p in ps:
                    a |= anc[p]
                anc.append(a)
            self._anc = anc

    def anc(self, i: int) -> int:
        """Bitset of the ancestors-or-self of order[i] inside the set."""
        if self._anc is None:
            return (1 << (i + 1)) - 1
        return self._anc[i]


def _index(cands: Candidates) -> _Index:
    idx = cands.__dict__.get("_search_index")
    if idx is None:
        idx = _Index(cands)
        object.__setattr__(cands, "_search_index", idx)  # memo only; not a dataclass field
    return idx


def ancestry(cands: Candidates) -> _Index:
    """Positions and ancestor bitsets of the set (memoised): `pos`, `order`, `n`, `linear`,
    `anc(i)`. For the flake-aware search (bayes.py), which shares the model."""
    return _index(cands)


def implied(cands: Candidates, verdicts: Mapping[str, str]) -> frozenset[str] | None:
    """Commits of the set whose verdict follows from `verdicts`: the ancestors-or-self of a
    good commit are good, the descendants-or-self of a bad one bad. None while the two
    overlap (the verdicts contradict the history)."""
    idx = _index(cands)
    goods = bads = 0
    for commit, verdict in verdicts.items():
        i = idx.pos.get(commit)
        if i is None:
            continue
        if verdict == "good":
            goods |= idx.anc(i)
        elif verdict == "bad":
            bads |= 1 << i
    below_bad = 0
    for i in range(idx.n):
        if idx.anc(i) & bads:
            below_bad |= 1 << i
    if goods & below_bad:
        return None
    return frozenset(idx.order[i] for i in _bits(goods | below_bad))


def _bits(mask: int):
    """Indices of the set bits of mask, ascending."""
    while mask:
        low = mask & -mask
        yield low.bit_length() - 1
        mask ^= low


# --------------------------------------------------------------------------------------------
# State: what the verdicts say.


@dataclass
class _State:
    idx: _Index
    good: list[int]
    bad: list[int]
    skip: set[int]
    conflict: tuple[str, ...]
    R: int  # bitset of possible culprits
    m: int  # |R|
    lo: int  # linear only: R == [lo, hi]


def _state(cands: Candidates, verdicts: Mapping[str, str]) -> _State:
    idx = _index(cands)
    good: list[int] = []
    bad: list[int] = []
    skip: set[int] = set()
    for commit, verdict in verdicts.items():
        v = getattr(verdict, "value", verdict)
        if v not in _VERDICTS:
            raise ValueError(f"verdict for {commit} must be one of {_VERDICTS}, not {verdict!r}")
        i = idx.pos.get(commit)
        if i is None:
            continue  # outside the set (e.g. the good endpoint): nothing to learn
        if v == GOOD:
            good.append(i)
        elif v == BAD:
            bad.append(i)
        else:
            skip.add(i)
    tip = idx.n - 1
    if tip not in good and tip not in bad:
        bad.append(tip)  # the bad endpoint is known bad
    skip.discard(tip)

    # Conflicts: a good commit that descends from a bad one.
    badmask = 0
    for b in bad:
        badmask |= 1 << b
    involved: set[int] = set()
    goodmask = 0
    for g in good:
        hit = idx.anc(g) & badmask
        if hit:
            involved.add(g)
            involved.update(_bits(hit))
        goodmask |= idx.anc(g)
    if tip in good:
        involved.add(tip)
    conflict = tuple(idx.order[i] for i in sorted(involved))

    # Possible culprits: intersect the bads' ancestries (greedily, smallest first, skipping a
    # bad that would empty the set: two culprits on separate branches, e.g. a cherry-pick).
    notg = ~goodmask
    cones = sorted(((idx.anc(b) & notg).bit_count(), b) for b in bad)
    R = 0
    for _, b in cones:
        cone = idx.anc(b) & notg
        if R == 0:
            R = cone
        elif R & cone:
            R &= cone
    m = R.bit_count()
    lo = (R & -R).bit_length() - 1 if R else 0
    return _State(idx, good, bad, skip, conflict, R, m, lo)


def _weight(st: _State, i: int) -> int:
    if st.idx.linear:
        return i - st.lo + 1
    return (st.idx.anc(i) & st.R).bit_count()


def remaining(cands: Candidates, verdicts: Mapping[str, str]) -> tuple[str, ...]:
    """The commits that can still be the culprit, in topological order."""
    st = _state(cands, verdicts)
    return tuple(st.idx.order[i] for i in _bits(st.R))


def steps_left(n_remaining: int, workers: int) -> int:
    """Rounds of tests still needed to narrow n_remaining candidates to one: ceil(log_{k+1} n)."""
    k = max(1, int(workers))
    rounds, reach = 0, 1
    while reach < n_remaining:
        reach *= k + 1
        rounds += 1
    return rounds


# --------------------------------------------------------------------------------------------
# Choosing points.


def _entropy(p: float) -> float:
    if p <= 0.0 or p >= 1.0:
        return 0.0
    return -(p * math.log2(p) + (1.0 - p) * math.log2(1.0 - p))


def _skip_risk(st: _State, cached: set[int]) -> list[float] | None:
    """Estimated probability that each commit is untestable, from its distance to known skips.

    A commit known to build (a good/bad verdict, or a cached build) ends a cluster: a skip on
    the far side of it says nothing about this commit.
    """
    if not st.skip:
        return None
    n = st.idx.n
    known_ok = set(st.good) | set(st.bad) | cached
    # For each commit and side: (distance to the nearest skip not cut off by a known-ok
    # commit, extent of that run of skips). A wide run means a wide cluster: decay slower.
    left = [(0, 0)] * n
    right = [(0, 0)] * n
    for span, out in ((range(n), left), (range(n - 1, -1, -1), right)):
        last: int | None = None
        first = 0  # where the run of skips ending at `last` starts (read only when last is set)
        for i in span:
            if i in st.skip:
                if last is None:
                    first = i
                last = i
            elif i in known_ok:
                last = None
            elif last is not None:
                out[i] = (abs(i - last), abs(last - first))
    risk = [0.0] * n
    for i in range(n):
        ok = 1.0
        for d, extent in (left[i], right[i]):
            if d:
                scale = max(_SKIP_SCALE, float(extent))
                ok *= 1.0 - _SKIP_NEAR * math.exp(-(d - 1) / scale)
        risk[i] = 1.0 - ok
    return risk


def skip_risk(
    cands: Candidates, skipped: AbstractSet[str], known_ok: AbstractSet[str]
) -> list[float] | None:
    """`_skip_risk` for callers outside this module: the estimated probability that each
    commit (by position) is untestable, given the skipped commits and those known to build."""
    idx = _index(cands)
    skip = {idx.pos[c] for c in skipped if c in idx.pos}
    ok = [idx.pos[c] for c in known_ok if c in idx.pos]
    st = _State(idx, good=ok, bad=[], skip=skip, conflict=(), R=0, m=0, lo=0)
    return _skip_risk(st, set())


def next_step(
    cands: Candidates,
    verdicts: Mapping[str, str],
    *,
    workers: int = 1,
    in_flight: AbstractSet[str] = frozenset(),
    cached: AbstractSet[str] = frozenset(),
) -> Action:
    """What to do next: test some commits, or the culprit, or the candidate set, or wait.

    `verdicts` maps commits to "good" | "bad" | "skip" (commits outside the set are ignored;
    the bad endpoint is bad unless said otherwise). `workers` is the number of free workers;
    `in_flight` commits are being tested by the others and count as already-chosen points.
    `cached` commits have a build ready (cost ~0).
    """
    st = _state(cands, verdicts)
    idx = st.idx
    if st.conflict:
        return Conflict(st.conflict)
    if st.m == 1:
        return Found(idx.order[st.R.bit_length() - 1])

    decided = set(st.good) | set(st.bad)
    flying = {idx.pos[c] for c in in_flight if c in idx.pos}
    cached_i = {idx.pos[c] for c in cached if c in idx.pos}
    m = st.m

    # Cut points already in flight, and the commits that may be started now.
    cuts: set[int] = set()
    avail: list[tuple[int, int]] = []  # (weight, index)
    for i in _bits(st.R):
        if i in decided:
            continue
        w = _weight(st, i)
        if w >= m:
            continue  # the top of R: its result is already known
        if i in flying:
            cuts.add(w)
        elif i not in st.skip:
            avail.append((w, i))

    useful_flying = bool(cuts)
    if not avail or workers < 1:
        if useful_flying or workers < 1:
            return Wait()
        return Inconclusive(tuple(idx.order[i] for i in _bits(st.R)))

    risk = _skip_risk(st, cached_i)
    chosen: list[int] = []
    chosen_set: set[int] = set()
    left = int(workers)
    while left > 0:
        picked = _one_pass(st, avail, chosen_set, cuts, left, risk, cached_i)
        if not picked:
            break
        for i in picked:
            chosen.append(i)
            chosen_set.add(i)
            cuts.add(_weight(st, i))
        left -= len(picked)

    if not chosen:
        return Wait() if useful_flying else Inconclusive(tuple(idx.order[i] for i in _bits(st.R)))
    parallel = int(workers) - left + sum(1 for i in flying if st.R >> i & 1)
    return TestNext(
        commits=tuple(idx.order[i] for i in chosen),
        remaining=m,
        steps_left=steps_left(m, max(1, parallel)),
    )


def _one_pass(
    st: _State,
    avail: list[tuple[int, int]],
    taken: set[int],
    cuts: set[int],
    k: int,
    risk: list[float] | None,
    cached: set[int],
) -> list[int]:
    """Apportion k points over the segments between cut points, then pick one per target."""
    m = st.m
    bounds = sorted({0, m} | cuts)
    free = [(w, i) for w, i in avail if i not in taken]
    segs = []  # [lo, hi, capacity, points]
    for a, b in zip(bounds, bounds[1:], strict=False):
        cap = sum(1 for w, _ in free if a < w < b)
        segs.append([a, b, cap, 0])
    for _ in range(k):
        best = None
        for s in segs:
            if s[3] < s[2]:
                part = (s[1] - s[0]) / (s[3] + 1)
                if best is None or part > best[0]:
                    best = (part, s)
        if best is None:
            break
        best[1][3] += 1

    picked: list[int] = []
    used = set(taken)
    for a, b, _cap, pts in segs:
        if not pts:
            continue
        delta = (b - a) / (pts + 1)
        for j in range(1, pts + 1):
            t = a + j * delta
            i = _pick(free, used, t, delta, a, b, risk, cached)
            if i is not None:
                picked.append(i)
                used.add(i)
    return picked


def _pick(
    free: list[tuple[int, int]],
    used: set[int],
    t: float,
    delta: float,
    a: int,
    b: int,
    risk: list[float] | None,
    cached: set[int],
) -> int | None:
    best_key = None
    best = None
    best_cached_key = None
    best_cached = None
    near = 2.0 * delta / 7.0
    for w, i in free:
        if i in used or not (a < w < b) or abs(w - t) >= delta:
            continue
        e = (w - t) / delta
        quality = _entropy(0.5 + e / 2.0)
        if quality <= 0.0:
            continue
        ok = 1.0 if i in cached or risk is None else 1.0 - risk[i]
        key = (quality * ok, -abs(w - t), -i)
        if best_key is None or key > best_key:
            best_key, best = key, i
        if i in cached and abs(w - t) <= near:
            ckey = (quality, -i)
            if best_cached_key is None or ckey > best_cached_key:
                best_cached_key, best_cached = ckey, i
    return best_cached if best_cached is not None else best
