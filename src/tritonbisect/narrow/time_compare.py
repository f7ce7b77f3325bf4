"""Where did the compile time grow? Two sets of timed compiles (the parent's and the culprit's)
compared part by part: pure logic over what tb_timing recorded.

Each compile gives a breakdown (oracles/compile/standalone/tb_timing.py `breakdown`): an MLIR
pass's wall seconds summed over its runs, an LLVM code-generation pass's, and each stage's time
outside its timed passes (ptxas is the cubin stage; LLVM's optimization pipeline, which prints
no timings, is the llir stage's rest). A part's time is its *floor*, the fastest of the
side's compiles: what else runs on the machine only ever adds to a compile, so the fastest
of a few is the code's own time however busy the machine was.

MLIR renamed passes between releases (Canonicalizer -> CanonicalizerPass, CSE -> CSEPass): a
part is keyed by its name without a trailing "Pass", so the two sides line up.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

Breakdown = Sequence[Mapping[str, Any]]  # one compile's parts: name, kind, stage, seconds, runs

KIND_WORDS = {"mlir": "MLIR pass", "llvm": "LLVM code-generation pass", "rest": "MLIR pass manager",
              "stage": "compile stage"}
SHOWN = 8  # parts that grew listed (and the 3 that shrank most)
NOTICED = 0.0005  # a part whose time moved less is not listed (seconds)


def part_key(item: Mapping[str, Any]) -> tuple[str, str]:
    name = str(item.get("name") or "?")
    if item.get("kind") == "mlir":
        name = re.sub(r"Pass$", "", name) or name
    return str(item.get("kind") or "?"), name


def floors(runs: Sequence[Breakdown]) -> dict[tuple[str, str], dict[str, Any]]:
    """Each part's fastest time over `runs` (a part missing from a run took 0 s there)."""
    out: dict[tuple[str, str], dict[str, Any]] = {}
    for run in runs:
        for item in run:
            key = part_key(item)
            entry = out.setdefault(key, {"name": item.get("name"), "kind": item.get("kind"),
                                         "stage": item.get("stage"), "times": []})
            entry["name"] = item.get("name")  # the latest spelling
            entry["times"].append(float(item.get("seconds") or 0.0))
            entry["runs"] = item.get("runs")
    for entry in out.values():
        times = entry.pop("times")
        entry["seconds"] = min(times) if len(times) == len(runs) else 0.0
    return out


def floor_of(values: Sequence[float | None]) -> float | None:
    found = [float(v) for v in values if v is not None]
    return min(found) if found else None


def stage_floors(stages_per_run: Sequence[Sequence[Mapping[str, Any]]]) -> dict[str, dict[str, float | None]]:
    """{stage: {"wall": fastest, "cpu": fastest}} over the runs' stage records."""
    out: dict[str, dict[str, list[float]]] = {}
    for stages in stages_per_run:
        summed: dict[str, dict[str, float]] = {}
        for st in stages:
            acc = summed.setdefault(str(st.get("stage")), {"wall": 0.0, "cpu": 0.0})
            acc["wall"] += float(st.get("wall") or 0.0)
            acc["cpu"] += float(st.get("cpu") or 0.0)
        for name, acc in summed.items():
            slot = out.setdefault(name, {"wall": [], "cpu": []})
            slot["wall"].append(acc["wall"])
            slot["cpu"].append(acc["cpu"])
    return {name: {"wall": floor_of(v["wall"]), "cpu": floor_of(v["cpu"])} for name, v in out.items()}


def describe_part(part: Mapping[str, Any]) -> str:
    """`TritonGPURemoveLayoutConversions (MLIR pass, ttgir stage)`."""
    kind = KIND_WORDS.get(str(part.get("kind")), str(part.get("kind")))
    if part.get("kind") in ("stage", "rest"):  # their names say what and where
        return str(part.get("name"))
    stage = part.get("stage")
    where = f", {stage} stage" if stage and stage != "several" else (", several stages" if stage else "")
    return f"{part.get('name')} ({kind}{where})"


def compare_times(parent: Sequence[Breakdown], culprit: Sequence[Breakdown], *,
                  parent_totals: Sequence[Mapping[str, Any]] = (),
                  culprit_totals: Sequence[Mapping[str, Any]] = ()) -> dict[str, Any]:
    """The part whose floor grew most from the parent's compiles to the culprit's, both floors,
    and the parts around it. `*_totals`: each compile's {"seconds", "cpu_seconds", "stages"}."""
    if not parent or not culprit:
        raise ValueError("both sides need at least one timed compile")
    p, c = floors(parent), floors(culprit)
    parts: list[dict[str, Any]] = []
    for key in sorted(set(p) | set(c)):
        before, after = p.get(key), c.get(key)
        base = after or before or {}
        parts.append({
            "name": base.get("name"), "kind": base.get("kind"), "stage": base.get("stage"),
            "parent": before["seconds"] if before else 0.0, "culprit": after["seconds"] if after else 0.0,
            "only": None if before and after else ("culprit" if after else "parent"),
        })
    for part in parts:
        part["change"] = round(part["culprit"] - part["parent"], 6)
        part["text"] = describe_part(part)
    parts.sort(key=lambda x: -x["change"])
    total = {
        side: {"seconds": floor_of([t.get("seconds") for t in totals]),
               "cpu_seconds": floor_of([t.get("cpu_seconds") for t in totals]),
               "stages": stage_floors([t.get("stages") or () for t in totals])}
        for side, totals in (("parent", parent_totals), ("culprit", culprit_totals))
    }
    grew = parts[0] if parts and parts[0]["change"] > 0 else None
    growth = sum(x["change"] for x in parts)
    moved = [x for x in parts if abs(x["change"]) >= NOTICED]
    out: dict[str, Any] = {
        "grew_most": grew,
        "parts": [x for x in moved if x["change"] > 0][:SHOWN] + [x for x in moved if x["change"] < 0][-3:],
        "samples": {"parent": len(parent), "culprit": len(culprit)},
        "compile": total,
        "timed_growth": round(growth, 6),
    }
    if grew is not None and growth > 0:  # other parts may have shrunk: at most all of it
        out["share"] = min(1.0, round(grew["change"] / growth, 3))
    return out
