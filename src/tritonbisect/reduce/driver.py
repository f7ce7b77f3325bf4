"""The reduction loop: each level in turn, greedily taking the first smaller candidate that
still shows the original failure, until no level finds one."""

from __future__ import annotations

import ast
import json
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tritonbisect.core import pyast
from tritonbisect.reduce import inputs_pass, source_pass
from tritonbisect.reduce.candidate_runner import Runner, Settings
from tritonbisect.reduce.context_edit import elements, options, params, scalar_values
from tritonbisect.reduce.inputs_pass import BlobPlan
from tritonbisect.reduce.oracle_io import Candidate, OracleDir
from tritonbisect.reduce.pool import Pool
from tritonbisect.reduce.verdict import BROKEN, PASSES

LEVELS = ("source", "ir", "inputs")
HELPERS = Path(__file__).parent


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


def size(cand: Candidate) -> dict[str, int]:
    return {"kernel_lines": source_pass.kernel_lines(cand.source), "elements": elements(cand.context)}


def cost(cand: Candidate) -> int:
    """What every accepted step must lower (so the loop ends)."""
    ctx = cand.context
    grid = 1
    for g in ctx.get("launch", {}).get("grid") or []:
        grid *= int(g)
    scalars = sum(value for _, value in scalar_values(ctx))
    config = sum(int(v) for k, v in options(ctx).items() if k in ("num_warps", "num_stages") and isinstance(v, int))
    return len(cand.source) + elements(ctx) + grid + scalars + config + len(params(ctx))


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
    skipped = [] if "ir" not in levels else ["ir: the oracle is a source oracle (no IR to reduce)"]
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
            return iter(())

        current = oracle.original
        moved = True
        while moved:
            moved = False
            for level in (lv for lv in LEVELS if lv in levels and lv != "ir"):
                while True:
                    here = cost(current)
                    smaller = (c for c in generate(level, current) if cost(c) < here)
                    found = runner.first_interesting(smaller, wanted, materialise if level == "inputs" else None)
                    if found is None:
                        break
                    current, moved = found, True
                    now = size(current)
                    progress(f"{level}: {now['kernel_lines']} kernel lines, {now['elements']} elements; "
                             f"{runner.tests} candidates tried, {time.monotonic() - t0:.0f}s")
        return Outcome(oracle.original, current, wanted, runner.tests, time.monotonic() - t0, skipped, first.versions)
    finally:
        runner.close()


def summary(outcome: Outcome, out: Path) -> dict[str, Any]:
    return {"status": "reduced", "out": str(out), "before": size(outcome.original), "after": size(outcome.reduced),
            "tests": outcome.tests, "seconds": round(outcome.seconds, 1), "signature": outcome.signature,
            "skipped": outcome.skipped, "good_triton": outcome.versions[0], "bad_triton": outcome.versions[1]}


def dumps(data: dict[str, Any]) -> str:
    return json.dumps(data, indent=1)
