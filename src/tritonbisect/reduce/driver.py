"""The reduction loop: each level in turn, greedily taking the first smaller candidate that
still shows the original failure, until no level finds one. Source and compile oracles go
through the source and inputs levels, IR oracles through the IR level."""

from __future__ import annotations

import ast
import json
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from tritonbisect.core import pyast
from tritonbisect.oracles.kinds import OracleKind
from tritonbisect.reduce import inputs_pass, ir_pass, source_pass
from tritonbisect.reduce.candidate_runner import Runner, Settings
from tritonbisect.reduce.context_edit import elements, options, params, scalar_values
from tritonbisect.reduce.inputs_pass import BlobPlan
from tritonbisect.reduce.oracle_io import Candidate, OracleDir
from tritonbisect.reduce.pool import Pool
from tritonbisect.reduce.verdict import BROKEN, PASSES
from tritonbisect.session.follow_ups import LEVELS

HELPERS = Path(__file__).parent
T = TypeVar("T")


class NotReproducible(Exception):
    """The original oracle does not pass at good and fail at bad."""


@dataclass
class Outcome:
    original: Candidate
    reduced: Candidate
    signature: str
    tests: int
    seconds: float
    skipped: list[str] = field(default_factory=list)
    versions: tuple[str, str] = ("?", "?")


def _is_ir(cand: Candidate) -> bool:
    job = cand.context.get("job")
    return isinstance(job, dict) and (job.get("what") or {}).get("kind") == "ir"


def size(cand: Candidate) -> dict[str, int]:
    if _is_ir(cand):
        return {**ir_pass.size(cand.source), "elements": 0}
    return {"kernel_lines": source_pass.kernel_lines(cand.source), "elements": elements(cand.context)}


def cost(cand: Candidate) -> tuple[int, ...]:
    """What every accepted step must lower (so the loop ends), compared in order."""
    ctx = cand.context
    config = sum(int(v) for k, v in options(ctx).items() if k in ("num_warps", "num_stages") and isinstance(v, int))
    if _is_ir(cand):
        return ir_pass.cost(cand.source, config)
    grid = 1
    for g in (ctx.get("launch") or {}).get("grid") or []:
        grid *= int(g)
    scalars = sum(value for _, value in scalar_values(ctx))
    # the source by its syntax tree's nodes first (an expression replaced by a constant is
    # smaller even where its text is longer), then by its length
    rest = elements(ctx) + grid + scalars + config + len(params(ctx))
    return source_pass.tree_size(cand.source) + rest, len(cand.source) + rest


def _applicable(oracle: OracleDir, levels: tuple[str, ...]) -> tuple[list[str], list[str]]:
    """The levels that apply to this oracle, in order, and a note for each one asked that does not."""
    if oracle.kind == OracleKind.IR:
        notes = {"source": "source: an IR oracle has no Python source (the ir level reduces its IR)",
                 "inputs": "inputs: an IR oracle has no inputs (it compiles, it does not launch)"}
    else:
        notes = {"ir": "ir: the oracle is a source oracle (no IR to reduce)"}
    return [lv for lv in LEVELS if lv in levels and lv not in notes], [notes[lv] for lv in LEVELS if lv in levels and lv in notes]


def _constexprs(cand: Candidate, kernel: str) -> set[str]:
    for fn in source_pass.jit_functions(pyast.parse(cand.source)):
        if fn.name == kernel:
            return {a.arg for a in fn.args.args if a.annotation is not None and "constexpr" in ast.unparse(a.annotation)}
    return set()


def reduce(oracle: OracleDir, work: Path, settings: Settings, levels: tuple[str, ...], pool: Pool,
           progress: Callable[[str], None]) -> Outcome:
    t0 = time.monotonic()
    runner = Runner(oracle, work, settings, pool)
    plan = BlobPlan(work / "blobs")
    plan.root.mkdir(parents=True, exist_ok=True)
    applicable, skipped = _applicable(oracle, levels)
    try:
        first = runner.verdict(oracle.original)
        if first.signature == BROKEN:
            raise NotReproducible(f"the original fails under the good Triton ({first.reason})")
        if first.signature == PASSES:
            raise NotReproducible(f"both Tritons give the same result ({first.reason})")
        wanted = first.signature
        progress(f"reproduces: {wanted}")

        def materialise(batch: list[Candidate]) -> None:
            jobs = work / "blob-jobs.json"
            if inputs_pass.write_jobs(plan, jobs):
                run = pool.run(settings.good_python, HELPERS / "shrink_blobs.py", [str(jobs)],
                               timeout=settings.timeout, log=work / "blob-jobs.log")
                if run.rc != 0:
                    raise OSError(f"cannot slice tensor blobs (see {work / 'blob-jobs.log'})")

        def generate(level: str, cur: Candidate) -> Iterator[Candidate]:
            if level == "source":
                return source_pass.candidates(cur, oracle.kernel)
            if level == "inputs":
                return inputs_pass.candidates(cur, _constexprs(cur, oracle.kernel), plan)
            return ir_pass.candidates(cur, oracle.stage)

        current = oracle.original
        moved = True
        while moved:
            moved = False
            for level in applicable:
                start = 0
                while True:
                    positions: dict[int, int] = {}  # id(candidate) -> its place in the level's order
                    smaller = _smaller(rotated(enumerate(generate(level, current)), start), cost(current), positions)
                    found = runner.first_interesting(smaller, wanted, materialise if level == "inputs" else None)
                    if found is None:
                        break
                    current, moved, start = found, True, positions[id(found)]
                    progress(f"{level}: {describe(size(current))}; {runner.tests} candidates tried, "
                             f"{time.monotonic() - t0:.0f}s")
        return Outcome(oracle.original, current, wanted, runner.tests, time.monotonic() - t0, skipped, first.versions)
    finally:
        runner.close()


def _smaller(cands: Iterator[tuple[int, Candidate]], here: tuple[int, ...],
             positions: dict[int, int]) -> Iterator[Candidate]:
    for i, cand in cands:
        if cost(cand) < here:
            positions[id(cand)] = i
            yield cand


def rotated(items: Iterator[T], start: int) -> Iterator[T]:
    """`items` from position `start` on, then the first `start` of them: after an accepted step
    the next round goes on where it was, not from the top, since the edits before that place
    were just found not to help (a full round with none accepted still ends the level)."""
    head = []
    for i, item in enumerate(items):
        if i < start:
            head.append(item)
        else:
            yield item
    yield from head


def describe(now: dict[str, int]) -> str:
    if "ir_ops" in now:
        return f"{now['ir_ops']} IR operations, {now['kernel_lines']} lines"
    return f"{now['kernel_lines']} kernel lines, {now['elements']} elements"


def summary(outcome: Outcome, out: Path) -> dict[str, Any]:
    return {"status": "reduced", "out": str(out), "before": size(outcome.original), "after": size(outcome.reduced),
            "tests": outcome.tests, "seconds": round(outcome.seconds, 1), "signature": outcome.signature,
            "skipped": outcome.skipped, "good_triton": outcome.versions[0], "bad_triton": outcome.versions[1]}


def dumps(data: dict[str, Any]) -> str:
    return json.dumps(data, indent=1)
