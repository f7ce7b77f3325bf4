"""What a passing change costs, by the compile oracle's own measure (pure): how much worse its
codegen statistics are than the reference's (the good Triton's compile as recorded, else the
bad Triton's own): more registers, spills, local memory or instructions, fewer tensor-core
instructions or async copies. Each statistic counts its relative change in the bad direction
(capped at 10), so 0 is "as good as the reference" and a lost wgmma weighs like doubled spills."""

from __future__ import annotations

import fnmatch
from typing import Any

MORE_IS_WORSE = ("regs", "sgprs", "spills", "vgpr_spills", "sgpr_spills", "local_bytes", "stack",
                 "global_scratch_size", "ptx.ld.local", "ptx.st.local", "sass.LDL", "sass.STL", "amdgcn.scratch_*",
                 "*.total")
FEWER_IS_WORSE = ("ptx.wgmma", "ptx.mma", "ptx.tcgen05", "sass.HGMMA", "sass.HMMA", "sass.IMMA", "sass.QGMMA",
                  "sass.UTC*", "amdgcn.v_mfma", "amdgcn.v_wmma", "ptx.cp.async", "sass.LDGSTS", "sass.UTMA*")
CAP = 10.0

LABELS = {"regs": "registers", "spills": "spills", "local_bytes": "local memory bytes", "stack": "stack bytes",
          "sgprs": "scalar registers"}


def _direction(metric: str) -> int:
    if any(fnmatch.fnmatchcase(metric, p) for p in MORE_IS_WORSE):
        return 1
    if any(fnmatch.fnmatchcase(metric, p) for p in FEWER_IS_WORSE):
        return -1
    return 0


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value)


def _label(metric: str) -> str:
    if metric in LABELS:
        return LABELS[metric]
    family, _, op = metric.partition(".")
    return f"{family.upper()} {op}" if op else metric


def codegen_cost(reference: dict[str, Any], stats: dict[str, Any]) -> tuple[float, list[str]]:
    """(cost, the statistics that made it, worst first) of `stats` against `reference`."""
    terms: list[tuple[float, str]] = []
    for metric in sorted(set(reference) & set(stats)):
        sign = _direction(metric)
        old, new = _number(reference[metric]), _number(stats[metric])
        if not sign or old is None or new is None or old == new:
            continue
        worse = (new - old) * sign
        if worse <= 0:
            continue
        term = min(CAP, worse / max(abs(old), 1.0))
        terms.append((term, f"{_label(metric)} {old:g} → {new:g}"))
    terms.sort(key=lambda t: -t[0])
    return round(sum(t for t, _ in terms), 3), [text for _, text in terms]


def distance(status: str, over_limits: list[dict[str, Any]], differences: list[dict[str, Any]]) -> float:
    """How far a failing run is from passing, where the oracle can tell (lower is nearer): the
    share a limit is exceeded by, the size of the codegen moves past their thresholds; an error
    or a crash has no such measure (infinity)."""
    if status == "pass":
        return 0.0
    if status == "out_of_resources" and over_limits:
        return sum(max(0.0, float(o.get("needed") or 0) / max(float(o.get("allowed") or 1), 1.0) - 1.0)
                   for o in over_limits)
    if status == "perf" and differences:
        total = 0.0
        for d in differences:
            if d.get("over_threshold"):
                old, new = _number(d.get("old")) or 0.0, _number(d.get("new")) or 0.0
                total += min(CAP, abs(new - old) / max(abs(old), 1.0))
        return total
    return float("inf")
