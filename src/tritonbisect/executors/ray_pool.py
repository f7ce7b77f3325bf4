"""The Ray executor's worker pool (driver side): `--jobs N` worker slots, each a Ray actor
(`ray_worker.StepWorker`) that owns its worktree on its node for the whole phase.

When `--build-resources` and `--test-resources` differ and the recipe caches its builds, a
slot has two actors: a builder (build resources) and a tester (test resources). A step then
builds on the builder, whose artifact (a wheel) reaches the tester through Ray's object
store (or the shared cache, with --cache-dir or --cache-url), and runs on the tester, whose
build is then a cache hit: install, then test. A recipe that caches nothing (`run` without
--artifact) runs whole on the tester.

No node needs the driver's filesystem: before a worker runs a commit, the driver makes sure
its node has it (`_ship`): the node fetches it from --repo-url, or the driver sends a git
bundle of what the node lacks through the object store, once per node.

A driver thread per running step waits for its actor, copies its logs into the session as
they grow, and turns a worker that died (its process killed, its node lost) into an `infra`
outcome; the step is then retried once on a fresh actor (Ray places it on a live node), and
a second failure aborts the run with that reason. Cancelling a step's token (Ctrl-C, or a
verdict that no longer matters) cancels it on its actor, which kills its process groups.
"""

from __future__ import annotations

import contextlib
import queue
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from concurrent.futures import wait as wait_futures
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import ray
from ray import exceptions as ray_errors

from tritonbisect.builds.recipes import Recipe
from tritonbisect.core.clock import now_iso
from tritonbisect.core.outcome import Kind, Policy, Verdict
from tritonbisect.core.process import track_token, untrack_token
from tritonbisect.executors.logsync import LogMirror, relocate
from tritonbisect.executors.pool_settings import ExecutorSettings
from tritonbisect.executors.ray_cluster import Cluster, actor_options, check_fits, connect
from tritonbisect.executors.ray_repo import bundle_for
from tritonbisect.executors.ray_worker import StepWorker, WorkerSpec
from tritonbisect.executors.runner import StepRequest, StepResult, execute_with_retry

POLL_S = 0.5  # how often a running step's new log bytes are fetched
CALL_TIMEOUT_S = 60.0  # a small call (logs, describe) that takes longer: the worker is gone
CLOSE_WAIT_S = 30.0  # at close, how long cancelled steps get to report before actors are killed

@dataclass
class _Actor:
    handle: Any
    role: str  # "builder" | "tester"
    info: dict[str, Any] = field(default_factory=dict)  # StepWorker.describe()
    node: str = ""
    dead: bool = False


@dataclass
class _Slot:
    index: int
    actors: dict[str, _Actor] = field(default_factory=dict)
    worktrees: dict[str, int] = field(default_factory=dict)  # role -> last worktree index


class RayPool:
    def __init__(self, settings: ExecutorSettings, repo: Path, workdir: Path, repo_id: str, recipe: Recipe,
                 policy: Policy, *, first_commits: Sequence[str] = (),
                 note: Callable[[str], None] = lambda _t: None) -> None:
        self.settings = settings
        self.jobs = max(1, settings.jobs)
        self.note = note
        build, test = settings.resources()
        # every recipe but a plain command one caches its builds (as session/builds_at_hand.py assumes)
        self.split = build != test and recipe.caches_builds
        if build != test and not self.split:
            note("this recipe keeps no build artifact to move between nodes: each step builds "
                 "and tests on one worker with the test resources")
        self.resources = {"tester": test, "builder": build}
        wants = {"--test-resources": test}
        if self.split:
            wants["--build-resources"] = build
        self.cluster: Cluster = connect(settings.ray_address or "auto",
                                        needs=list(wants.values()), jobs=self.jobs)
        check_fits(self.cluster, wants, self.jobs, note)
        # a node rebuilds the recipe from its name and config (Recipe.config's contract)
        self.base_spec = WorkerSpec(
            repo=str(repo), workdir=str(workdir), repo_id=repo_id,
            recipe_name=recipe.name, recipe_config=dict(recipe.config()),
            policy=policy, settings=settings,
        )
        self.repo = Path(repo)
        self.first_commits = [c for c in first_commits if c]  # the range's bad, then its good
        self._node_locks: dict[str, threading.Lock] = {}
        self.shipped: list[dict[str, Any]] = []  # one row per bundle sent (size, seconds, node)
        self._remote = ray.remote(StepWorker)
        self._lock = threading.Lock()
        self.slots = [_Slot(i) for i in range(self.jobs)]
        for slot in self.slots:  # start them all now: Ray places them while the phase begins
            for role in self._roles():
                self._start_actor(slot, role)
        self._free: queue.Queue[int] = queue.Queue()
        for i in range(self.jobs):
            self._free.put(i)
        self._executor = ThreadPoolExecutor(max_workers=self.jobs, thread_name_prefix="tb-ray")
        self._futures: set[Future[StepResult]] = set()
        note(f"steps run on the Ray cluster at {self.cluster.address}: {self.jobs} worker(s)"
             + (f", building on {_fmt(build)} and testing on {_fmt(test)}" if self.split else ""))

    # --- actors -------------------------------------------------------------------------

    def _roles(self) -> tuple[str, ...]:
        return ("builder", "tester") if self.split else ("tester",)

    def _start_actor(self, slot: _Slot, role: str) -> _Actor:
        spec = WorkerSpec(**{**self.base_spec.__dict__,
                             "prefer_worktree": slot.worktrees.get(role, 0)})
        options = actor_options(self.resources[role])
        handle = self._remote.options(max_concurrency=4, max_restarts=0, **options).remote(spec)
        actor = _Actor(handle, role)
        slot.actors[role] = actor
        return actor

    def _actor(self, slot: _Slot, role: str) -> _Actor:
        """The slot's live actor for `role`, described (a dead one is replaced first)."""
        with self._lock:
            actor = slot.actors.get(role)
            if actor is None or actor.dead:
                actor = self._start_actor(slot, role)
        if not actor.info:
            # waits while Ray finds the actor a place; a worker that cannot start is an
            # infrastructure failure of the step (raised to the caller)
            info = ray.get(actor.handle.describe.remote())
            actor.node = self.cluster.node_name(info["node_id"])
            if self.first_commits:  # the range's last commit and its history, in one go
                self._ship(actor, info["node_id"], self.first_commits[0])
            info["worktree"] = ray.get(actor.handle.worktree.remote())
            slot.worktrees[role] = int(info["worktree"])
            actor.info = info
        return actor

    def _ship(self, actor: _Actor, node_id: str, commit: str) -> None:
        """Make sure the actor's node has `commit`: fetched there from --repo-url, else a
        bundle of what it lacks, sent once per node through the object store."""
        if ray.get(actor.handle.lacks.remote(commit)) is None:
            return
        with self._lock:
            node_lock = self._node_locks.setdefault(node_id, threading.Lock())
        with node_lock:  # the node's other workers wait, then find the commit there
            tips = ray.get(actor.handle.lacks.remote(commit))
            if tips is None:
                return
            commits = [commit] if tips else sorted({commit, *self.first_commits})
            data, seconds = bundle_for(self.repo, commits, tips)
            t0 = time.monotonic()
            ray.get(actor.handle.receive.remote(ray.put(data)))
            send_s = time.monotonic() - t0
            self.shipped.append({"node": actor.node, "bytes": len(data), "incremental": bool(tips),
                                 "bundle_s": round(seconds, 3), "send_s": round(send_s, 3)})
            self.note(f"sent {'the commits' if tips else 'the repository'} to {actor.node}: "
                      f"a {len(data) / 1024:.0f} KiB git bundle in {seconds + send_s:.1f} s")

    def _mark_dead(self, actor: _Actor) -> None:
        actor.dead = True
        with contextlib.suppress(Exception):
            ray.kill(actor.handle, no_restart=True)

    # --- steps ----------------------------------------------------------------------------

    def submit(self, request: StepRequest) -> Future[StepResult]:
        track_token(request.token)
        future = self._executor.submit(self._run, request)
        self._futures.add(future)
        future.add_done_callback(self._futures.discard)
        return future

    def _run(self, request: StepRequest) -> StepResult:
        index = self._free.get()
        try:
            slot = self.slots[index]
            return execute_with_retry(lambda d: self._attempt(slot, request, d), request.log_dir)
        finally:
            self._free.put(index)
            untrack_token(request.token)

    def _attempt(self, slot: _Slot, request: StepRequest, log_dir: Path) -> StepResult:
        log_dir.mkdir(parents=True, exist_ok=True)
        if not self.split:
            return self._stage(slot, "tester", request, log_dir, build_only=False)
        built = self._stage(slot, "builder", request, log_dir, build_only=True)
        if built.kind != Kind.PASS.value or built.cancelled:
            return built
        # the builder's cache entries of the commit, straight from its node to the tester's:
        # the driver only holds a reference to them (the bytes do not pass through it)
        builder = slot.actors["builder"]
        try:
            handover = ray.get(builder.handle.export.remote(request.commit), timeout=CALL_TIMEOUT_S)
        except Exception as exc:  # noqa: BLE001 - the builder went away with its artifact
            self._mark_dead(builder)
            return _lost(request.commit, slot.index, built.started, time.monotonic(), log_dir,
                         built.node or "", f"the Ray builder on {built.node} was lost before "
                         f"handing over its build: {_first_line(exc)}",
                         cancelled=request.token.cancelled)
        tested = self._stage(slot, "tester", request, log_dir, build_only=False,
                             handover=handover)
        install = tested.build or {}
        if not tested.cancelled and install.get("kind") == Kind.PASS.value:
            # the build the step stands for is the builder's; the tester only installed it
            tested.build = {**(built.build or {}), "node": built.node,
                            "install": {"seconds": install.get("seconds"),
                                        "reason": install.get("reason"), "node": tested.node}}
        tested.started = built.started
        tested.seconds = round(built.seconds + tested.seconds, 3)
        return tested

    def _stage(self, slot: _Slot, role: str, request: StepRequest, log_dir: Path, *,
               build_only: bool, handover: Any = None) -> StepResult:
        """One call of a slot's actor for the step: the build (builder) or the step (tester)."""
        started = now_iso("milliseconds")
        t0 = time.monotonic()
        try:
            actor = self._actor(slot, role)
        except Exception as exc:  # noqa: BLE001 - the worker could not start
            with self._lock:
                if role in slot.actors:
                    self._mark_dead(slot.actors[role])
            return _lost(request.commit, slot.index, started, t0, log_dir, "",
                         f"the Ray {role} worker could not start: {_first_line(exc)}")
        if request.token.cancelled:
            return _lost(request.commit, slot.index, started, t0, log_dir, actor.node,
                         "step cancelled", cancelled=True)
        stage = "build" if build_only else ("test" if self.split else "step")
        try:
            self._ship(actor, actor.info["node_id"], request.commit)
            if request.reference is not None and not build_only:
                self._ship(actor, actor.info["node_id"], request.reference)
            if handover is not None:
                ray.get(actor.handle.import_entries.remote(handover))
        except ray_errors.RayError as exc:
            self._mark_dead(actor)
            return _lost(request.commit, slot.index, started, t0, log_dir, actor.node,
                         f"could not prepare {request.commit[:12]} on {actor.node}: "
                         f"{_first_line(exc)}", cancelled=request.token.cancelled)
        except Exception as exc:  # noqa: BLE001 - git on the driver: the step cannot run
            return _lost(request.commit, slot.index, started, t0, log_dir, actor.node,
                         f"could not send {request.commit[:12]} to {actor.node}: "
                         f"{_first_line(exc)}")
        if request.notify is not None:
            with contextlib.suppress(Exception):
                request.notify(stage, actor.node)
        step_id = uuid.uuid4().hex[:16]
        request.token.on_cancel(lambda: actor.handle.cancel.remote(step_id))
        perf = self.base_spec.policy.perf
        paired = request.reference if perf is not None and perf.paired else None
        ref = actor.handle.run.remote(step_id, request.commit, request.record, build_only, request.baseline,
                                      paired, request.verify)
        mirror = LogMirror(log_dir)
        while True:
            ready, _ = ray.wait([ref], timeout=POLL_S)
            self._pull_logs(actor, step_id, mirror)
            if ready:
                break
        try:
            data = ray.get(ref)
        except ray_errors.RayTaskError as exc:  # raised inside the worker: a bug of ours
            return _lost(request.commit, slot.index, started, t0, log_dir, actor.node,
                         f"the Ray worker on {actor.node} failed: {_first_line(exc)}")
        except ray_errors.RayError as exc:  # the worker process or its node is gone
            self._mark_dead(actor)
            return _lost(request.commit, slot.index, started, t0, log_dir, actor.node,
                         f"the Ray worker on {actor.node} was lost mid-{stage}: {_first_line(exc)}",
                         cancelled=request.token.cancelled)
        while self._pull_logs(actor, step_id, mirror):
            pass  # the rest of the logs, to the last byte
        scratch = str(data.get("log_dir") or "")
        with contextlib.suppress(Exception):
            actor.handle.forget.remote(step_id)
        result = StepResult(**relocate(data, scratch, str(log_dir)) if scratch else data)
        result.node = actor.node
        result.worker = slot.index
        return result

    def _pull_logs(self, actor: _Actor, step_id: str, mirror: LogMirror) -> int:
        """Copy what is new in the step's logs; how many bytes (0 when nothing or lost)."""
        try:
            chunks = ray.get(actor.handle.read_logs.remote(step_id, dict(mirror.offsets)),
                             timeout=CALL_TIMEOUT_S)
        except Exception:  # noqa: BLE001 - the worker is gone: the step's result says so
            return 0
        return mirror.apply(chunks) if chunks else 0

    def keep_builds(self, commits: Iterable[str]) -> None:
        """A Ray actor's checkout is not kept for a later step: a re-test builds again (or
        installs from the shared cache)."""

    # --- the end --------------------------------------------------------------------------

    def close(self) -> None:
        """Wait (briefly) for cancelled steps to report, then end the actors and disconnect."""
        pending = [f for f in list(self._futures) if not f.done()]
        if pending:
            wait_futures(pending, timeout=CLOSE_WAIT_S)
        self._executor.shutdown(wait=False, cancel_futures=True)
        releases = []
        for slot in self.slots:
            for actor in slot.actors.values():
                if not actor.dead:
                    with contextlib.suppress(Exception):
                        releases.append(actor.handle.release.remote())
        if releases:
            with contextlib.suppress(Exception):
                ray.wait(releases, num_returns=len(releases), timeout=CALL_TIMEOUT_S)
        for slot in self.slots:
            for actor in slot.actors.values():
                with contextlib.suppress(Exception):
                    ray.kill(actor.handle, no_restart=True)
        self.cluster.close()


def _lost(commit: str, worker: int, started: str, t0: float, log_dir: Path, node: str,
          reason: str, *, cancelled: bool = False) -> StepResult:
    """An `infra` outcome that no process of the step reported (the retry decides)."""
    return StepResult(
        commit=commit, kind=Kind.INFRA, verdict=Verdict.ABORT, reason=reason[:400],
        worker=worker, started=started, finished=now_iso("milliseconds"), seconds=time.monotonic() - t0,
        log_dir=str(log_dir), cancelled=cancelled, node=node or None,
    )


def _first_line(exc: BaseException) -> str:
    cause = getattr(exc, "cause", None)  # a RayTaskError: what the worker raised
    if isinstance(cause, BaseException):
        exc = cause
    lines = [line for line in str(exc).strip().splitlines() if line.strip()]
    return f"{type(exc).__name__}: {lines[0] if lines else ''}"[:300]


def _fmt(resources: dict[str, float]) -> str:
    return "{" + ", ".join(f"{k}: {v:g}" for k, v in sorted(resources.items())) + "}"
