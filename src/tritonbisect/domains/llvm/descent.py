"""The Triton → LLVM descent.

`tritonbisect triton` runs a session with the workflow "triton-llvm" (session/workflows.py).
When its Triton phase ends at a culprit that changes the pinned LLVM commit
(`cmake/llvm-hash.txt` or `cmake/llvm-info.json`), its continuation `continue_after_triton`
says so and (unless --no-descend-llvm) appends an "llvm" phase that bisects llvm-project
between the old and the new hash, building at each LLVM commit the Triton commit the compatibility
map assigns to it (without a map: the bump's parent; LLVM commits it cannot build against
are skipped; the bad endpoint uses the bump itself). The plan (llvm dir, map, build
options) is kept in session.json so that `resume` can continue either phase.
"""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path

import click

from tritonbisect.core.errors import InputError
from tritonbisect.core.history import History
from tritonbisect.domains.llvm.backend_descent import after_backend_change
from tritonbisect.domains.llvm.bisector import (
    LLVMBisector,
    check_map_commits,
    load_compat_map,
    open_llvm_repo,
    resolve_llvm,
)
from tritonbisect.domains.llvm.pin_notes import backend_hint, note_pins, record_pin_changes
from tritonbisect.domains.llvm.toolchain_check import toolchain_ab
from tritonbisect.domains.triton.bisector import (
    PIN_FILES_TEXT,
    LLVMBump,
    TritonBisector,
    TritonBuildOptions,
    llvm_bump,
    pin_change_at,
    pin_set_changes_between,
    pin_set_of,
    pinned_llvm,
)
from tritonbisect.domains.triton.descent_plan import WORKFLOW as WORKFLOW
from tritonbisect.domains.triton.descent_plan import DescentPlan
from tritonbisect.domains.triton.llvm_pin import BUMP
from tritonbisect.domains.triton.pin_set import BACKENDS, TOOLCHAIN
from tritonbisect.domains.wheels.nightlies import PHASE as NIGHTLIES
from tritonbisect.domains.wheels.nightlies import continue_after_nightlies
from tritonbisect.session.phases import STATUS_PENDING, STATUS_SUPERSEDED


def preflight(bisector: TritonBisector, plan: DescentPlan) -> list[str]:
    """Check, before any build, what the descent will need; returns the bumps in range.

    A range that contains LLVM bumps needs --llvm-dir (or --no-descend-llvm), a Triton
    checkout that pins LLVM, and both hashes of every bump present in llvm-project. A bad
    compatibility map is reported now, with its line, rather than after hours of builds.
    """
    check_backend_pins(bisector)
    if not plan.descend:
        return []
    bumps = bisector.bumps()
    if not bumps and plan.llvm_dir is None:
        return []
    pinned_llvm(bisector.history, bisector.bad)  # one line if this is not a Triton checkout
    llvm = open_llvm_repo(
        Path(plan.llvm_dir) if plan.llvm_dir else None,
        why=(
            f" to descend into LLVM: {len(bumps)} commit(s) in the range change the LLVM pin ({PIN_FILES_TEXT});"
            " or pass --no-descend-llvm"
        ),
    )
    for sha in bumps:
        try:
            bump = llvm_bump(bisector.history, sha)
        except InputError:
            continue  # the file appears or disappears there: not a bump one can descend into
        if bump is not None:
            for rev, side, at in ((bump.old, "old", bump.parent), (bump.new, "new", sha)):
                resolve_llvm(llvm, rev, what=f"{side} LLVM pin of {sha[:12]}",
                             repository=_core_repository(bisector.history, at))
    if plan.compat_map:
        cmap = load_compat_map(Path(plan.compat_map))
        check_map_commits(cmap, Path(plan.compat_map), bisector.history, llvm)
    return bumps


def check_backend_pins(bisector: TritonBisector) -> None:
    """With --amd-llvm-dir (or --nvidia-llvm-dir): every backend pin the steps will build from
    (at both endpoints, and on both sides of each change in the range) must be in that
    checkout; else one line saying what to fetch, before any build."""
    dirs = bisector.build.backends
    if not dirs:
        return
    history = bisector.history
    pins = [p for c in (bisector.good, bisector.bad) for p in pin_set_of(history, c).backends]
    for changes in pin_set_changes_between(history, bisector.good, bisector.bad).values():
        pins += [p for c in changes for p in (c.old, c.new) if p is not None and p.name in BACKENDS]
    repos = {name: History(Path(spec["dir"])) for name, spec in dirs.items()}
    for pin in dict.fromkeys(pins):
        if pin.name in repos:
            resolve_llvm(repos[pin.name], pin.commit, what=f"{pin.label} pin in {pin.file}",
                         repository=pin.repository)


def _core_repository(history: History, commit: str) -> str | None:
    """The repository the core pin of `commit` comes from (a fork, by its build info)."""
    try:
        return pin_set_of(history, commit).core.repository
    except InputError:
        return None


def descent_bisector(triton_repo: Path, bump: LLVMBump, plan: DescentPlan) -> LLVMBisector:
    """What the "llvm" phase bisects: llvm-project over the bump's range (between the pins'
    upstream bases, the fork's patches replayed, when a pin is a fork commit)."""
    return LLVMBisector(
        triton_dir=triton_repo,
        llvm_dir=Path(plan.llvm_dir) if plan.llvm_dir else None,
        good_llvm=bump.old,
        bad_llvm=bump.new,
        test=plan.test,
        build=TritonBuildOptions(**plan.build),
        compat_map=Path(plan.compat_map) if plan.compat_map else None,
        triton_commit=bump.parent,
        bad_triton=bump.commit,
        llvm=plan.llvm,
    )


def continue_after_triton(session, result) -> bool:
    """Workflow continuation: after a Triton culprit, say which pins it moves; then the
    toolchain A/B, the LLVM descent of a core bump, and the A/B and descent of a backend
    bump (each appended phase runs in turn)."""
    phases = [p for p in session.phases() if p.status != STATUS_SUPERSEDED]  # corrected away
    if not phases:
        return False
    if any(p.status == STATUS_PENDING for p in phases):  # a descent appended with another one
        return True
    last = phases[-1]
    if last.spec.name == NIGHTLIES:  # --wheel-index: now build inside the nightlies' bracket
        return continue_after_nightlies(session, last)
    if last.spec.name != "triton" or last.status != "found" or not last.culprit:
        return False
    history = History(Path(last.spec.repo))
    changes = record_pin_changes(session, last.spec.name, history, last.culprit)
    plan = DescentPlan.load(session)
    backends = TritonBuildOptions(**plan.build).backends
    for backend in changes:
        if backend.name in BACKENDS and backend.kind == BUMP and backend.name not in backends:
            click.echo(backend_hint(backend), err=True)
    moved = next((c for c in changes if c.kind == TOOLCHAIN), None)
    if moved is not None and toolchain_ab(session, last.spec, last.culprit, moved):
        return False  # the toolchain is the cause: no LLVM to descend into
    appended = core_descent(session, history, last.culprit, plan)
    for change in changes:
        if change.name in BACKENDS:
            appended = after_backend_change(session, last.spec, last.culprit, change, plan) or appended
    return appended


def core_descent(session, history: History, culprit: str, plan: DescentPlan) -> bool:
    """Append the "llvm" phase when the culprit bumps the core LLVM; True when appended."""
    bump = llvm_bump(history, culprit)
    if bump is None:
        try:
            change = pin_change_at(history, culprit)
        except InputError:
            change = None
        if change is not None:  # a build-number-only change or a format switch: say so
            click.echo(change.describe(), err=True)
        return False
    click.echo(f"{bump.describe()}: the regression may come from LLVM", err=True)
    plan.bump = asdict(bump)
    plan.save(session)
    if not plan.descend:
        click.echo(
            "not descending into LLVM (--no-descend-llvm); to do it: tritonbisect llvm "
            f"--triton-dir {history.root} --llvm-dir LLVM_DIR --good-llvm {bump.old} "
            f"--bad-llvm {bump.new} --triton-commit {bump.parent[:12]} --test ...",
            err=True,
        )
        return False
    bisector = descent_bisector(history.root, bump, plan)
    spec = bisector.phase()
    session.append_phase(spec)
    how = (
        f"the Triton commit {Path(plan.compat_map).name} assigns"
        if plan.compat_map
        else f"Triton {bump.parent[:12]} (the bump's parent; LLVM commits it cannot build with are skipped)"
    )
    click.echo(
        f"descending into llvm-project {spec.good[:12]}..{spec.bad[:12]}, building at each "
        f"LLVM commit {how}",
        err=True,
    )
    if bisector.fork is not None:
        note = bisector.fork.describe()
        note_pins(session, spec.name, note)
        click.echo(note, err=True)
    return True
