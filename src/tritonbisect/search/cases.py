"""The pure search over several cases at once: one test of a commit gives a verdict per case
(each kernel of a program, say), and each regressed case has its own first bad commit.

Model
-----
Every case c has its own verdicts V_c and so its own set of possible culprits R_c (as in
`classic`: the ancestors-or-self of its bad commits that descend from none of its good ones).
A commit tested once is built once and its result serves every case, so the next commit is
the one whose test tells most about all open cases together. Its value for case c is the
expected information of its verdict there, given the commits already in flight (they cut
R_c in weight space; the test only splits the part of R_c between the cuts around it):

    info_c(x) = (|S| / |R_c|) * H((w_c(x) - a) / |S|)      x in segment S = (a, a + |S|] of R_c

and the commit chosen maximises sum_c info_c(x) * (1 - P(skip(x))), a cached build counting a
quarter more (it costs no build). With k workers the k commits are chosen one after the
other, each seeing the ones before it as in flight.

A case is settled when `classic.next_step` says so for its own verdicts: `Found`, or
`Inconclusive` when only untestable commits separate its last good and first bad. A case
whose verdicts contradict the history (`Conflict`) is reported, so the caller can re-test.
With one case this is the classic search (same points, up to ties), so the bound
ceil(log2(N + 1)) holds per case; k cases whose culprits are spread over the range need
fewer tests together than k separate searches, since the first tests split every case.
"""

from __future__ import annotations

from collections.abc import Mapping
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field

from tritonbisect.search import classic
from tritonbisect.search.classic import Candidates, Conflict, Found, Inconclusive

CACHED_BONUS = 1.25  # a cached build costs no build: worth a quarter more information


@dataclass(frozen=True)
class CasesStep:
    """What to do next for a set of cases.

    `commits` is the next batch to test (empty: wait for a step in flight, or nothing left);
    `settled` the cases whose answer is known, `conflicts` the cases whose verdicts contradict
    the history (re-test those commits), `remaining` the size of R_c of each open case."""

    commits: tuple[str, ...] = ()
    settled: Mapping[str, Found | Inconclusive] = field(default_factory=dict)
    conflicts: Mapping[str, Conflict] = field(default_factory=dict)
    remaining: Mapping[str, int] = field(default_factory=dict)

    @property
    def done(self) -> bool:
        """Every case settled: nothing to test and nothing to wait for."""
        return not self.remaining and not self.conflicts

    def steps_left(self, workers: int) -> int:
        """Rounds of tests still needed at most: the largest open case's classic bound, plus
        one round for each other open case (the first tests split them all at once)."""
        if not self.remaining:
            return 0
        sizes = sorted(self.remaining.values(), reverse=True)
        return classic.steps_left(sizes[0], workers) + len(sizes) - 1


def next_step_cases(
    cands: Candidates,
    verdicts: Mapping[str, Mapping[str, str]],
    *,
    workers: int = 1,
    in_flight: AbstractSet[str] = frozenset(),
    cached: AbstractSet[str] = frozenset(),
) -> CasesStep:
    """The next batch for the cases of `verdicts` (case -> commit -> "good"|"bad"|"skip")."""
    settled: dict[str, Found | Inconclusive] = {}
    conflicts: dict[str, Conflict] = {}
    states: dict[str, classic._State] = {}
    for case, case_verdicts in verdicts.items():
        action = classic.next_step(cands, case_verdicts, workers=1)
        if isinstance(action, (Found, Inconclusive)):
            settled[case] = action
        elif isinstance(action, Conflict):
            conflicts[case] = action
        else:
            states[case] = classic._state(cands, case_verdicts)
    remaining = {case: st.m for case, st in states.items()}
    if not states:
        return CasesStep((), settled, conflicts, remaining)
    idx = next(iter(states.values())).idx
    cached_pos = {idx.pos[c] for c in cached if c in idx.pos}
    # skips come from builds and so are shared by every case: any open case's state says
    # where the untestable clusters are
    widest = max(states.values(), key=lambda st: st.m)
    risk = classic._skip_risk(widest, cached_pos)
    flying = {idx.pos[c] for c in in_flight if c in idx.pos}
    # cases with the same verdicts (not told apart yet, or broken by one commit) have the same
    # state: each such group is scored once, weighted by its size
    groups: dict[frozenset[tuple[str, str]], tuple[str, int]] = {}
    for case in states:
        key = frozenset(verdicts[case].items())
        first, count = groups.get(key, (case, 0))
        groups[key] = (first, count + 1)
    chosen: list[int] = []
    for _ in range(max(1, int(workers)) - len(in_flight & set(idx.pos))):
        best, best_score = -1, 0.0
        for i in range(idx.n):
            if i in flying:
                continue
            gain = 0.0
            for case, count in groups.values():
                gain += count * _info(states[case], i, flying, verdicts[case])
            if gain <= 0.0:
                continue
            score = gain * (1.0 - (risk[i] if risk else 0.0))
            if i in cached_pos:
                score *= CACHED_BONUS
            if score > best_score + 1e-12:
                best, best_score = i, score
        if best < 0:
            break
        chosen.append(best)
        flying.add(best)
    return CasesStep(tuple(idx.order[i] for i in chosen), settled, conflicts, remaining)


def _info(st: classic._State, i: int, flying: set[int], case_verdicts: Mapping[str, str]) -> float:
    """Expected bits of testing commit i for one case, with `flying` already cutting R."""
    if not (st.R >> i) & 1 or st.idx.order[i] in case_verdicts:
        return 0.0
    if i in st.bad:
        return 0.0  # the bad endpoint (known bad) or a commit already tested bad
    w = classic._weight(st, i)
    if w >= st.m:
        return 0.0  # its verdict is implied: the top of R is bad
    cuts = sorted({0, st.m, *(classic._weight(st, j) for j in flying if (st.R >> j) & 1)})
    lo = max(c for c in cuts if c < w)
    hi = min(c for c in cuts if c >= w)
    if hi == w and w != st.m:
        return 0.0  # a commit at the same weight is in flight
    seg = hi - lo
    return (seg / st.m) * classic._entropy((w - lo) / seg)
