"""The workaround search: what change makes the bad Triton pass the oracle.

1. The oracle as recorded, under the bad Triton: it must fail (else there is nothing to work
   around), and under the good one, when given: its statistics are the reference a passing
   change is measured against (and the golden of `--check codegen`).
2. Every single change (changes.singles), several at a time.
3. None passes: pairs of them, those that came nearest to passing first (cost.distance).
4. The passing changes, cheapest first (cost.codegen_cost against the reference).
"""

from __future__ import annotations

import fnmatch
import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tritonbisect.core.errors import InputError, TritonBisectError
from tritonbisect.oracles.compile.standalone import tb_codegen
from tritonbisect.reduce.oracle_io import OracleDir
from tritonbisect.workaround import changes as ch
from tritonbisect.workaround.cost import codegen_cost, distance
from tritonbisect.workaround.trials import Runner, Side, Trial, options_dropped
from tritonbisect.workaround.triton_facts import probe

# statistics a launch option sets by itself: a change of them is the change, not a regression
_SET_BY_THE_CHANGE = ("num_*", "shared", "tmem_size")
PAIRS_AT_MOST = 60


class NothingToWorkAround(TritonBisectError):
    """The bad Triton passes the oracle as recorded."""


@dataclass
class Settings:
    bad_python: str
    good_python: str | None = None
    env: dict[str, str] = field(default_factory=dict)  # both sides' environment (a session's --env)
    jobs: int = 2
    timeout: float = 300.0
    check_codegen: bool = False
    thresholds: tuple[str, ...] = ()
    max_candidates: int = 200


@dataclass
class Result:
    kernel: str
    target: dict[str, Any]
    bad_version: str
    good_version: str | None
    baseline: Trial
    reference: Trial | None
    workarounds: list[Trial]
    trials: list[Trial]
    seconds: float
    first_seconds: float | None  # from the start until the first passing change was known
    first_candidates: int | None  # candidates judged until then (the first passing one included)
    compiled: int  # candidates compiled (cache hits not counted)
    notes: list[str] = field(default_factory=list)

    @property
    def tried(self) -> int:
        return len(self.trials)


def _candidate_thresholds(baseline: Trial, given: tuple[str, ...]) -> list[str]:
    """The codegen check each candidate gets: the statistics whose move failed the recorded
    launch, with their limits; when it failed otherwise, the given (or default) thresholds but
    for the statistics the changed options set themselves (num_*, shared memory)."""
    failing = [str(d["threshold"]) for d in baseline.differences if d.get("over_threshold") and d.get("threshold")]
    failing = [t for t in dict.fromkeys(failing) if not any(fnmatch.fnmatchcase(t.partition("=")[0], p)
                                                            for p in _SET_BY_THE_CHANGE)]
    if baseline.status == "perf" and failing:
        return failing
    pairs = [t.partition("=") for t in given] if given else [(p, "=", v) for p, v in tb_codegen.DEFAULT_THRESHOLDS]
    return [f"{p}={v}" for p, _, v in pairs if not any(fnmatch.fnmatchcase(p, q) for q in _SET_BY_THE_CHANGE)]


def _ptxas_wanted(baseline: Trial, reference: Trial | None) -> bool:
    """The good Triton's ptxas is worth a try where the bad one's ptxas failed, or where both
    Tritons' PTX is alike and their SASS is not."""
    if reference is None:
        return False
    if "ptxas" in baseline.reason.lower():
        return True
    ref, got = reference.stats, baseline.stats
    ptx = {k for k in set(ref) | set(got) if k.startswith("ptx.")}
    sass = {k for k in set(ref) | set(got) if k.startswith("sass.")}
    return bool(ptx) and all(ref.get(k) == got.get(k) for k in ptx) and any(ref.get(k) != got.get(k) for k in sass)


def _movers(baseline: Trial, trials: list[Trial]) -> tuple[list[ch.Change], list[ch.Change]]:
    """(the changes that moved the failure, nearest to passing first; every change): a pair
    holds at least one mover. A change moved it when the oracle can tell it came nearer (less
    past a limit, smaller codegen moves) or when it failed another way."""
    start = distance(baseline.status, baseline.over_limits, baseline.differences)

    def near(t: Trial) -> float:
        return distance(t.status, t.over_limits, t.differences)

    harness = ("usage_error", "env_unusable", "timeout")
    moved = [t for t in trials if t.status not in harness and
             (near(t) < start or (t.status != baseline.status and near(t) != float("inf")))]
    moved.sort(key=near)
    rest = sorted((t for t in trials if t.status not in harness), key=near)
    return [t.change for t in moved], [t.change for t in rest]


def run_search(oracle: OracleDir, settings: Settings, work: Path, cache_dir: Path,
               progress: Callable[[str], None] = lambda line: None) -> Result:
    if not oracle.compiles:
        raise InputError(f"{oracle.root}: a runtime oracle (repro.py); workaround searches compile oracles "
                         "(`tritonbisect repro TRACE --kernel K --mode compile`, no GPU needed)")
    t0 = time.monotonic()
    first: list[float] = []
    first_count: list[int] = []
    bad_facts = probe(settings.bad_python, {**_environ(), **settings.env}, role="bad")
    good_facts = probe(settings.good_python, {**_environ(), **settings.env}, role="good") \
        if settings.good_python else None
    bad = Side(settings.bad_python, bad_facts.fingerprint, dict(settings.env))
    good = Side(settings.good_python, good_facts.fingerprint, dict(settings.env)) \
        if settings.good_python and good_facts else None

    heard_count: list[int] = []

    def heard(trial: Trial) -> None:
        heard_count.append(1)
        if trial.passed and not first:
            first.append(time.monotonic() - t0)
            first_count.append(len(heard_count))  # the baselines are run apart: not counted
        progress(f"{'PASS' if trial.passed else trial.status:>16}  {trial.change.describe()}"
                 + ("" if trial.passed else f": {trial.reason[:160]}"))

    runner = Runner(oracle, work, cache_dir, timeout=settings.timeout, jobs=settings.jobs, progress=heard)
    notes: list[str] = []
    reference = None
    golden_args: list[str] = []
    golden_text = ""
    if good is not None and good_facts is not None:
        progress(f"the oracle as recorded under the good Triton ({good_facts.version}) ...")
        reference = runner.run(good, ch.Change())
        if not reference.passed:
            if settings.check_codegen:
                raise NothingToWorkAround(f"the good Triton ({good_facts.version}) fails the oracle too "
                                          f"({reference.status}: {reference.reason}): no golden to check codegen against")
            notes.append(f"the good Triton ({good_facts.version}) fails the oracle too ({reference.status}): "
                         "costs are measured against the bad Triton's own compile")
            reference = None
        else:
            golden = work / "golden_codegen.json"
            golden_text = json.dumps({"kernel": oracle.kernel, "triton_version": good_facts.version,
                                      "stats": reference.stats}, sort_keys=True)
            golden.write_text(golden_text, encoding="utf-8")
            golden_args = ["--golden", str(golden)]
    if settings.check_codegen and reference is None:
        raise InputError("--check codegen compares against the good Triton's compile: give --good-python or --good")
    check = ["--check", "codegen"] if settings.check_codegen else []
    given = [a for t in settings.thresholds for a in ("--codegen-threshold", t)] if settings.check_codegen else []
    progress(f"the oracle as recorded under the bad Triton ({bad_facts.version}) ...")
    baseline = runner.run(bad, ch.Change(), [*golden_args, *check, *given], golden_text)
    if baseline.passed:
        raise NothingToWorkAround(f"the bad Triton ({bad_facts.version}) passes this oracle as recorded "
                                  f"({baseline.reason}): nothing to work around"
                                  + ("" if settings.check_codegen or reference is None else
                                     "; add --check codegen to hold it to the good Triton's codegen"))
    if baseline.status in ("usage_error", "env_unusable"):
        raise InputError(f"the oracle cannot run under the bad Triton: {baseline.reason}")
    progress(f"recorded launch under {bad_facts.version}: {baseline.status}: {baseline.reason}")
    args = [*golden_args, *check]
    if settings.check_codegen:
        args += [a for t in _candidate_thresholds(baseline, settings.thresholds) for a in ("--codegen-threshold", t)]

    candidates = ch.singles(oracle.original.context, bad_facts, good_facts, ptxas=_ptxas_wanted(baseline, reference))
    candidates = ch.prefer(candidates, oracle.original.context, baseline.over_limits)[: settings.max_candidates]
    progress(f"{len(candidates)} single changes ...")
    trials = [t for t in runner.run_all(bad, candidates, args, golden_text) if not options_dropped(t)]
    if not any(t.passed for t in trials) and len(trials) < settings.max_candidates:
        budget = min(PAIRS_AT_MOST, settings.max_candidates - len(trials))
        combined = ch.pairs(*_movers(baseline, trials), budget)
        if combined:
            progress(f"no single change passes: {len(combined)} pairs of them ...")
            trials += [t for t in runner.run_all(bad, combined, args, golden_text) if not options_dropped(t)]
        else:
            progress("no single change passes, and none moved the failure: no pair would")
    reference_stats = reference.stats if reference is not None else baseline.stats
    found = [t for t in trials if t.passed]
    for t in found:
        t.cost, t.moved = codegen_cost(reference_stats, t.stats)
    order = {id(t): i for i, t in enumerate(trials)}
    found.sort(key=lambda t: (t.cost or 0.0, t.change.size, order[id(t)]))
    target = dict((oracle.original.context.get("job") or {}).get("target") or {})
    return Result(oracle.kernel, target, bad_facts.version, good_facts.version if good_facts else None, baseline,
                  reference, found, trials, round(time.monotonic() - t0, 3),
                  round(first[0], 3) if first else None, first_count[0] if first_count else None, runner.ran, notes)


def _environ() -> dict[str, str]:
    import os

    return dict(os.environ)
