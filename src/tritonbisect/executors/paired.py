"""A paired perf step's runs (--perf-design paired): its reference and its commit back to back on
the same worker, pair after pair, until `core.perf_paired.judge_pairs` decides.

The reference (the good endpoint, or the culprit's parent) was prepared in a second checkout
of the worker's (`runner.prepare_reference`): a checkout that still holds its build is used as
it is, so a reference costs one build per checkout at most, and an install from the artifact
cache where the recipe caches builds. Which side of a pair runs first is drawn per pair
(`perf_paired.first_in_pair`), and recorded with the candidate's run (`"first"`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from tritonbisect.builds.recipes import StepContext
from tritonbisect.core.outcome import Kind, Policy, Verdict
from tritonbisect.core.perf import PerfSettings
from tritonbisect.core.perf_paired import CANDIDATE, REFERENCE, first_in_pair, judge_pairs
from tritonbisect.core.process import CancelToken
from tritonbisect.executors.worktree import Worktree

# one test run of a side: (its test entry with "metric", its kind), or why it could not run
RunOnce = Callable[[str, StepContext], "tuple[dict[str, Any], Kind] | str"]


@dataclass
class ReferenceSide:
    """The reference of a paired step, ready to test: its commit, its own checkout's context
    (its own log folder, `<step>/reference`) and its build entry for the journal."""

    commit: str
    ctx: StepContext
    build: dict[str, Any]
    tree: Worktree | None = None  # its checkout: its `.git` is put back after the step (Worktree.restore)


def run_pairs(
    perf: PerfSettings,
    policy: Policy,
    commit: str,
    ctx: StepContext,
    reference: ReferenceSide,
    *,
    token: CancelToken | None,
    verify: bool,
    once: RunOnce,
    finish: Callable[..., Any],
    combine: Callable[..., Any],
) -> Any:
    """Run pairs until decided or at the bound; `finish(kind, verdict, reason, **fields)`
    makes the step's result."""
    tests: list[dict[str, Any]] = []
    ref_tests: list[dict[str, Any]] = []
    kinds: list[Kind] = []
    ref_kinds: list[Kind] = []

    def ended(kind: Kind, verdict: Verdict, reason: str, **kw: Any) -> Any:
        return finish(kind, verdict, reason, tests=tests, reference_tests=ref_tests, **kw)

    def pairs(count: int) -> Any:
        """`count` more pairs; a result when the step must end now (else None)."""
        for _ in range(count):
            first = first_in_pair(reference.commit, commit, len(tests))
            order = (REFERENCE, CANDIDATE) if first == REFERENCE else (CANDIDATE, REFERENCE)
            got: dict[str, tuple[dict[str, Any], Kind]] = {}
            for side in order:
                if token is not None and token.cancelled:
                    return ended(Kind.INFRA, Verdict.ABORT, "step cancelled")
                is_ref = side == REFERENCE
                run = once(reference.commit, reference.ctx) if is_ref else once(commit, ctx)
                if isinstance(run, str):
                    return ended(Kind.INFRA, Verdict.ABORT, run if not is_ref else f"the reference's {run}")
                got[side] = run
            (entry, kind), (ref_entry, ref_kind) = got[CANDIDATE], got[REFERENCE]
            entry["first"] = first
            tests.append(entry)
            kinds.append(kind)
            ref_tests.append(ref_entry)
            ref_kinds.append(ref_kind)
            for k, e in ((kind, entry), (ref_kind, ref_entry)):
                if k is Kind.INFRA:
                    return ended(k, policy.verdict(k), str(e.get("reason")))
        return None

    first, _most = perf.pair_bounds(verify=verify)
    stop = pairs(first)
    while stop is None:
        decision = judge_pairs(perf, policy, kinds, ref_kinds, tests, ref_tests, reference.commit,
                               verify=verify, combine=combine)
        if not decision.more or (token is not None and token.cancelled):
            return ended(decision.kind, decision.verdict, decision.reason, perf=decision.record)
        stop = pairs(decision.more)
    return stop
