"""Where steps run: `local` (worker threads on this machine) or `ray` (actors on a cluster).

The driver (this process) always keeps the search, the journal and the session; an executor
only runs steps. Both executors give the phase the same pool: `submit(StepRequest)` returns
a future of the StepResult, `close()` ends the workers. Ray is imported only by the `ray`
executor (`ray_pool`), so it stays an optional extra: `pip install 'tritonbisect[ray]'`.
"""

from __future__ import annotations

import importlib.util
import json
import re
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import Future
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from tritonbisect.core.errors import InputError
from tritonbisect.executors.pool_settings import ExecutorSettings

if TYPE_CHECKING:  # pragma: no cover
    from tritonbisect.builds.recipes import Recipe
    from tritonbisect.core.outcome import Policy
    from tritonbisect.executors.runner import StepRequest, StepResult

EXECUTORS = ("local", "ray")


class StepPool(Protocol):
    """What a phase uses of its executor: a step submitted is a future of its result."""

    def submit(self, request: StepRequest) -> Future[StepResult]: ...

    def keep_builds(self, commits: Iterable[str]) -> None:
        """Keep these commits' builds where they are, for a request that may reuse them
        (`StepRequest.reuse`); a pool that keeps none builds again."""
        ...

    def close(self) -> None: ...

RAY_INSTALL_HINT = (
    "--executor ray needs Ray, which is not installed here: pip install 'tritonbisect[ray]'"
)


def ray_available() -> bool:
    """Whether `import ray` would work, without importing it (it takes a second or two)."""
    try:
        return importlib.util.find_spec("ray") is not None
    except (ImportError, ValueError):  # ValueError: sys.modules["ray"] is None
        return False


def require_ray() -> None:
    if not ray_available():
        raise InputError(RAY_INSTALL_HINT)


_NAME = re.compile(r"^[A-Za-z_][\w.:/-]*$")


def parse_resources(text: str | None, option: str) -> dict[str, float] | None:
    """`{"CPU": 32}` (JSON) or `CPU=32,builder=1` -> {name: amount}; None when not given."""
    if text is None or not text.strip():
        return None
    text = text.strip()
    try:
        if text.startswith("{"):
            data = json.loads(text)
            if not isinstance(data, dict):
                raise ValueError
        else:
            data = {}
            for part in text.split(","):
                name, sep, amount = part.partition("=")
                if not sep:
                    raise ValueError
                data[name.strip()] = amount.strip()
        out = {str(k): float(v) for k, v in data.items()}
    except (ValueError, TypeError):
        raise InputError(
            f"{option} {text!r}: give a JSON object such as '{{\"CPU\": 32}}' or "
            "'{\"GPU\": 1}', or NAME=AMOUNT pairs such as builder=1,CPU=8"
        ) from None
    for resource, value in out.items():
        if not _NAME.match(resource) or not value > 0 or value != value:
            raise InputError(f"{option}: {resource}={value:g} is not a resource name with a positive amount")
    return out


def check_address(address: str | None) -> str:
    """auto | local | HOST:PORT | ray://HOST:PORT, validated."""
    address = (address or "auto").strip()
    if address in ("auto", "local"):
        return address
    body = address.removeprefix("ray://")
    host, sep, port = body.rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise InputError(
            f"--ray-address {address!r}: give auto (a cluster started with `ray start`), "
            "local (a private one on this machine), or HOST:PORT of the head node"
        )
    return address


def make_pool(
    settings: ExecutorSettings,
    repo: Path,
    workdir: Path,
    repo_id: str,
    recipe: Recipe,
    policy: Policy,
    *,
    first_commits: Sequence[str] = (),
    note: Callable[[str], None] = lambda _text: None,
) -> StepPool:
    """The worker pool of `settings.kind` for steps on `repo` with `recipe`; a Ray node is
    sent `first_commits` (the range's bad, then its good) before anything else."""
    if settings.kind == "local":
        from tritonbisect.executors.local_pool import WorkerPool

        return WorkerPool(settings, repo, workdir, repo_id, recipe, policy)
    if settings.kind == "ray":
        require_ray()
        from tritonbisect.executors.ray_pool import RayPool

        return RayPool(settings, repo, workdir, repo_id, recipe, policy, first_commits=first_commits, note=note)
    raise InputError(f"session uses unknown executor {settings.kind!r} (known: {', '.join(EXECUTORS)})")
