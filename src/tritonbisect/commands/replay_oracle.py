"""`tritonbisect repro TRACE --launches all|K1,K2`: write the whole-program replay oracle."""

from __future__ import annotations

from pathlib import Path

from tritonbisect.commands.echo import echo
from tritonbisect.core.errors import InputError
from tritonbisect.oracles.kinds import OracleKind
from tritonbisect.traces.reader import Trace


def echo_replay_oracle(trace: Trace, launches: str, out_dir: Path, *, kernel: str | None, launch_id: int | None,
                       line: int | None, mode: str, timeout: float | None) -> None:
    from tritonbisect.oracles.replay import generate_replay, replay_commands

    if kernel is not None or launch_id is not None or line is not None:
        raise InputError("--launches replays whole kernels: give kernel names to it, not --kernel/--launch-id/--line")
    if mode != OracleKind.RUNTIME:
        raise InputError("--launches goes with --mode runtime")
    oracle = generate_replay(trace, launches, out_dir, timeout=timeout)
    echo(oracle.summary())
    for left in oracle.not_replayed:
        echo(f"  {left.line()}")
    for warning in oracle.warnings:
        echo(f"  note: {warning}")
    record, compare = replay_commands(out_dir)
    echo(f"  record at a good Triton:  {record}")
    echo(f"  compare anywhere else:    {compare}")
