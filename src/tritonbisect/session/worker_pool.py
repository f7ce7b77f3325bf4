"""The worker pool of a phase: the session's executor (local threads or Ray actors), given
the phase's repository, recipe and policy."""

from __future__ import annotations

from collections.abc import Callable

from tritonbisect.builds.recipes import Recipe
from tritonbisect.core.outcome import Policy
from tritonbisect.executors.choose import StepPool, make_pool
from tritonbisect.executors.pool_settings import ExecutorSettings
from tritonbisect.session.phases import PhaseSpec
from tritonbisect.session.settings import BisectSettings


def phase_pool(
    settings: BisectSettings,
    spec: PhaseSpec,
    repo_id: str,
    recipe: Recipe,
    policy: Policy,
    *,
    executor: ExecutorSettings | None = None,
    note: Callable[[str], None] = lambda _text: None,
) -> StepPool:
    """The worker pool of one phase, on the session's executor (or `executor`, a variant of it)."""
    return make_pool(
        executor or settings.executor, spec.repo, settings.workdir, repo_id, recipe, policy,
        first_commits=(spec.bad, spec.good), note=note,
    )
