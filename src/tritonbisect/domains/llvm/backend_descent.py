"""A Triton culprit that moves a backend's own LLVM pin: the A/B with the core LLVM, and the
descent into that backend's LLVM repository (ROCm/llvm-project for AMD).

    --backend-llvm core   first, one step: the culprit with the backend's codegen library
                          built from the core LLVM. Passes: the backend LLVM is the cause.
                          Fails too: the regression is Triton's own; no descent.
    --amd-llvm-dir DIR    a phase "<backend>-llvm" bisects DIR between the two pins (their
                          upstream bases with the fork's patches replayed, when a pin is a
                          fork commit), testing the culprit's Triton with the library built
                          against each commit (backend_recipe.py): no step rebuilds Triton.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from tritonbisect.core.history import History
from tritonbisect.domains.llvm.backend_recipe import RECIPE
from tritonbisect.domains.llvm.bisector import fork_endpoints, resolve_llvm
from tritonbisect.domains.llvm.fork import ForkRange
from tritonbisect.domains.llvm.pin_notes import note_pins
from tritonbisect.domains.triton.ab_step import run_ab_step
from tritonbisect.domains.triton.bisector import TritonBuildOptions
from tritonbisect.domains.triton.llvm_pin import BUMP
from tritonbisect.domains.triton.pin_set import ADDED, PinSetChange
from tritonbisect.session.phases import PhaseSpec


def phase_name(backend: str) -> str:
    return f"{backend}-llvm"


def backend_phase(triton_repo: Path, culprit: str, change: PinSetChange, plan: Any) -> tuple[PhaseSpec, ForkRange | None]:
    """The phase bisecting the backend's LLVM between the culprit's parent's pin and its own."""
    assert change.old is not None and change.new is not None  # a bump
    build = TritonBuildOptions(**plan.build)
    repo = History(Path(build.backends[change.name]["dir"]))
    good = resolve_llvm(repo, change.old.commit, what=f"old {change.label} pin of {culprit[:12]}",
                        repository=change.old.repository)
    bad = resolve_llvm(repo, change.new.commit, what=f"new {change.label} pin of {culprit[:12]}",
                       repository=change.new.repository)
    good, bad, fork = fork_endpoints(repo, good, bad)
    config = {
        **build.recipe_config(plan.test),
        "llvm": plan.llvm,
        "triton_dir": str(triton_repo),
        "triton_commits": {},
        "triton_commit": culprit,
        "backend": change.name,
        "revisions": {change.old.commit: change.old.revision(), change.new.commit: change.new.revision()},
    }
    if plan.llvm_dir:
        config["llvm_dir"] = plan.llvm_dir
    if fork is not None:
        config["fork"] = fork.config()
    spec = PhaseSpec(name=phase_name(change.name), repo=repo.root, good=good, bad=bad, recipe_name=RECIPE,
                     recipe_config=config)
    return spec, fork


def core_ab(session: Any, triton_phase: PhaseSpec, culprit: str, change: PinSetChange) -> bool | None:
    """--backend-llvm core: True when the culprit passes with the backend library built from
    the core LLVM (the backend LLVM is the cause), False when it fails too, None: undecided."""
    config = dict(triton_phase.recipe_config)
    backends = dict(config.get("backends") or {})
    backends.setdefault(change.name, {})
    config.update(backends=backends, backend_llvm="core")
    label = f"the {change.name.upper()} codegen library built from the core LLVM"
    rec = run_ab_step(session, triton_phase.name, triton_phase.repo, culprit, triton_phase.recipe_name, config,
                      label)
    if rec is None:
        return None
    passes = rec["verdict"] == "good"
    if passes:
        note = (f"A/B: {culprit[:12]} passes with {label}: the regression comes from the {change.label} "
                f"({change.new.repository if change.new else ''})")
    else:
        note = (f"A/B: {culprit[:12]} fails with {label} too: the regression is Triton's own change, "
                f"not the {change.label}")
    note_pins(session, triton_phase.name, note)
    click.echo(note, err=True)
    return passes


def after_backend_change(session: Any, triton_phase: PhaseSpec, culprit: str, change: PinSetChange,
                         plan: Any) -> bool:
    """The A/B and the descent for one backend pin change of the culprit; True when a phase
    was appended."""
    build = TritonBuildOptions(**plan.build)
    if change.kind not in (BUMP, ADDED):
        return False
    if build.backend_llvm == "core" and core_ab(session, triton_phase, culprit, change) is False:
        return False
    if change.kind != BUMP or change.name not in build.backends or not plan.descend:
        return False
    spec, fork = backend_phase(Path(triton_phase.repo), culprit, change, plan)
    session.append_phase(spec)
    assert change.new is not None
    click.echo(
        f"descending into {change.new.repository} {spec.good[:12]}..{spec.bad[:12]}: at each commit its "
        f"LLVM and the {change.name.upper()} codegen library are built and Triton {culprit[:12]} is tested "
        "with it (no Triton rebuild: the library is loaded at run time)", err=True)
    if fork is not None:
        note_pins(session, spec.name, fork.describe())
        click.echo(fork.describe(), err=True)
    return True


__all__ = ["after_backend_change", "backend_phase", "core_ab", "phase_name"]
