"""`tritonbisect repro --mode compile`: write the compile oracle and say how to use it."""

from __future__ import annotations

import json
import shlex
from pathlib import Path

from tritonbisect.commands.echo import echo
from tritonbisect.traces.reader import Trace


def echo_compile_oracle(trace: Trace, kernel: str, out_dir: Path, *, launch_id: int | None, line: int | None,
                        target: str | None, timeout: float | None) -> None:
    from tritonbisect.oracles.compile.folder import (
        GOLDEN_NAME,
        compile_commands,
        generate_compile_oracle,
    )

    oracle = generate_compile_oracle(trace, kernel, out_dir, launch_id=launch_id, line=line, target=target,
                                     timeout=timeout)
    echo(oracle.summary())
    echo(f"  signature: {oracle.context['signature']}")
    for warning in oracle.warnings:
        echo(f"  note: {warning}")
    spec = compile_commands(out_dir, check=["codegen"])
    script = shlex.quote(str(Path(out_dir).resolve() / "compile_repro.py"))
    echo(f"  compile once (no GPU needed):  python {script}")
    echo(f"  record codegen at a good Triton:  {spec.record_command}")
    echo(f"  check codegen anywhere else:   {spec.command}")
    echo(f"  (the golden is {GOLDEN_NAME}; --codegen-threshold METRIC=LIMIT picks what to check, e.g. spills=0)")
    echo(f"  a way around a failing Triton:  tritonbisect workaround {shlex.quote(str(out_dir))} --bad-python PY "
         "(or --bad VERSION)")
    echo(f"  time the compile:  python {script} --check compile-time --pass-times")


def echo_ir_oracle(trace: Path | Trace | None, ir_file: Path | None, stage: str, kernel: str | None, out_dir: Path, *,
                   launch_id: int | None, line: int | None, target: str | None, timeout: float | None) -> None:
    """`repro TRACE --from ttir|ttgir` or `repro --ir FILE --compile-target T`: write the IR oracle."""
    from tritonbisect.core.errors import InputError
    from tritonbisect.oracles.compile.folder import compile_commands
    from tritonbisect.oracles.compile.ir_oracle import (
        generate_ir_file_oracle,
        generate_ir_oracle,
    )
    from tritonbisect.traces.reader import load_trace

    if ir_file is not None:
        if trace is not None or kernel or launch_id is not None or line is not None:
            raise InputError("--ir FILE goes without a TRACE, --kernel, --launch-id or --line")
        if not target:
            raise InputError("--ir FILE needs --compile-target (e.g. cuda:90 or hip:gfx942)")
        script = generate_ir_file_oracle(ir_file, target, out_dir, timeout=timeout)
        what = f"IR file {ir_file}"
    else:
        if trace is None:
            raise InputError(f"--from {stage} needs a TRACE")
        if stage == "source":  # pragma: no cover - the caller sends source to the compile oracle
            raise InputError("--from source is the compile oracle: use --mode compile")
        tr = trace if isinstance(trace, Trace) else load_trace(trace)
        if kernel is None:
            names = tr.kernels()
            if len(names) != 1:
                raise InputError(f"give --kernel: trace {trace} has kernels {', '.join(names) or 'none'}")
            kernel = names[0]
        script = generate_ir_oracle(tr, kernel, out_dir, stage=stage, launch_id=launch_id, line=line,
                                    target=target, timeout=timeout)
        what = f"the recorded {stage} of kernel {kernel}"
    ctx = json.loads((Path(out_dir) / "compile_context.json").read_text(encoding="utf-8"))
    gpu = ctx["job"]["target"]
    echo(f"wrote {script} — IR oracle: compiles {what} for {gpu['backend']} {gpu['arch']} "
         f"(IR this Triton cannot read: unreadable_ir, exit 5, a skip)")
    echo(f"  signature: {ctx['signature']}")
    spec = compile_commands(out_dir)
    echo(f"  compile once (no GPU needed):  python {shlex.quote(str(script.resolve()))}")
    echo(f"  record codegen at a good Triton:  {spec.record_command}")
    echo(f"  compare anywhere else:   {spec.command}")
