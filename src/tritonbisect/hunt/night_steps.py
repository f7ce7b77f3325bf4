"""The night's single steps: the head, its re-tests, the last good; journaled in the night's
folder, with the bisect's own recipe, settings and worktrees (so a build made tonight is in
the artifact cache when the bisect needs it)."""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from pathlib import Path
from typing import Any

from tritonbisect.executors.choose import StepPool
from tritonbisect.session.journal import Journal
from tritonbisect.session.observer import Display
from tritonbisect.session.session import PhaseSpec
from tritonbisect.session.settings import BisectSettings

NIGHT_JOURNAL = "night.jsonl"
PHASE = "hunt"

# roles of the night's steps
ROLE_REFERENCE = "reference"  # the last good, measured first (perf samples, an oracle's golden)
ROLE_HEAD = "head"
ROLE_RETEST = "retest-head"  # --confirm: the red head again
ROLE_LAST_GOOD = "last-good"  # does the last good still pass? (else: the environment changed)


class Prober:
    def __init__(self, spec: PhaseSpec, settings: BisectSettings, night_dir: Path, ui: Display,
                 subject: Callable[[str], str]) -> None:
        from tritonbisect.builds.recipes import recipe_from_config

        self.spec = spec
        self.settings = settings
        self.dir = night_dir
        self.ui = ui
        self.subject = subject
        self.recipe = recipe_from_config(spec.recipe_name, spec.recipe_config)
        self.journal = Journal(night_dir / NIGHT_JOURNAL)
        self.records: list[dict[str, Any]] = []
        self._pool: StepPool | None = None

    def _make_pool(self) -> StepPool:
        """One worker on the session's executor (local threads, or a Ray actor)."""
        import dataclasses

        from tritonbisect.core.history import History
        from tritonbisect.session.worker_pool import phase_pool

        s = self.settings
        from tritonbisect.session.phase_run import paired_or_not

        policy = paired_or_not(s.policy(), self.recipe, self.ui)
        return phase_pool(s, self.spec, History(self.spec.repo).repo_id(), self.recipe, policy,
                          executor=dataclasses.replace(s.executor, jobs=1),
                          note=self.ui.note)

    def step(
        self, commit: str, role: str, *, record: bool = False, baseline: tuple[float, ...] | None = None,
        reference: str | None = None, verify: bool = False,
    ) -> dict[str, Any]:
        """Run one step now; its journal record (`reference`, `verify`: paired, see StepRequest)."""
        from tritonbisect.executors.runner import StepRequest

        if self._pool is None:
            self._pool = self._make_pool()
        seq = len(self.records) + 1
        log_dir = self.dir / "steps" / f"{seq:03d}-{role}-{commit[:12]}"
        request = StepRequest(commit=commit, log_dir=log_dir, record=record, baseline=baseline,
                              reference=reference, verify=verify)
        subject = self.subject(commit)
        self.ui.step_started(PHASE, commit, role, subject)
        result = _wait(self._pool.submit(request))
        rec = {"seq": seq, "phase": PHASE, "role": role, "round": None, **result.to_record()}
        self.journal.append(rec)
        self.records.append(rec)
        self.ui.step_finished(PHASE, rec, subject, None)
        return rec

    def close(self) -> None:
        """Give the worktree back (the bisect's workers take it next)."""
        if self._pool is not None:
            self._pool.close()
            self._pool = None


def _wait(future: Future) -> Any:
    # a short timeout keeps the main thread responsive to Ctrl-C
    while True:
        try:
            return future.result(timeout=0.5)
        except FutureTimeout:
            continue


def as_endpoint(rec: dict[str, Any], phase: str, seq: int) -> dict[str, Any]:
    """A night step as an endpoint record of the bisect session's journal: the session then
    does not test that endpoint again."""
    out = dict(rec)
    out.update(seq=seq, phase=phase, role="endpoint", round=0, hunt_role=rec.get("role"))
    return out
