"""`tritonbisect repro` of what PyTorch and Triton wrote while debugging (traces.sources): Inductor
output code, TORCH_COMPILE_DEBUG and TORCH_TRACE folders, kernel dumps, MLIR reproducers, a minifier's
repro script. A tritonparse trace is handed back to the plain `repro`.
"""

from __future__ import annotations

import shlex
from pathlib import Path

from tritonbisect.commands.echo import echo
from tritonbisect.core.errors import InputError
from tritonbisect.oracles.kinds import OracleKind
from tritonbisect.traces.reader import Trace, load_trace


def _kernel(tr: Trace, kernel: str | None) -> str:
    names = tr.kernels()
    if kernel is not None:
        return tr.kernel_named(kernel)
    if len(names) != 1:
        raise InputError(f"give --kernel: {tr.root} has kernels {', '.join(names) or 'none'} (tritonbisect info "
                         f"{shlex.quote(str(tr.root))} describes them)")
    return names[0]


def _notes(tr: Trace, kernel: str) -> None:
    for note in tr.kernel_notes.get(kernel, []):
        echo(f"  note: {note}")


def echo_minifier_test(script: Path, out_dir: Path, timeout: float | None) -> None:
    from tritonbisect.oracles.minifier_test import minifier_commands, write_minifier_test

    wrapper = write_minifier_test(script, out_dir, timeout=timeout)
    spec = minifier_commands(out_dir)
    echo(f"wrote {wrapper} — runs the minifier's script {script.name} (copied beside it) as a test: "
         "0 pass, 1 compile_error/mismatch/crash/fail, 125 torch or triton does not import (skip), 124 timeout")
    echo(f"  bisect with:  --test {shlex.quote(spec.command)}  (add --regress compile_error or mismatch to count "
         "only that failure as bad)")


def artifact_repro(path: Path, kernel: str | None, launch_id: int | None, line: int | None, out_dir: Path, *,
                   timeout: float | None, mode: str | None, from_: str, target: str | None) -> Trace | None:
    """Write the oracle of a debugging artifact and return None; a tritonparse trace is returned
    loaded, for the caller's own `repro`."""
    from tritonbisect.traces.sources import is_minifier_script

    if is_minifier_script(path):
        if kernel or launch_id is not None or line is not None or mode or from_ != "source":
            raise InputError(f"{path} is a minifier's repro script: it is run whole, without --kernel, --launch-id, "
                             "--line, --mode or --from")
        echo_minifier_test(path, out_dir, timeout)
        return None
    tr = load_trace(path)
    if tr.kind == "tritonparse":
        return tr
    name = _kernel(tr, kernel)
    if tr.ir_only:
        from tritonbisect.commands.compile_oracle import echo_ir_oracle

        if mode == OracleKind.RUNTIME:
            raise InputError(f"{path} holds IR alone ({tr.kind}): no Python source and no launch to run, so its oracles "
                             "compile (drop --mode runtime)")
        stage = from_ if from_ != "source" else tr.default_stage(name)
        echo_ir_oracle(tr, None, stage, name, out_dir, launch_id=launch_id, line=line, target=target, timeout=timeout)
        _notes(tr, name)
        return None
    if from_ != "source":
        raise InputError(f"{path} is Inductor output code: Python source, no recorded IR, so --from {from_} has nothing "
                         "to compile; the kernel dump (TRITON_KERNEL_DUMP) of the same run has its IR")
    from tritonbisect.commands.compile_oracle import echo_compile_oracle

    if mode == OracleKind.COMPILE:
        echo_compile_oracle(tr, name, out_dir, launch_id=launch_id, line=line, target=target, timeout=timeout)
        _notes(tr, name)
        return None
    if target:
        raise InputError("--compile-target goes with --mode compile")
    tr.require_kernel(name)  # an unknown kernel: one line listing the kernels there are
    if not tr.launches_of(name):
        echo(f"kernel {name} has no launch the reader could rebuild, so no runtime oracle; the compile oracle:")
        echo_compile_oracle(tr, name, out_dir, launch_id=None, line=line, target=None, timeout=timeout)
        _notes(tr, name)
        return None
    from tritonbisect.oracles.repro_spec import oracle_commands
    from tritonbisect.oracles.runtime import generate_oracle

    oracle = generate_oracle(tr, name, out_dir, launch_id=launch_id, line=line, timeout=timeout)
    echo(oracle.summary())
    echo("  its inputs are seeded from the shapes Inductor's harness allocates: a good Triton's outputs are "
         "the golden")
    spec = oracle_commands(out_dir)
    echo(f"  record at a good Triton:  {spec.record_command}")
    echo(f"  compare anywhere else:    {spec.command}")
    echo("and beside it, the compile oracle of the same kernel and config:")
    echo_compile_oracle(tr, name, out_dir, launch_id=oracle.launch.index, line=None, target=None, timeout=timeout)
    _notes(tr, name)
    return None
