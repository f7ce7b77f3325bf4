"""Which pass changed a codegen statistic? (`narrow` after a `--check codegen` culprit)

The statistics of the compile oracle are counted in the PTX, the SASS or the metadata, after
the last MLIR pass. Some of them have an op in the MLIR that stands for them: a `wgmma` in
the PTX comes from a `ttng.warp_group_dot` in the TTGIR and an `nvvm.wgmma.mma_async` in the
LLVM dialect; a `cp.async` from a `ttg.async_copy_global_to_local`. For those, the pass is
the first aligned pass after which the number of such ops differs between the parent's and
the culprit's pipelines. Resource statistics (registers, spills, shared memory) have no such
op: they are decided in LLVM and ptxas, after the dumps end, and the answer says so.

    statistic_passes(parent_dumps, culprit_dumps, changes)   # changes: [{"metric", "old", "new", "text"}]
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Mapping, Sequence
from typing import Any

from tritonbisect.mlir.passes import PassDump, align

# metric patterns -> (what the ops are, the MLIR ops that stand for the statistic)
PROXIES: tuple[tuple[tuple[str, ...], str, tuple[str, ...]], ...] = (
    (("ptx.wgmma", "sass.HGMMA", "sass.QGMMA", "sass.IGMMA"), "warp-group MMA ops",
     ("ttng.warp_group_dot", "triton_nvidia_gpu.warp_group_dot", "nvvm.wgmma.mma_async", "nvgpu.warpgroup.mma")),
    (("ptx.tcgen05", "sass.UTC*"), "tcgen05 MMA ops",
     ("ttng.tc_gen5_mma", "ttng.tc_gen5_mma_scaled", "nvvm.tcgen05.mma")),
    (("ptx.mma", "sass.HMMA", "sass.IMMA"), "mma.sync ops", ("nvvm.mma.sync",)),
    (("ptx.cp.async", "sass.LDGSTS"), "async copies to shared memory",
     ("ttg.async_copy_global_to_local", "triton_gpu.async_copy_global_to_local", "nvvm.cp.async.shared.global")),
    (("sass.UTMA*", "ptx.cp.async.bulk*"), "TMA copies",
     ("ttng.async_tma_copy_global_to_local", "ttng.async_tma_copy_local_to_global",
      "triton_nvidia_gpu.async_tma_copy_global_to_local", "nvvm.cp.async.bulk.tensor.shared.cluster.global")),
    (("amdgcn.v_mfma*",), "MFMA ops", ("rocdl.mfma", "amdgpu.mfma")),
)


def proxy_of(metric: str) -> tuple[str, tuple[str, ...]] | None:
    for patterns, what, ops in PROXIES:
        if any(fnmatch.fnmatchcase(metric, p) for p in patterns):
            return what, ops
    return None


def count_ops(ir: str | None, ops: Sequence[str]) -> int:
    """Operations named `ops` in an MLIR text (custom or generic "quoted" form); the rocdl and
    nvvm families match by prefix (rocdl.mfma.f32.32x32x8f16)."""
    if not ir:
        return 0
    names = "|".join(re.escape(op) + r"(?:\.\w+)*" for op in ops)
    return len(re.findall(rf'(?:^|[\s="])"?(?:{names})"?(?=[\s(<{{"]|$)', ir, re.MULTILINE))


def _first_difference(parent: Sequence[PassDump], culprit: Sequence[PassDump], pairs: Sequence[tuple[int, int]],
                      ops: Sequence[str]) -> tuple[str, int, int] | None:
    """(where, parent count, culprit count) at the first point the number of `ops` differs:
    the input of an aligned pass (the frontend, or passes that only one pipeline runs before
    it), else its output; None when the counts agree after every dumped pass."""
    def n(dumps: Sequence[PassDump], k: int) -> int | None:
        return count_ops(dumps[k].ir, ops) if k < len(dumps) else None

    prev = (-1, -1)
    for i, j in pairs:
        before = n(parent, i), n(culprit, j)
        if before[0] != before[1]:
            only = [d.label for d in culprit[prev[1] + 1:j]] + [d.label for d in parent[prev[0] + 1:i]]
            if prev == (-1, -1) and not only:
                return f"(the frontend, before {culprit[j].label})", before[0] or 0, before[1] or 0
            return (f"(a pass only one pipeline runs, before {culprit[j].label}: {', '.join(only)})",
                    before[0] or 0, before[1] or 0)
        after = n(parent, i + 1), n(culprit, j + 1)
        if None not in after and after[0] != after[1]:
            return culprit[j].label, after[0] or 0, after[1] or 0
        prev = (i, j)
    return None


def statistic_passes(parent: Sequence[PassDump], culprit: Sequence[PassDump],
                     changes: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """For each changed statistic: the pass after which its stand-in ops first differ in number."""
    pairs = align(list(parent), list(culprit)).pairs
    found: dict[tuple[str, ...], tuple[str, int, int] | None] = {}  # ptx.cp.async and sass.LDGSTS share ops
    out = []
    for change in changes:
        metric = str(change["metric"])
        entry: dict[str, Any] = {"metric": metric, "text": change.get("text") or metric,
                                 "old": change.get("old"), "new": change.get("new"), "pass": None}
        proxy = proxy_of(metric)
        if proxy is None:
            entry["note"] = ("no MLIR op stands for this statistic (a resource or an option, settled by the "
                             "options, LLVM or ptxas): see the first pass whose output differs")
            out.append(entry)
            continue
        what, ops = proxy
        entry["proxy"] = {"what": what, "ops": list(ops)}
        if ops not in found:
            found[ops] = _first_difference(parent, culprit, pairs, ops)
        hit = found[ops]
        if hit is None:
            entry["note"] = (f"the number of {what} is the same after every dumped pass: the change comes "
                             "after them (LLVM, ptxas)")
        else:
            entry["pass"], n_parent, n_culprit = hit
            entry["counts"] = {"parent": n_parent, "culprit": n_culprit}
            entry["note"] = f"{what}: {n_parent} at the parent, {n_culprit} at the culprit after this pass"
        out.append(entry)
    return out
