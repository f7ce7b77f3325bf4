"""`tritonbisect repro --mode compile`: write the compile oracle and say how to use it."""

from __future__ import annotations

import shlex
from pathlib import Path

import click

from tritonbisect.tritonparse.reader import Trace


def echo_compile_oracle(trace: Trace, kernel: str, out_dir: Path, *, launch_id: int | None, line: int | None,
                        target: str | None, timeout: float | None) -> None:
    from tritonbisect.tritonparse.compileoracle.generate import (
        GOLDEN_NAME,
        compile_commands,
        generate_compile_oracle,
    )

    oracle = generate_compile_oracle(trace, kernel, out_dir, launch_id=launch_id, line=line, target=target,
                                     timeout=timeout)
    click.echo(oracle.summary())
    click.echo(f"  signature: {oracle.context['signature']}")
    for warning in oracle.warnings:
        click.echo(f"  note: {warning}")
    spec = compile_commands(out_dir, check=["codegen"])
    script = shlex.quote(str(Path(out_dir).resolve() / "compile_repro.py"))
    click.echo(f"  compile once (no GPU needed):  python {script}")
    click.echo(f"  record codegen at a good Triton:  {spec.record_command}")
    click.echo(f"  check codegen anywhere else:   {spec.command}")
    click.echo(f"  (the golden is {GOLDEN_NAME}; --threshold METRIC=LIMIT picks what to check, e.g. spills=0)")
