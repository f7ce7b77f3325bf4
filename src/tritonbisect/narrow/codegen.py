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

from tritonbisect.narrow.compare import align
from tritonbisect.narrow.dumps import PassDump

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


def _after(dumps: Sequence[PassDump], i: int) -> str | None:
    return dumps[i + 1].ir if i + 1 < len(dumps) else None


def statistic_passes(parent: Sequence[PassDump], culprit: Sequence[PassDump],
                     changes: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """For each changed statistic: the pass after which its stand-in ops first differ in number."""
    pairs, _, _ = align(list(parent), list(culprit))
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
        if pairs and count_ops(parent[pairs[0][0]].ir, ops) != count_ops(culprit[pairs[0][1]].ir, ops):
            entry["pass"] = f"(the frontend, before {culprit[pairs[0][1]].label})"
            entry["counts"] = {"parent": count_ops(parent[pairs[0][0]].ir, ops),
                               "culprit": count_ops(culprit[pairs[0][1]].ir, ops)}
        for i, j in pairs if entry["pass"] is None else ():
            p, c = _after(parent, i), _after(culprit, j)
            if p is None or c is None:
                continue
            n_p, n_c = count_ops(p, ops), count_ops(c, ops)
            if n_p != n_c:
                entry["pass"] = culprit[j].label
                entry["counts"] = {"parent": n_p, "culprit": n_c}
                break
        if entry["pass"] is None:
            entry["note"] = (f"the number of {what} is the same after every dumped pass: the change comes "
                             "after them (LLVM, ptxas)")
        else:
            entry["note"] = (f"{what}: {entry['counts']['parent']} at the parent, {entry['counts']['culprit']} "
                             "at the culprit after this pass")
        out.append(entry)
    return out
