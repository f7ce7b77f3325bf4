"""The worker pool of a phase: the session's executor (local threads or Ray actors), given
the phase's repository, recipe and policy."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tritonbisect.builds.recipes import Recipe
from tritonbisect.core.errors import InputError
from tritonbisect.core.outcome import Policy
from tritonbisect.executors.choose import EXECUTORS, require_ray
from tritonbisect.session.phases import PhaseSpec
from tritonbisect.session.settings import BisectSettings


def make_pool(
    settings: BisectSettings,
    spec: PhaseSpec,
    repo_id: str,
    recipe: Recipe,
    policy: Policy,
    *,
    note: Callable[[str], None] = lambda _text: None,
) -> Any:
    """The worker pool of one phase for the session's executor."""
    kind = getattr(settings, "executor", "local") or "local"
    if kind == "local":
        from tritonbisect.executors.local_pool import WorkerPool

        return WorkerPool(
            spec.repo, settings.workdir, repo_id, settings.jobs, recipe, policy,
            repeat=settings.repeat, env=settings.env, timeout=settings.timeout,
            cache_dir=getattr(settings, "cache_dir", None), sandbox=bool(getattr(settings, "sandbox", False)),
        )
    if kind == "ray":
        require_ray()
        from tritonbisect.executors.ray_pool import RayPool

        return RayPool(settings, spec, repo_id, recipe, policy, note=note)
    raise InputError(f"session uses unknown executor {kind!r} (known: {', '.join(EXECUTORS)})")
