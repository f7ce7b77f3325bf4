"""Input-level candidates: a smaller grid, and smaller tensors (the first rows of each,
with the integer arguments that carried their sizes shrunk alike)."""

from __future__ import annotations

import copy
import hashlib
import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tritonbisect.reduce.oracle_io import Candidate


@dataclass
class BlobPlan:
    """The sliced blobs that candidates refer to, written before they run."""

    root: Path
    jobs: dict[str, dict[str, Any]] = field(default_factory=dict)

    def slice(self, src: str, rows: int) -> str:
        name = hashlib.sha256(f"{src}:{rows}".encode()).hexdigest()[:24] + ".bin"
        dst = str(self.root / name)
        self.jobs.setdefault(dst, {"src": src, "dst": dst, "rows": rows})
        return dst

    def pending(self) -> list[dict[str, Any]]:
        return [job for dst, job in self.jobs.items() if not Path(dst).exists()]


def _contiguous(shape: list[int]) -> list[int]:
    stride, acc = [], 1
    for s in reversed(shape):
        stride.append(acc)
        acc *= max(1, s)
    return list(reversed(stride))


def _numel(shape: list[int]) -> int:
    n = 1
    for s in shape:
        n *= s
    return n


def shrinkable(context: dict[str, Any]) -> list[dict[str, Any]]:
    """Tensors alone in their storage, contiguous, starting at its first byte."""
    storages = context.get("storages", [])
    out = []
    for spec in context.get("args", []):
        if spec.get("kind") != "tensor" or spec.get("part_of") or not spec.get("shape"):
            continue
        st = storages[spec["storage"]]
        numel = _numel(spec["shape"])
        if (len(st.get("tensors", [])) == 1 and spec.get("byte_offset", 0) == 0 and numel > 1
                and spec["stride"] == _contiguous(spec["shape"]) and st["nbytes"] % numel == 0
                and st["lo"] == 0 and st["hi"] == st["nbytes"]):
            out.append(spec)
    return out


def _halve(context: dict[str, Any], sizes: set[int], constexprs: set[str], plan: BlobPlan) -> dict[str, Any] | None:
    ctx = copy.deepcopy(context)
    changed = False
    for spec in shrinkable(ctx):
        rows = spec["shape"][0]
        if rows not in sizes or rows < 2:
            continue
        st = ctx["storages"][spec["storage"]]
        itemsize = st["nbytes"] // _numel(spec["shape"])
        spec["shape"] = [(rows + 1) // 2, *spec["shape"][1:]]
        spec["stride"] = _contiguous(spec["shape"])
        st["nbytes"] = st["hi"] = _numel(spec["shape"]) * itemsize
        init = spec.get("init") or {}
        if init.get("source") == "blob":
            init["file"] = plan.slice(init["file"], spec["shape"][0])
            init.pop("tensor_hash", None)
        changed = True
    if not changed:
        return None
    for spec in ctx.get("args", []):
        value = spec.get("value")
        if (spec.get("kind") == "scalar" and spec.get("name") not in constexprs and isinstance(value, int)
                and not isinstance(value, bool) and value in sizes and value > 1):
            spec["value"] = (value + 1) // 2
    return ctx


def candidates(cand: Candidate, constexprs: set[str], plan: BlobPlan) -> Iterator[Candidate]:
    context = cand.context
    grid = list((context.get("launch") or {}).get("grid") or [])
    for i, g in enumerate(grid):
        for smaller in sorted({1, g // 2}):
            if 1 <= smaller < g:
                ctx = copy.deepcopy(context)
                ctx["launch"]["grid"][i] = smaller
                yield Candidate(cand.source, ctx)
    sizes = sorted({spec["shape"][0] for spec in shrinkable(context)}, reverse=True)
    groups = [set(sizes)] + ([{s} for s in sizes] if len(sizes) > 1 else [])
    for group in groups:
        halved = _halve(context, group, constexprs, plan)
        if halved is not None:
            yield Candidate(cand.source, halved)


def write_jobs(plan: BlobPlan, path: Path) -> bool:
    jobs = plan.pending()
    if not jobs:
        return False
    path.write_text(json.dumps(jobs), encoding="utf-8")
    return True
