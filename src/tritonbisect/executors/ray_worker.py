"""One worker slot on a Ray node (the body of a Ray actor; `ray_pool` makes it remote).

It owns a worktree of the bisected repository (and, through the recipe, the build folders
keyed by that worktree) for the whole session, so incremental builds stay incremental. A
step's logs go to a scratch folder on the node, which the driver copies as they grow
(`read_logs`) and drops when it has them all (`forget`). `cancel` kills the process groups
of a step, as Ctrl-C or a step whose verdict no longer matters does locally. Methods run on
several threads of the actor: `run` on one, `read_logs`/`cancel` beside it.

Nothing of the driver's filesystem is used: the repository is this node's clone
(`ray_repo.NodeRepo`, filled from --repo-url or from bundles the driver sends), and the
worktrees, build folders, step scratch and (unless --cache-dir names a shared directory or
--cache-url an object store) the artifact cache live in the node's folder. A builder hands
its artifact to a tester through Ray's object store (`export` / `import_entries`).
"""

from __future__ import annotations

import dataclasses
import os
import shutil
import socket
import threading
from pathlib import Path
from typing import Any

from tritonbisect.builds.recipes import recipe_from_config
from tritonbisect.core.outcome import Policy
from tritonbisect.core.process import CancelToken
from tritonbisect.core.secrets import pass_through
from tritonbisect.executors.logsync import read_new
from tritonbisect.executors.pool_settings import ExecutorSettings
from tritonbisect.executors.ray_repo import NodeRepo, node_root
from tritonbisect.executors.runner import StepSettings, run_in_worktree
from tritonbisect.executors.worktree import Worktree, acquire_worktree


@dataclasses.dataclass
class WorkerSpec:
    """Everything an actor needs to rebuild the phase's step runner on its node."""

    repo: str
    workdir: str
    repo_id: str
    recipe_name: str
    recipe_config: dict[str, Any]
    policy: Policy  # the whole policy: with --regress perf it carries how steps are sampled and judged
    settings: ExecutorSettings  # repeat, env, timeout, cache, sandbox, --repo-url
    prefer_worktree: int = 0  # take this worktree slot when free (a dead worker's, say)


class StepWorker:
    def __init__(self, spec: WorkerSpec) -> None:
        self.spec = spec
        root = node_root()
        self.repo = NodeRepo(root, spec.repo_id, spec.settings.repo_url, local=spec.repo)
        self.workdir = root / "work"
        self.recipe = recipe_from_config(spec.recipe_name, spec.recipe_config)
        pass_through(spec.settings.pass_env)  # the secrets the user lets builds and tests see
        self.settings = StepSettings(
            policy=spec.policy,
            repeat=spec.settings.repeat, env=dict(spec.settings.env), timeout=spec.settings.timeout,
            workdir=self.workdir, cache_dir=spec.settings.cache_dir, sandbox=spec.settings.sandbox,
        )
        self._lock = threading.Lock()
        self._tokens: dict[str, CancelToken] = {}
        self._worktree: Worktree | None = None
        # --perf-design paired: a second worktree for the references, and whose build it holds
        self._ref_worktree: Worktree | None = None
        self._ref_holds: tuple[str, str | None] | None = None  # (commit, its build log)
        self.scratch = self.workdir / "ray-steps" / f"{socket.gethostname()}-{os.getpid()}"

    def _wt(self) -> Worktree:
        with self._lock:
            if self._worktree is None:
                with self.repo.locked():  # the node's other workers add theirs beside it
                    self._worktree = acquire_worktree(
                        self.repo.path, self.workdir, self.spec.repo_id,
                        start=self.spec.prefer_worktree, sandboxed=self.spec.settings.sandbox,
                    )
            return self._worktree

    def _ref_wt(self) -> Worktree:
        taken = self._wt().index  # (takes the lock itself)
        with self._lock:
            if self._ref_worktree is None:
                with self.repo.locked():
                    wt = acquire_worktree(self.repo.path, self.workdir, self.spec.repo_id,
                                          start=self.spec.prefer_worktree)
                    while wt.index == taken:  # pragma: no cover (flock is per open file)
                        wt = acquire_worktree(self.repo.path, self.workdir, self.spec.repo_id, start=taken + 1)
                self._ref_worktree = wt
            return self._ref_worktree

    def describe(self) -> dict[str, Any]:
        """Where this worker lives (asked once, when the driver first uses it)."""
        import ray

        from tritonbisect import __version__

        return {
            "node_id": ray.get_runtime_context().get_node_id(),
            "host": socket.gethostname(),
            "pid": os.getpid(),
            "version": __version__,
        }

    def worktree(self) -> int:
        """Take this worker's worktree (once the node has a commit); its slot index."""
        return self._wt().index

    # --- the repository on this node (see ray_repo) ---------------------------------------

    def lacks(self, commit: str) -> list[str] | None:
        return self.repo.lacks(commit)

    def receive(self, bundle: bytes) -> None:
        self.repo.receive(bundle)

    # --- artifacts between builder and tester ---------------------------------------------

    def _local_cache(self) -> Any:
        """This node's own directory cache, or None when the session's cache is shared
        (a --cache-dir every node reaches, or an object store): nothing to hand over."""
        if self.spec.settings.cache_dir:
            return None
        from tritonbisect.builds.store import open_cache

        return open_cache(None, workdir=self.workdir)

    def export(self, commit: str) -> list[Any]:
        """The cache entries built from `commit` here, packed and put in the object store:
        [a reference to them], or [] when the cache is shared (nothing to hand over)."""
        import ray

        from tritonbisect.builds.cache_transfer import keys_of_commit, pack

        cache = self._local_cache()
        return [ray.put(pack(cache, keys_of_commit(cache, commit)))] if cache is not None else []

    def import_entries(self, box: list[Any]) -> list[str]:
        """Put what `export` handed over (fetched from the builder's node) in this cache."""
        import ray

        from tritonbisect.builds.cache_transfer import unpack

        cache = self._local_cache()
        if cache is None or not box:
            return []
        return unpack(cache, ray.get(box[0]))

    def _token(self, step_id: str) -> CancelToken:
        with self._lock:
            return self._tokens.setdefault(step_id, CancelToken())

    def run(self, step_id: str, commit: str, record: bool, build_only: bool,
            baseline: tuple[float, ...] | None = None, reference: str | None = None,
            verify: bool = False) -> dict[str, Any]:
        """Check out and run the step (or only its build); the StepResult as a dict, with
        paths in this node's scratch folder (`scratch_of(step_id)`). With `reference` the
        runs are pairs, the reference in this worker's second worktree (kept there)."""
        token = self._token(step_id)
        log_dir = self.scratch_of(step_id)
        side = None
        if reference is not None and not build_only:
            side = self._reference(reference, log_dir, token)
            if isinstance(side, str):
                from tritonbisect.core.clock import now_iso
                from tritonbisect.core.outcome import Kind, Verdict
                from tritonbisect.executors.runner import StepResult

                now = now_iso("milliseconds")
                return dataclasses.asdict(StepResult(
                    commit=commit, kind=Kind.INFRA, verdict=Verdict.ABORT, reason=side, worker=-1, started=now,
                    finished=now, seconds=0.0, log_dir=str(log_dir), cancelled=token.cancelled))
        result = run_in_worktree(
            self._wt, self.recipe, commit, log_dir, self.settings,
            token=token, record=record, baseline=baseline, build_only=build_only,
            reference=side, verify=verify,
        )
        return dataclasses.asdict(result)

    def _reference(self, commit: str, log_dir: Path, token: CancelToken) -> Any:
        from tritonbisect.builds.recipes import PrepareResult
        from tritonbisect.core.outcome import Kind
        from tritonbisect.executors.runner import prepare_reference

        held = self._ref_holds
        kept = None
        if held is not None and held[0] == commit:
            kept = PrepareResult(Kind.PASS, "the reference's build, kept in this worker's second worktree",
                                 cached=True, log=Path(held[1]) if held[1] else None, kept=True)
        self._ref_holds = None
        side = prepare_reference(self._ref_wt, self.recipe, commit, log_dir, self.settings, token=token, kept=kept)
        if not isinstance(side, str):
            self._ref_holds = (commit, side.build.get("log"))
        return side

    def scratch_of(self, step_id: str) -> Path:
        return self.scratch / step_id

    def read_logs(self, step_id: str, offsets: dict[str, int]) -> dict[str, tuple[int, bytes]]:
        return read_new(self.scratch_of(step_id), offsets)

    def cancel(self, step_id: str) -> bool:
        """Kill the step's processes (and any it would start later)."""
        self._token(step_id).cancel()
        return True

    def forget(self, step_id: str) -> None:
        with self._lock:
            self._tokens.pop(step_id, None)
        shutil.rmtree(self.scratch_of(step_id), ignore_errors=True)

    def release(self) -> None:
        """End of the session: cancel what still runs, unlock the worktree, drop the scratch."""
        with self._lock:
            tokens = list(self._tokens.values())
            trees = [self._worktree, self._ref_worktree]
            self._worktree = self._ref_worktree = None
        for token in tokens:
            token.cancel()
        for wt in trees:
            if wt is not None:
                wt.release()
        shutil.rmtree(self.scratch, ignore_errors=True)
