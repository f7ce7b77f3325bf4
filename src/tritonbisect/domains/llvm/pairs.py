"""Pairs search: a binary search over the compatibility map's (Triton, LLVM) pairs.

Each row of commits.csv is a pair (Triton commit, the last LLVM commit it builds against).
Testing pairs instead of every LLVM commit costs one LLVM + one Triton build per pair, and a
binary search over P pairs tests at most ceil(log2 P) + 1 of them (the bad endpoint plus the
search), where a walk from the oldest pair tests up to P. The first bad pair brackets the
regression between the previous pair's LLVM commit and its own.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path

from tritonbisect.core.errors import InputError
from tritonbisect.core.history import History
from tritonbisect.domains.llvm.bisector import (
    assign_triton,
    check_map_commits,
    fork_endpoints,
    llvm_order,
    llvm_phase,
    load_compat_map,
    open_llvm_repo,
    resolve_llvm,
)
from tritonbisect.domains.triton.bisector import TritonBuildOptions
from tritonbisect.session.session import PhaseSpec


@dataclass(frozen=True)
class Pair:
    triton: str
    llvm: str
    line: int | None = None  # the CSV line, None for an endpoint not in the map

    def describe(self) -> str:
        where = f" (commits.csv line {self.line})" if self.line else ""
        return f"triton {self.triton[:12]} + llvm {self.llvm[:12]}{where}"


def max_pairs_tested(p: int) -> int:
    """Upper bound on pairs tested for P candidate pairs: ceil(log2 P) + 1."""
    return (math.ceil(math.log2(p)) if p > 1 else 0) + 1


def select_pairs(cmap, order: list[str], map_order: list[str]) -> tuple[Pair, list[Pair]]:
    """The good endpoint's pair and the candidate pairs in (good, bad], oldest first.

    `order` is the LLVM history from the good endpoint to the bad one, `map_order` the map's
    whole range (old_llvm..new_llvm). Rows whose LLVM commit is outside `order` are left out;
    the bad endpoint is always the last candidate.
    """
    good, bad = order[0], order[-1]
    assign_triton([good, bad], cmap=cmap, map_order=map_order)  # both inside the map's range
    position = {sha: i for i, sha in enumerate(order)}
    by_llvm: dict[int, Pair] = {}
    for row in cmap.rows:
        i = position.get(row.llvm_commit_last_compatible)
        if i is not None and 0 < i < len(order) - 1:
            by_llvm.setdefault(
                i, Pair(row.triton_commit, row.llvm_commit_last_compatible, row.line)
            )
    inner = [by_llvm[i] for i in sorted(by_llvm)]
    bad_row = next((r for r in cmap.rows if r.llvm_commit_last_compatible == bad), None)
    bad_pair = (
        Pair(bad_row.triton_commit, bad, bad_row.line)
        if bad_row
        else Pair(cmap.triton_for_llvm(bad, map_order), bad)
    )
    good_pair = Pair(cmap.triton_for_llvm(good, map_order), good)
    return good_pair, [*inner, bad_pair]


@dataclass
class PairsBisector:
    """`tritonbisect pairs`: binary search over the map's pairs with the "llvm-triton" recipe."""

    triton_dir: Path
    llvm_dir: Path
    compat_map: Path
    test: dict
    build: TritonBuildOptions
    good_llvm: str | None = None  # default: the map's old_llvm
    bad_llvm: str | None = None  # default: the map's new_llvm
    llvm: dict = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.triton = History(self.triton_dir)
        self.llvm_history = open_llvm_repo(self.llvm_dir)
        self.cmap = load_compat_map(self.compat_map)
        map_order = check_map_commits(self.cmap, self.compat_map, self.triton, self.llvm_history)
        for attr, key in (("good_llvm", "old_llvm"), ("bad_llvm", "new_llvm")):
            rev = getattr(self, attr) or self.cmap.metadata.get(key)
            if not rev:
                raise InputError(
                    f"--{attr.replace('_', '-')} not given and {self.compat_map} has no {key}"
                )
            setattr(self, attr, resolve_llvm(self.llvm_history, rev, what=attr.split("_")[0]))
        assert self.good_llvm is not None and self.bad_llvm is not None  # resolved just above
        self.good_llvm, self.bad_llvm, self.fork = fork_endpoints(self.llvm_history, self.good_llvm,
                                                                  self.bad_llvm)
        order = llvm_order(self.llvm_history, self.good_llvm, self.bad_llvm)
        self.good_pair, self.pairs = select_pairs(self.cmap, order, map_order)
        self.good_pair = Pair(self.triton.resolve(self.good_pair.triton), self.good_pair.llvm)
        self.pairs = [Pair(self.triton.resolve(p.triton), p.llvm, p.line) for p in self.pairs]

    def phase(self) -> PhaseSpec:
        assignment = {self.good_pair.llvm: self.good_pair.triton}
        assignment.update({p.llvm: p.triton for p in self.pairs})
        return llvm_phase(self, name="pairs", assignment=assignment,
                          default_triton=self.pairs[-1].triton, prefer_cached=False,
                          candidates=[p.llvm for p in self.pairs])


WORKFLOW = "pairs"
DESCENT = "llvm"  # the phase that bisects the first bad pair's LLVM range


def report_first_bad_pair(session, result) -> bool:
    """Workflow continuation of `tritonbisect pairs`: the first bad pair brackets an LLVM range,
    whose last commit is not the culprit unless the range is that one commit. A longer range
    is bisected in a phase of its own ("llvm"), building at each LLVM commit the Triton commit
    the map assigns to it: the session's answer is a culprit, never the end of a range."""
    import click

    phases = [p for p in session.phases() if p.status != "superseded"]
    if not phases or phases[-1].spec.name != "pairs":
        return False
    phase = phases[-1]
    if phase.status != "found" or not phase.culprit:
        return False
    assigned = phase.spec.recipe_config.get("triton_commits") or {}
    order = [phase.spec.good, *(phase.spec.candidates or [])]
    culprit = phase.culprit
    if culprit not in order or not {culprit, order[order.index(culprit) - 1]} <= set(assigned):
        return False
    previous = order[order.index(culprit) - 1]
    llvm = History(phase.spec.repo)
    between = llvm_order(llvm, previous, culprit)[1:]
    click.echo(
        f"first bad pair: triton {assigned.get(culprit, '?')[:12]} + llvm {culprit[:12]}; "
        f"last good pair: triton {assigned.get(previous, '?')[:12]} + llvm {previous[:12]}",
        err=True,
    )
    if len(between) <= 1:
        click.echo(f"the pairs are adjacent: llvm {culprit[:12]} is the culprit", err=True)
        return False
    phase.reason = (
        f"first bad pair: llvm {culprit[:12]}; the regression is one of the {len(between)} LLVM "
        f"commits {previous[:12]}..{culprit[:12]} (bisected in phase {DESCENT})"
    )
    session.save()
    spec = range_phase(phase.spec, previous, culprit, between)
    session.append_phase(spec)
    click.echo(
        f"the LLVM regression is one of the {len(between)} commits {previous[:12]}..{culprit[:12]}: "
        f"bisecting them, building at each the Triton commit the map assigns to it",
        err=True,
    )
    return True


def range_phase(pairs: PhaseSpec, good: str, bad: str, between: list[str]) -> PhaseSpec:
    """The phase over the first bad pair's LLVM range, with the pairs phase's recipe. No row of
    the map lies inside the range (it would be a pair), so the map assigns every commit of it
    the bad pair's Triton commit, and the good endpoint keeps its own pair's."""
    config = dict(pairs.recipe_config)
    assigned = dict(config.get("triton_commits") or {})
    config["triton_commits"] = {good: assigned[good], **{c: assigned[bad] for c in between}}
    config["triton_commit"] = assigned[bad]
    return PhaseSpec(name=DESCENT, repo=pairs.repo, good=good, bad=bad,
                     recipe_name=pairs.recipe_name, recipe_config=config,
                     first_parent=pairs.first_parent)
