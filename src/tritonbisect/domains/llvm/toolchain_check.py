"""A Triton culprit that moves the NVIDIA toolchain pin: one A/B step before any descent.

The same Triton commit is tested once more with the previous toolchain's ptxas
(TRITON_PTXAS_PATH, TRITON_PTXAS_BLACKWELL_PATH; fetched once into the store from the
`nvidia-cuda-nvcc-cu12` wheels of the user's index: domains/triton/nvidia_toolchain.py).
It passes: the toolchain is the cause, and there is no LLVM to descend into. It fails too:
the toolchain is not the cause, and the descents go on.
"""

from __future__ import annotations

from typing import Any

import click

from tritonbisect.builds.downloads import store_dir
from tritonbisect.domains.llvm.pin_notes import note_pins
from tritonbisect.domains.triton.ab_step import run_ab_step
from tritonbisect.domains.triton.nvidia_toolchain import (
    TOOL_ENV,
    ToolchainUnavailable,
    toolchain_env,
)
from tritonbisect.domains.triton.pin_set import PinSetChange
from tritonbisect.session.phases import PhaseSpec


def toolchain_ab(session: Any, triton_phase: PhaseSpec, culprit: str, change: PinSetChange) -> bool | None:
    """True: the culprit passes with the previous toolchain (the toolchain is the cause);
    False: it fails with it too; None: the check could not run (said)."""
    old = change.old_toolchain
    if old is None:
        note_pins(session, triton_phase.name, "no previous NVIDIA toolchain pin to test against")
        return None
    try:
        env = toolchain_env(old, store_dir(session.settings.workdir))
    except ToolchainUnavailable as exc:
        note = f"A/B with the previous NVIDIA toolchain not run: {exc}"
        note_pins(session, triton_phase.name, note)
        click.echo(note, err=True)
        return None
    config = dict(triton_phase.recipe_config)
    config["test_env"] = {**dict(config.get("test_env") or {}), **env}
    tools = ", ".join(f"{tool} {old.version(tool)}" for tool in TOOL_ENV if old.version(tool))
    label = f"the previous NVIDIA toolchain ({tools})"
    rec = run_ab_step(session, triton_phase.name, triton_phase.repo, culprit, triton_phase.recipe_name, config,
                      label)
    if rec is None:
        return None
    if rec["verdict"] == "good":
        note = (f"A/B: {culprit[:12]} passes with {label}: the NVIDIA toolchain move is the cause "
                "(nothing to descend into)")
    else:
        note = f"A/B: {culprit[:12]} fails with {label} too: the toolchain move is not the cause"
    note_pins(session, triton_phase.name, note)
    click.echo(note, err=True)
    return rec["verdict"] == "good"


__all__ = ["toolchain_ab"]
