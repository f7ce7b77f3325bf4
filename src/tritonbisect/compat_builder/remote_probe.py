"""compat-builder's probes on a Ray cluster (`--executor ray`): each probe (LLVM build, Triton
build against it, install, smoke) runs in one Ray actor holding --build-resources, which keeps
its LLVM and Triton worktrees and build folders for the whole session.

`RemoteProber` has the Prober's interface (`probe`, `llvm_cached`), so the mapper and the
fixer do not know where probes run. The probe's logs are written on the node and copied into
the probe folder of the session as they grow. A worker lost mid-probe (process killed, node
gone) is replaced and the probe runs again once; a second loss aborts (exit 4). Ctrl-C kills
the probe's processes on the node before the interrupt goes on.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import uuid
from dataclasses import asdict
from pathlib import Path
from typing import Any

import ray
from ray import exceptions as ray_errors

from tritonbisect.compat_builder.probe import Prober, ProbeResult
from tritonbisect.core.errors import AbortError, TritonBisectError
from tritonbisect.core.process import kill_child_groups
from tritonbisect.executors.logsync import LogMirror, read_new, relocate
from tritonbisect.executors.ray_cluster import actor_options, check_fits, connect

POLL_S = 0.5


class ProbeWorker:
    """The actor: a Prober on its node (kwargs as the driver's Prober was made with)."""

    def __init__(self, kwargs: dict[str, Any]) -> None:
        self.prober = Prober(**kwargs)
        self.scratch = Path(kwargs["workdir"]) / "ray-probes" / f"{socket.gethostname()}-{os.getpid()}"

    def where(self) -> dict[str, Any]:
        return {"node_id": ray.get_runtime_context().get_node_id(), "pid": os.getpid()}

    def probe(self, probe_id: str, triton: str, llvm: str, clean: bool) -> dict[str, Any]:
        log_dir = self.scratch / probe_id
        try:
            result = self.prober.probe(triton, llvm, log_dir, clean=clean)
        except TritonBisectError as exc:  # AbortError: a machine problem, said as such
            return {"error": exc.message, "exit_code": exc.exit_code, "log_dir": str(log_dir)}
        return {"result": asdict(result), "log_dir": str(log_dir)}

    def read_logs(self, probe_id: str, offsets: dict[str, int]) -> dict[str, tuple[int, bytes]]:
        return read_new(self.scratch / probe_id, offsets)

    def cancel(self) -> list[int]:
        return kill_child_groups()

    def forget(self, probe_id: str) -> None:
        shutil.rmtree(self.scratch / probe_id, ignore_errors=True)


class RemoteProber:
    def __init__(self, prober_kwargs: dict[str, Any], *, address: str,
                 build_resources: dict[str, float], log=lambda _m: None) -> None:
        self.kwargs = {k: (str(v) if isinstance(v, Path) else v) for k, v in prober_kwargs.items()}
        self.local = Prober(**prober_kwargs)  # cache look-ups on the driver (shared cache)
        self.resources = dict(build_resources)
        self.log = log
        self.cluster = connect(address, needs=[self.resources], jobs=1)
        check_fits(self.cluster, {"--build-resources": self.resources}, 1, log)
        self._remote = ray.remote(ProbeWorker)
        self._actor: Any = None
        self.node = ""

    def llvm_cached(self, commits: list[str]) -> set[str]:
        return self.local.llvm_cached(commits)

    def _worker(self) -> Any:
        if self._actor is None:
            self._actor = self._remote.options(max_concurrency=3, max_restarts=0,
                                               **actor_options(self.resources)).remote(self.kwargs)
            info = ray.get(self._actor.where.remote())
            self.node = self.cluster.node_name(info["node_id"])
            self.log(f"probes run on the Ray cluster at {self.cluster.address}, node {self.node}")
        return self._actor

    def _drop(self) -> None:
        if self._actor is not None:
            with contextlib.suppress(Exception):
                ray.kill(self._actor, no_restart=True)
        self._actor = None

    def probe(self, triton_commit: str, llvm_commit: str, log_dir: Path, *, clean: bool = False) -> ProbeResult:
        lost = ""
        for attempt in (1, 2):
            try:
                return self._probe_once(triton_commit, llvm_commit, log_dir, clean)
            except ray_errors.RayTaskError as exc:
                raise AbortError(f"the Ray worker probing on {self.node} failed: {_line(exc)}") from None
            except ray_errors.RayError as exc:  # the worker or its node is gone
                lost = f"the Ray worker probing on {self.node or '?'} was lost: {_line(exc)}"
                self._drop()
                if attempt == 1:
                    self.log(f"{lost}; probing again on a new worker")
        raise AbortError(f"probe of Triton {triton_commit[:12]} at LLVM {llvm_commit[:12]}: "
                         f"infrastructure failure, twice: {lost}")

    def _probe_once(self, triton: str, llvm: str, log_dir: Path, clean: bool) -> ProbeResult:
        actor = self._worker()
        probe_id = uuid.uuid4().hex[:16]
        ref = actor.probe.remote(probe_id, triton, llvm, clean)
        mirror = LogMirror(Path(log_dir))
        try:
            while True:
                ready, _ = ray.wait([ref], timeout=POLL_S)
                self._pull(actor, probe_id, mirror)
                if ready:
                    break
        except KeyboardInterrupt:
            with contextlib.suppress(Exception):  # kill the probe's processes on the node
                ray.get(actor.cancel.remote(), timeout=10)
            raise
        data = ray.get(ref)
        while self._pull(actor, probe_id, mirror):
            pass
        with contextlib.suppress(Exception):  # waited for: a worker killed at shutdown would leave it behind
            ray.get(actor.forget.remote(probe_id), timeout=30)
        data = relocate(data, data.get("log_dir") or "", str(log_dir)) if data.get("log_dir") else data
        if "error" in data:
            raise AbortError(f"{data['error']} (on {self.node})")
        fields = dict(data["result"])
        for name in ("log", "source"):
            if fields.get(name):
                fields[name] = Path(fields[name])
        return ProbeResult(**fields)

    def _pull(self, actor: Any, probe_id: str, mirror: LogMirror) -> int:
        try:
            chunks = ray.get(actor.read_logs.remote(probe_id, dict(mirror.offsets)), timeout=60)
        except Exception:  # noqa: BLE001 - a lost worker: the probe's result says so
            return 0
        return mirror.apply(chunks) if chunks else 0

    def close(self) -> None:
        self._drop()
        self.cluster.close()


def _line(exc: BaseException) -> str:
    lines = [line for line in str(exc).strip().splitlines() if line.strip()]
    return f"{type(exc).__name__}: {lines[0] if lines else ''}"[:300]
