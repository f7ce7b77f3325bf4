"""Whether a launch of a trace can be rebuilt into a reproducer, and in words why not: read
from what the trace recorded of it (its compilation, its arguments, CUDA-graph capture)."""

from __future__ import annotations

from tritonbisect.traces.reader import Launch, Trace


def stand_in_words(moved: list[str]) -> str:
    """How an eager warm-up launch matches a captured one (see Trace.warmup_for)."""
    if not moved:
        return "the same arguments on the same buffers"
    return f"the same arguments ({', '.join(moved)} at another address)"


def capture_reason(launch: Launch) -> str:
    """Why a launch made during CUDA-graph capture carries no data, as its tracer left it."""
    if launch.by_tritonbisect:
        return ("was recorded during CUDA-graph capture, where tensors cannot be read (only where they are "
                "and their shapes were recorded)")
    return "was recorded during CUDA-graph capture: tritonparse skipped its arguments"


def refuse_reason(trace: Trace, launch: Launch) -> str | None:
    """Why this launch cannot be reproduced, or None."""
    who = f"launch {launch.index} of kernel '{launch.name}' ({launch.where()})"
    if launch.graph_capture:
        warmup = trace.warmup_for(launch)
        hint = (f"its eager warm-up launch {warmup[0].index} ran the same kernel with {stand_in_words(warmup[1])}: "
                f"use --launch-id {warmup[0].index}") if warmup else "pick a launch made outside graph capture"
        return f"{who} {capture_reason(launch)}, so it cannot be rebuilt; {hint}"
    if trace.compilation_of(launch) is None:
        h = (launch.hash or "unknown")[:16]
        return (
            f"{who} has no compilation event in the trace (hash {h}): the kernel's source and "
            "compile parameters are unknown; trace from before the kernel's first compilation"
        )
    if not launch.args:
        return f"{who} has no recorded arguments (capture with enable_trace_launch=True)"
    return None
