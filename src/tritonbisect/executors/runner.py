"""Runs steps: one commit's build, install and test, in a worker's own git worktree.

The worktrees are managed by `executors.worktree` (and owned by a pool: `local_pool.py`,
`ray_pool.py`), the processes run through `core.process` (own process group, killed on
timeout, cancellation or Ctrl-C).
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tritonbisect.builds.recipes import PrepareResult, Recipe, StepContext, TestRun
from tritonbisect.core.clock import now_iso
from tritonbisect.core.gitrun import GitError
from tritonbisect.core.outcome import (
    Kind,
    Policy,
    Verdict,
    case_kinds,
    classify_test,
    combine_cases,
    combine_runs,
)
from tritonbisect.core.process import CancelToken, read_tail
from tritonbisect.executors.worktree import Worktree

if TYPE_CHECKING:  # pragma: no cover
    from tritonbisect.core.perf import PerfSettings
    from tritonbisect.executors.paired import ReferenceSide

# concurrent.futures (with logging) and bisect.perf are imported where they are used:
# `tritonbisect step` runs one step per process and needs neither.


# --- one step ----------------------------------------------------------------------------


@dataclass
class StepResult:
    """A finished step, as written to the journal (see `to_record`)."""

    commit: str
    kind: Kind
    verdict: Verdict
    reason: str
    worker: int
    started: str
    finished: str
    seconds: float
    build: dict[str, Any] | None = None
    tests: list[dict[str, Any]] = field(default_factory=list)
    record: dict[str, Any] | None = None
    attempts: list[dict[str, Any]] = field(default_factory=list)  # earlier infra attempts
    log_dir: str = ""
    cancelled: bool = False
    node: str | None = None  # the cluster node the step ran on (Ray executor only)
    perf: dict[str, Any] | None = None  # --regress perf: samples and their judgement
    # the cases the test reported (a kernel each, say): name -> {"kind", "verdict"}
    cases: dict[str, dict[str, str]] | None = None
    # --perf-design paired: the reference's runs interleaved with `tests`, and its build
    reference_tests: list[dict[str, Any]] = field(default_factory=list)
    reference_build: dict[str, Any] | None = None

    def __post_init__(self) -> None:
        # from a Ray worker's dict, or a person's answer: the enums, whatever came
        self.kind = Kind(self.kind)
        self.verdict = Verdict(self.verdict)

    def to_record(self) -> dict[str, Any]:
        rec: dict[str, Any] = {
            "commit": self.commit,
            "kind": self.kind.value,
            "verdict": self.verdict.value,
            "reason": self.reason,
            "worker": self.worker,
            "started": self.started,
            "finished": self.finished,
            "seconds": round(self.seconds, 3),
            "build": self.build,
            "tests": self.tests,
            "dir": self.log_dir,
        }
        if self.record is not None:
            rec["record"] = self.record
        if self.attempts:
            rec["attempts"] = self.attempts
        if self.node:
            rec["node"] = self.node
        if self.perf is not None:
            rec["perf"] = self.perf
        if self.cases:
            rec["cases"] = self.cases
        if self.reference_build is not None:
            rec["reference_build"] = self.reference_build
            rec["reference_tests"] = self.reference_tests
        return rec


def _build_entry(prep: PrepareResult, *, performed: bool) -> dict[str, Any]:
    return {
        "cached": bool(prep.cached),
        "performed": performed,
        "seconds": round(prep.seconds, 3),
        "log": str(prep.log) if prep.log else None,
        "kind": prep.kind.value if isinstance(prep.kind, Kind) else str(prep.kind),
        "reason": prep.reason,
        # an install of a published wheel (a release or a nightly), not a build
        **({"published": True} if prep.published else {}),
        **({"kept": True} if prep.kept else {}),
        **({"built": list(prep.built)} if prep.built else {}),
    }


def _test_entry(run: TestRun, kind: Kind, reason: str) -> dict[str, Any]:
    return {
        "exit": run.returncode if run.returncode is None or run.returncode >= 0 else None,
        "signal": run.signal,
        "seconds": round(run.seconds, 3),
        "log": str(run.log),
        "kind": kind.value,
        "reason": reason,
        "timed_out": bool(run.timed_out),
    }


def _classify_run(run: TestRun, policy: Policy) -> tuple[Kind, str]:
    cls = classify_test(
        run.returncode, test_output(read_tail(run.log)), timed_out=run.timed_out, result=run.result,
        infra=policy.infra,
    )
    return cls.kind, cls.reason


def test_output(tail: str) -> str:
    """What the test printed: its log's tail without the lines the tool wrote first (the
    command, its folder, the sandbox: core/process.py run_logged), so that a command that
    names "Connection refused" or "Segmentation fault" is not read as saying it."""
    if not tail.startswith("$ "):
        return tail
    at = tail.find("\n# cwd: ")
    if at < 0:
        return tail
    end = tail.find("\n", at + 1)
    rest = "" if end < 0 else tail[end + 1:]
    if rest.startswith("# sandbox: "):
        nl = rest.find("\n")
        rest = "" if nl < 0 else rest[nl + 1:]
    return rest


def execute_step(
    recipe: Recipe,
    commit: str,
    ctx: StepContext,
    policy: Policy,
    *,
    repeat: int = 1,
    record: bool = False,
    token: CancelToken | None = None,
    baseline: Sequence[float] | None = None,
    prepared: PrepareResult | None = None,
    reference: ReferenceSide | None = None,
    verify: bool = False,
) -> StepResult:
    """Build/install `commit` (already checked out in ctx.worktree) and test it `repeat` times.

    With `prepared` (a build the worktree still holds) nothing is built: the test runs on it.
    With `reference` (--perf-design paired: its commit prepared in a second checkout) the
    runs are pairs, reference and candidate back to back (`executors.paired`); `verify`: an
    A/B of the sandwich, with its larger bounds.

    The outcome kind is classified from the processes; the verdict comes from `policy`.
    With `repeat` > 1 the verdict is the majority; runs that disagree make the kind "flaky".
    Under --regress perf (`policy.perf`) the runs' metrics are judged against `baseline`
    (the good endpoint's samples; None: this step is that reference) by
    `bisect.perf.judge_step`, which may ask for more runs.
    """
    perf: PerfSettings | None = policy.perf
    started_iso = now_iso("milliseconds")
    t0 = time.monotonic()
    ctx.log_dir.mkdir(parents=True, exist_ok=True)

    def done(kind: Kind, verdict: Verdict, reason: str, **kw: Any) -> StepResult:
        return StepResult(
            commit=commit,
            kind=kind,
            verdict=verdict,
            reason=reason,
            worker=ctx.worker,
            started=started_iso,
            finished=now_iso("milliseconds"),
            seconds=time.monotonic() - t0,
            log_dir=str(ctx.log_dir),
            cancelled=bool(token and token.cancelled),
            **kw,
        )

    try:
        prep = prepared if prepared is not None else recipe.prepare(commit, ctx)
    except Exception as exc:  # a recipe bug or an OSError: the infrastructure failed
        return done(Kind.INFRA, Verdict.ABORT, _crash_reason("build", exc, ctx.log_dir))
    prep_kind = prep.kind if isinstance(prep.kind, Kind) else Kind(prep.kind)
    performed = not prep.cached and prep.log is not None
    build = _build_entry(prep, performed=performed)
    if prep_kind is not Kind.PASS:
        reason = prep.reason or f"build {prep_kind.value}"
        return done(prep_kind, policy.verdict(prep_kind), reason, build=build)

    record_entry = None
    if record:
        try:
            run = recipe.test(commit, ctx, record=True)
        except Exception as exc:
            return done(Kind.INFRA, Verdict.ABORT, _crash_reason("record", exc, ctx.log_dir), build=build)
        kind, reason = _classify_run(run, policy)
        record_entry = _test_entry(run, kind, reason)
        if kind is not Kind.PASS:
            why = f"recording the reference at this commit failed: {reason}"
            return done(kind, policy.verdict(kind), why, build=build, record=record_entry)

    tests: list[dict[str, Any]] = []
    kinds: list[Kind] = []

    def run_tests(count: int) -> StepResult | None:
        """Run the test `count` more times; a StepResult when the step must end now."""
        for _ in range(count):
            if token is not None and token.cancelled:
                return None
            try:
                run = recipe.test(commit, ctx)
            except Exception as exc:
                return done(
                    Kind.INFRA, Verdict.ABORT, _crash_reason("test", exc, ctx.log_dir),
                    build=build, tests=tests, record=record_entry,
                )
            kind, reason = _classify_run(run, policy)
            entry = _test_entry(run, kind, reason)
            cases = case_kinds(run.result)
            if cases and perf is None:  # cases are judged pass/fail, not by their timings
                entry["cases"] = {name: k.value for name, k in cases.items()}
            if perf is not None:
                from tritonbisect.core.perf import metric_of

                entry["metric"] = metric_of(read_tail(run.log), run.result)
            tests.append(entry)
            kinds.append(kind)
            if kind is Kind.INFRA:
                return done(kind, policy.verdict(kind), reason, build=build, tests=tests, record=record_entry)
        return None

    if perf is not None and perf.paired and reference is not None:
        from tritonbisect.executors.paired import run_pairs

        def finish(kind: Kind, verdict: Verdict, reason: str, **kw: Any) -> StepResult:
            return done(kind, verdict, reason, build=build, record=record_entry,
                        reference_build=reference.build, **kw)

        def once(side_commit: str, side_ctx: StepContext) -> tuple[dict[str, Any], Kind] | str:
            try:
                run = recipe.test(side_commit, side_ctx)
            except Exception as exc:
                return _crash_reason("test", exc, side_ctx.log_dir)
            kind, reason = _classify_run(run, policy)
            from tritonbisect.core.perf import metric_of

            entry = _test_entry(run, kind, reason)
            entry["metric"] = metric_of(read_tail(run.log), run.result)
            return entry, kind

        return run_pairs(perf, policy, commit, ctx, reference, token=token, verify=verify,
                         once=once, finish=finish, combine=combine_runs)

    ended = run_tests(perf.first_batch(baseline) if perf is not None else max(1, repeat))
    if ended is not None:
        return ended
    if not kinds:
        return done(Kind.INFRA, Verdict.ABORT, "step cancelled", build=build, tests=tests)
    if perf is not None:
        from tritonbisect.core.perf import judge_step

        while True:
            decision = judge_step(perf, policy, kinds, tests, baseline, combine_runs)
            if not decision.more or (token is not None and token.cancelled):
                break
            ended = run_tests(decision.more)
            if ended is not None:
                return ended
        return done(
            decision.kind, decision.verdict, decision.reason,
            build=build, tests=tests, record=record_entry, perf=decision.record,
        )
    kind, verdict, reason = combine_runs(kinds, [t["reason"] for t in tests], policy)
    return done(kind, verdict, reason, build=build, tests=tests, record=record_entry,
                cases=combine_cases(tests, policy))


def execute_build(
    recipe: Recipe, commit: str, ctx: StepContext, policy: Policy, *, token: CancelToken | None = None
) -> StepResult:
    """Only the build of a step (`recipe.prepare`), for an executor that builds on one node
    and tests on another: the artifact reaches the tester through the shared cache."""
    started_iso = now_iso("milliseconds")
    t0 = time.monotonic()
    ctx.log_dir.mkdir(parents=True, exist_ok=True)
    try:
        prep = recipe.prepare(commit, ctx)
    except Exception as exc:  # a recipe bug or an OSError: the infrastructure failed
        kind, reason, build = Kind.INFRA, _crash_reason("build", exc, ctx.log_dir), None
    else:
        kind = prep.kind if isinstance(prep.kind, Kind) else Kind(prep.kind)
        reason = prep.reason or f"build {kind.value}"
        build = _build_entry(prep, performed=not prep.cached and prep.log is not None)
    return StepResult(
        commit=commit, kind=kind, verdict=policy.verdict(kind), reason=reason,
        worker=ctx.worker, started=started_iso, finished=now_iso("milliseconds"),
        seconds=time.monotonic() - t0, build=build, log_dir=str(ctx.log_dir),
        cancelled=bool(token and token.cancelled),
    )


def _crash_reason(what: str, exc: BaseException, log_dir: Path) -> str:
    import traceback

    path = log_dir / "error.log"
    with contextlib.suppress(OSError):
        path.write_text("".join(traceback.format_exception(exc)), encoding="utf-8")
    return f"{what} could not run: {type(exc).__name__}: {exc}"[:300]


def execute_with_retry(
    run_once: Callable[[Path], StepResult], log_dir: Path
) -> StepResult:
    """Run a step; an infrastructure failure is retried once, then the verdict is abort."""
    first = run_once(log_dir)
    if first.kind is not Kind.INFRA or first.cancelled:
        return first
    second = run_once(log_dir / "retry")
    second.attempts = [
        {"kind": first.kind.value, "reason": first.reason, "build": first.build, "tests": first.tests}
    ]
    if second.kind is Kind.INFRA:
        second.verdict = Verdict.ABORT
        second.reason = f"infrastructure failure, twice: {second.reason}"
    return second


# --- a step as a pool runs it ------------------------------------------------------------


class Reuse(str, Enum):
    """Whether a step may skip its build where a worker's checkout still holds the commit's
    successful build (a recipe that caches nothing: the confirmation of a culprit)."""

    NO = "no"
    LATEST = "latest"  # only the pool's latest build: what it changed outside the checkout is still its
    KEPT = "kept"  # any checkout that holds it: the build stays inside the checkout


@dataclass
class StepRequest:
    commit: str
    log_dir: Path
    record: bool = False
    token: CancelToken = field(default_factory=CancelToken)
    # told (stage, where) when a stage of the step starts on a node: "build"/"test"/"step"
    notify: Callable[[str, str], None] | None = None
    baseline: tuple[float, ...] | None = None  # --regress perf: the reference's samples
    reuse: Reuse = Reuse.NO
    # --perf-design paired: the commit this step's runs are paired with (the good endpoint, or
    # the culprit's parent), and whether the step is an A/B of the sandwich (`verify`)
    reference: str | None = None
    verify: bool = False


@dataclass
class StepSettings:
    """How every step of a phase runs, wherever it runs (a thread here, a Ray actor)."""

    policy: Policy
    repeat: int = 1
    env: dict[str, str] = field(default_factory=dict)
    timeout: float | None = None
    workdir: Path | None = None
    cache_dir: str | None = None
    workers: int = 1  # steps building at once on this machine
    sandbox: bool = False  # --sandbox: builds and tests in builds/sandbox.py's sandbox


def run_in_worktree(
    wt: Worktree | Callable[[], Worktree],
    recipe: Recipe,
    commit: str,
    log_dir: Path,
    settings: StepSettings,
    *,
    token: CancelToken,
    record: bool = False,
    baseline: Sequence[float] | None = None,
    build_only: bool = False,
    worker: int | None = None,
    kept: PrepareResult | None = None,
    reference: ReferenceSide | None = None,
    verify: bool = False,
) -> StepResult:
    """Check `commit` out in the worker's worktree and run the step (or only its build).

    With `kept` the worktree already holds the commit's build: no checkout, no build. With
    `reference` (prepared by `executors.paired.prepare_reference`) the runs are pairs."""
    log_dir.mkdir(parents=True, exist_ok=True)
    started = now_iso("milliseconds")
    try:
        tree = wt() if callable(wt) else wt
        if kept is None:
            tree.checkout(commit)
    except (GitError, OSError) as exc:
        reason = f"could not prepare the worktree: {exc}"[:300]
        return StepResult(
            commit=commit, kind=Kind.INFRA, verdict=Verdict.ABORT,
            reason=reason, worker=worker if worker is not None else -1, started=started,
            finished=now_iso("milliseconds"), seconds=0.0, log_dir=str(log_dir),
        )
    ctx = step_context(tree, log_dir, settings, token)
    try:
        if build_only:
            return execute_build(recipe, commit, ctx, settings.policy, token=token)
        return execute_step(
            recipe, commit, ctx, settings.policy,
            repeat=settings.repeat, record=record, token=token, baseline=baseline, prepared=kept,
            reference=reference, verify=verify,
        )
    finally:
        for done in (tree, reference.tree if reference is not None else None):
            if done is not None:
                with contextlib.suppress(OSError):
                    done.restore()


def step_context(tree: Worktree, log_dir: Path, settings: StepSettings, token: CancelToken) -> StepContext:
    return StepContext(
        worktree=tree.path,
        log_dir=log_dir,
        worker=tree.index,
        env=dict(settings.env),
        timeout=settings.timeout,
        workdir=settings.workdir,
        cache_dir=settings.cache_dir,
        workers=settings.workers,
        sandbox=settings.sandbox,
        token=token,
    )


def prepare_reference(
    wt: Worktree | Callable[[], Worktree],
    recipe: Recipe,
    commit: str,
    log_dir: Path,
    settings: StepSettings,
    *,
    token: CancelToken,
    kept: PrepareResult | None = None,
) -> ReferenceSide | str:
    """The reference of a paired step in its own checkout: `commit` checked out and prepared
    there (`kept`: the checkout holds its build already: nothing is done), its runs' logs in
    `<step>/reference`. Why it could not be, as a string."""
    from tritonbisect.executors.paired import ReferenceSide

    where = log_dir / "reference"
    where.mkdir(parents=True, exist_ok=True)
    try:
        tree = wt() if callable(wt) else wt
        if kept is None:
            tree.checkout(commit)
    except (GitError, OSError) as exc:
        return f"could not prepare the reference {commit[:12]}'s worktree: {exc}"[:300]
    ctx = step_context(tree, where, settings, token)
    if kept is not None:
        prep = kept
    else:
        try:
            prep = recipe.prepare(commit, ctx)
        except Exception as exc:  # a recipe bug or an OSError: the infrastructure failed
            prep = PrepareResult(Kind.INFRA, _crash_reason(f"the reference {commit[:12]}'s build", exc, where))
    kind = prep.kind if isinstance(prep.kind, Kind) else Kind(prep.kind)
    if kind is not Kind.PASS:
        with contextlib.suppress(OSError):
            tree.restore()  # what its build did to the checkout's `.git` goes no further
        return (f"the reference {commit[:12]} could not be prepared in worktree w{tree.index}: "
                f"{prep.reason or kind.value}")[:300]
    return ReferenceSide(commit, ctx, _build_entry(prep, performed=not prep.cached and prep.log is not None), tree)
