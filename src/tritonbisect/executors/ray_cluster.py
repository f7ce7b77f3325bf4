"""The driver's connection to a Ray cluster: reach it (or start a private one), check that it
can place the workers asked for, name its nodes, and let go of it at the end.

`--ray-address auto` joins the cluster `ray start` made on this machine (or $RAY_ADDRESS);
HOST:PORT joins a head node elsewhere; `local` starts a private single-machine cluster in a
temporary folder of its own and stops it afterwards. A `kill -9` of the driver ends a
private cluster too (Ray ties its processes to the driver's life), and `resume` starts a new
one; a shared cluster stays and `resume` joins it again.
"""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tritonbisect.core.errors import InputError

# resources Ray knows by name; the rest are custom resources such as {"builder": 1}
_BUILTIN = ("CPU", "GPU", "memory", "object_store_memory")


@dataclass
class Cluster:
    address: str
    private: bool
    temp_dir: Path | None = None
    nodes: dict[str, dict[str, Any]] = field(default_factory=dict)  # node id -> ray.nodes() row

    def close(self) -> None:
        import ray

        with contextlib.suppress(Exception):
            ray.shutdown()
        if self.temp_dir is not None:
            shutil.rmtree(self.temp_dir, ignore_errors=True)

    def node_name(self, node_id: str) -> str:
        """A short, human name: the node's address, and its id where addresses repeat."""
        row = self.nodes.get(node_id)
        if row is None:
            self.refresh()
            row = self.nodes.get(node_id, {})
        host = row.get("NodeManagerHostname") or row.get("NodeManagerAddress") or "?"
        same_host = [r for r in self.nodes.values()
                     if (r.get("NodeManagerHostname") or r.get("NodeManagerAddress")) == host]
        return f"{host}/{node_id[:6]}" if len(same_host) > 1 else str(host)

    def refresh(self) -> None:
        import ray

        with contextlib.suppress(Exception):
            self.nodes = {n["NodeID"]: n for n in ray.nodes() if n.get("Alive")}


_PRIVATE_PREFIX = "tbray-"


def processes_using(folder: Path) -> list[int]:
    """Processes with a file open, their working directory, or their command line under
    `folder` (Linux /proc; elsewhere none)."""
    root = str(folder)
    found: list[int] = []
    proc = Path("/proc")
    if not proc.is_dir():
        return found
    for entry in proc.iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            if root.encode() in (entry / "cmdline").read_bytes() or \
                    os.readlink(entry / "cwd").startswith(root):
                found.append(int(entry.name))
                continue
            for fd in (entry / "fd").iterdir():
                with contextlib.suppress(OSError):
                    if os.readlink(fd).startswith(root):
                        found.append(int(entry.name))
                        break
        except OSError:
            continue
    return found


def reap_private_leftovers(tmp: Path = Path("/tmp")) -> list[int]:
    """End what is left of private clusters whose driver died (`kill -9`): Ray ends the
    cluster's core processes with the driver, but a node's agents can outlive it. Only
    processes using the folder of such a cluster (`tbray-<dead driver pid>-*`) are killed."""
    import signal

    killed: list[int] = []
    with contextlib.suppress(OSError):
        for folder in tmp.glob(f"{_PRIVATE_PREFIX}*-*"):
            pid = folder.name[len(_PRIVATE_PREFIX):].split("-", 1)[0]
            if not pid.isdigit() or _pid_alive(int(pid)):
                continue
            for leftover in processes_using(folder):
                with contextlib.suppress(OSError):
                    os.kill(leftover, signal.SIGKILL)
                    killed.append(leftover)
            shutil.rmtree(folder, ignore_errors=True)
    return killed


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def actor_options(resources: Mapping[str, float]) -> dict[str, Any]:
    """Ray actor options asking for exactly `resources`."""
    opts: dict[str, Any] = {"num_cpus": float(resources.get("CPU", 0))}
    if resources.get("GPU"):
        opts["num_gpus"] = float(resources["GPU"])
    if resources.get("memory"):
        opts["memory"] = float(resources["memory"])
    custom = {k: float(v) for k, v in resources.items() if k not in _BUILTIN}
    if custom:
        opts["resources"] = custom
    return opts


def private_resources(needs: Sequence[Mapping[str, float]], jobs: int) -> tuple[int, dict[str, float]]:
    """(CPUs, custom resources) of a private cluster on which `jobs` workers of each kind in
    `needs` fit: this machine plays every role (builder and tester alike). GPUs are never
    made up: they are what Ray detects."""
    cpus = max(os.cpu_count() or 1, int(sum(n.get("CPU", 0) for n in needs) * jobs + 0.999))
    custom: dict[str, float] = {}
    for need in needs:
        for name, amount in need.items():
            if name not in _BUILTIN:
                custom[name] = custom.get(name, 0.0) + amount * jobs
    return cpus, custom


def connect(address: str, *, needs: Sequence[Mapping[str, float]], jobs: int) -> Cluster:
    """Connect the driver (ray.init) to the cluster at `address`; see the module docstring."""
    import signal
    import threading

    if threading.current_thread() is not threading.main_thread():
        return _connect(address, needs=needs, jobs=jobs)
    # ray.init puts its own SIGTERM handler (sys.exit) in place of the session's, which
    # turns SIGTERM into an interrupt that saves the state and prints the resume command
    previous = signal.getsignal(signal.SIGTERM)
    try:
        return _connect(address, needs=needs, jobs=jobs)
    finally:
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)


def _connect(address: str, *, needs: Sequence[Mapping[str, float]], jobs: int) -> Cluster:
    import ray

    if ray.is_initialized():  # e.g. a previous phase of this process
        ray.shutdown()
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")  # no network: do not try to report
    quiet: dict[str, Any] = {"logging_level": logging.ERROR, "log_to_driver": False}
    if address == "local":
        reap_private_leftovers()
        cpus, custom = private_resources(needs, jobs)
        # a short path: Ray's unix sockets live under it (108 bytes at most)
        # (named after the driver, so that what it leaves behind can be found by its pid)
        temp_dir = Path(tempfile.mkdtemp(prefix=f"{_PRIVATE_PREFIX}{os.getpid()}-",
                                         dir="/tmp" if os.path.isdir("/tmp") else None))
        try:
            ray.init(num_cpus=cpus, resources=custom or None, _temp_dir=str(temp_dir),
                     include_dashboard=False, **quiet)
        except Exception as exc:
            shutil.rmtree(temp_dir, ignore_errors=True)
            raise InputError(f"could not start a private Ray cluster: {_first_line(exc)}") from None
        cluster = Cluster("local", private=True, temp_dir=temp_dir)
    else:
        _check_reachable(address)
        try:
            ray.init(address=address, **quiet)  # never None: that would start a new cluster
        except Exception as exc:  # ConnectionError, or a RuntimeError from Ray's client
            raise InputError(
                f"cannot reach the Ray cluster at {address}: {_first_line(exc)}; start one with "
                "`ray start --head` or give --ray-address HOST:PORT (or local)"
            ) from None
        cluster = Cluster(address, private=False)
    cluster.refresh()
    return cluster


def _check_reachable(address: str, timeout: float = 5.0) -> None:
    """Fail in seconds on a head node that does not answer (Ray itself retries for minutes)."""
    import socket

    if address == "auto":
        return
    host, _sep, port = address.removeprefix("ray://").rpartition(":")
    try:
        socket.create_connection((host.strip("[]"), int(port)), timeout=timeout).close()
    except OSError as exc:
        raise InputError(
            f"cannot reach the Ray cluster at {address}: {exc.strerror or exc}; start one with "
            "`ray start --head` or give --ray-address HOST:PORT (or local)"
        ) from None


def check_fits(cluster: Cluster, wants: Mapping[str, Mapping[str, float]], jobs: int,
               note: Any = None) -> None:
    """InputError when no node can host a worker of some kind; a note when fewer than `jobs`
    workers of a kind fit at once (the others wait for a place)."""
    rows = list(cluster.nodes.values())
    for option, need in wants.items():
        fits = [_how_many(r.get("Resources") or {}, need) for r in rows]
        if not any(fits):
            have = "; ".join(
                f"{cluster.node_name(r['NodeID'])}: {_fmt(r.get('Resources') or {})}" for r in rows
            ) or "no node"
            cluster.close()
            raise InputError(
                f"no node of the Ray cluster at {cluster.address} has {_fmt(need)} ({option}); "
                f"it has {have}"
            )
        if sum(fits) < jobs and note is not None:
            note(f"the cluster has room for {sum(fits)} of the {jobs} workers asking for "
                 f"{_fmt(need)} ({option}); the others wait for a place")


def _how_many(available: Mapping[str, float], need: Mapping[str, float]) -> int:
    counts = []
    for name, amount in need.items():
        if amount <= 0:
            continue
        counts.append(int(float(available.get(name, 0)) // amount))
    return min(counts) if counts else 1 << 20


def _fmt(resources: Mapping[str, float]) -> str:
    shown = {k: (int(v) if float(v).is_integer() else v) for k, v in resources.items()
             if not k.startswith("node:") and k not in ("memory", "object_store_memory")}
    return "{" + ", ".join(f"{k}: {v}" for k, v in sorted(shown.items())) + "}"


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0] if text else ''}"[:300]
