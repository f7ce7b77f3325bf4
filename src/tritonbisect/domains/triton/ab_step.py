"""One-step A/B checks at a Triton culprit: the same commit with one thing swapped back.

* the NVIDIA toolchain: a culprit that moves cmake/nvidia-toolchain-version.json is tested
  again with the previous toolchain (TRITON_PTXAS_PATH, TRITON_PTXAS_BLACKWELL_PATH): it
  passes, so the toolchain is the cause;
* a backend LLVM (`--backend-llvm core`): a culprit that moves a backend's pin is tested
  again with the backend's codegen library built from the core LLVM: it passes, so the
  backend LLVM is the cause; it fails too, so the regression is Triton's own.

The check is one step of the phase's recipe with a changed config, run by a worker of the
session's executor (its build is cached as any other) and journaled (role "ab", its label
kept), so that a resumed session reads it instead of running it again.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import click

ROLE_AB = "ab"


def journaled(session: Any, phase: str, commit: str, label: str) -> dict[str, Any] | None:
    for rec in reversed(session.records(phase)):
        if rec.get("role") == ROLE_AB and rec.get("commit") == commit and rec.get("ab") == label \
                and rec.get("verdict") != "abort":
            return rec
    return None


def run_ab_step(session: Any, phase: str, repo: Path, commit: str, recipe_name: str,
                config: Mapping[str, Any], label: str) -> dict[str, Any] | None:
    """Test `commit` once with the recipe `recipe_name` configured by `config`; the journal
    record (None: the step could not run, which is said)."""
    from tritonbisect.builds.recipes import recipe_from_config
    from tritonbisect.core.history import History
    from tritonbisect.executors.runner import StepRequest
    from tritonbisect.session.phases import PhaseSpec
    from tritonbisect.session.worker_pool import phase_pool

    rec = journaled(session, phase, commit, label)
    if rec is not None:
        return rec
    recipe = recipe_from_config(recipe_name, dict(config))
    history = History(repo)
    spec = PhaseSpec(name=phase, repo=history.root, good=commit, bad=commit, recipe_name=recipe_name,
                     recipe_config=dict(config))
    steps = session.dir / "steps"
    n = len(list(steps.iterdir())) + 1 if steps.is_dir() else 1
    log_dir = steps / f"{n:04d}-{phase}-ab-{commit[:12]}"
    click.echo(f"A/B: testing {commit[:12]} with {label} (one step)", err=True)
    pool = phase_pool(session.settings, spec, history.repo_id(), recipe, session.settings.policy(),
                      note=lambda text: click.echo(text, err=True))
    request = StepRequest(commit=commit, log_dir=log_dir)
    try:
        result = pool.submit(request).result()
    except BaseException:
        request.token.cancel()  # Ctrl-C: stop the build or test before the pool waits for it
        raise
    finally:
        pool.close()
    seq = max((int(r.get("seq", 0)) for r in session.records()), default=0) + 1
    rec = {"seq": seq, "phase": phase, "role": ROLE_AB, "round": None}
    rec.update(result.to_record())
    rec["ab"] = label
    session.journal.append(rec)
    if rec.get("verdict") not in ("good", "bad"):
        click.echo(f"A/B with {label}: could not decide ({rec.get('verdict')}: {rec.get('reason')})", err=True)
        return None
    return rec


__all__ = ["ROLE_AB", "journaled", "run_ab_step"]
