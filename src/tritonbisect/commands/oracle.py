"""Reproducer-oracle commands: `info`, `repro`, `trace`.

    tritonbisect info TRACE [--kernel K] [--json]
    tritonbisect repro TRACE --kernel K [--launch-id I | --line N] --out DIR
    tritonbisect repro TRACE --kernel K --mode compile [--compile-target cuda:90] --out DIR
    tritonbisect repro TRACE --kernel K --from ttir|ttgir --out DIR      # the IR oracle (compile mode)
    tritonbisect repro --ir k.ttgir --compile-target cuda:90 --out DIR        # an IR file, no trace
    tritonbisect trace --out DIR [--kernel PATTERN]... -- python app.py ...

Input problems (missing or corrupt trace, unknown kernel, launch id out of range, a launch
that cannot be reproduced) are one line on stderr and exit 2.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import click

from tritonbisect.commands.echo import echo
from tritonbisect.commands.help_sections import hidden_alias
from tritonbisect.core.errors import InputError
from tritonbisect.oracles.kinds import OracleKind


@click.command("info")
@click.argument("trace", type=click.Path(path_type=Path))
@click.option("--kernel", metavar="K", help="Show this kernel's launches one by one.")
@click.option("--json", "json_out", is_flag=True, help="Machine-readable output.")
def info(trace: Path, kernel: str | None, json_out: bool) -> None:
    """Kernels, launches (id, grid, arguments), compile parameters, Triton version and target
    of a tritonparse trace (a file, or a folder of files), or of what PyTorch and Triton wrote
    while debugging: Inductor output code, a TORCH_COMPILE_DEBUG or TORCH_TRACE folder, a
    TRITON_KERNEL_DUMP folder, an MLIR reproducer (told by content)."""
    from tritonbisect.traces.info import info_dict, render_info
    from tritonbisect.traces.reader import load_trace, reading
    from tritonbisect.traces.sources import is_minifier_script

    if is_minifier_script(trace):
        echo(json.dumps({"trace": str(trace), "kind": "minifier script", "kernels": []}, indent=1) if json_out else
             f"minifier script {trace}: a torch._dynamo repro, run whole as a bisect test; "
             f"`tritonbisect repro {trace} --out DIR` writes the test that tells its outcomes apart")
        return
    with reading(trace):
        tr = load_trace(trace)
        text = json.dumps(info_dict(tr, kernel), indent=1) if json_out else render_info(tr, kernel)
    echo(text)


@click.command("repro")
@click.argument("trace", type=click.Path(path_type=Path), required=False)
@click.option("--kernel", metavar="K", help="The kernel to reproduce (may be left out when the trace has one).")
@click.option("--launch-id", type=int, metavar="I",
              help="Which launch of the kernel, as numbered by `info` (default: the first launch that can "
                   "be reproduced and is not an autotuner benchmark).")
@click.option("--line", type=int, metavar="N", help="The launch on line N of the trace file instead (with --mode compile or --from, for a kernel compiled but never launched: its compilation on line N, as `info` shows).")
@click.option("--out", "out_dir", type=click.Path(path_type=Path), help="Folder to write the oracle into (default: ./KERNEL-repro, ./KERNEL-compile, ./KERNEL-ttir, ./replay, a new one).")
@click.option("--timeout", type=float, default=None, metavar="S", help="The oracle's own timeout in seconds (default 600).")
@click.option("--mode", type=click.Choice([OracleKind.RUNTIME.value, OracleKind.COMPILE.value]), default=None,
              help="runtime (default): run the launch and compare its outputs (with --from ttir|ttgir, on a GPU, "
                   "the JIT compiles the recorded IR instead of the source); compile (the default with --from "
                   "ttir|ttgir and --ir): cross-compile the kernel for the traced GPU with no GPU at hand "
                   "(pass / compile_error / crash, codegen statistics).")
@click.option("--from", "from_", type=click.Choice(["source", "ttir", "ttgir"]), default="source", show_default=True,
              help="What to compile: the kernel's Python source, or the TTIR/TTGIR its compilation event recorded "
                   "(the IR oracle: IR this Triton cannot read is `unreadable_ir`, a skip).")
@click.option("--ir", "ir_file", type=click.Path(path_type=Path), metavar="FILE",
              help="Compile this .ttir/.ttgir file instead of a trace's kernel (needs --compile-target).")
@click.option("--compile-target", "--target", "target", metavar="BACKEND:ARCH", **hidden_alias("--target"),
              help="With --mode compile: compile for this target instead of the traced one (cuda:90, cuda:80, "
                   "hip:gfx942); needed for traces captured under TRITON_INTERPRET=1.")
@click.option("--launches", metavar="all|K1,K2",
              help="Replay the whole program instead: these kernels' launches (or all) in recorded order, buffers "
                   "flowing between them, each kernel crash-isolated in a forked worker (replay.py).")
def repro(trace: Path | None, kernel: str | None, launch_id: int | None, line: int | None, out_dir: Path | None,
          timeout: float | None, mode: str | None, from_: str, ir_file: Path | None, target: str | None,
          launches: str | None) -> None:
    """Write a standalone reproducer oracle (repro.py, context.json, blobs/) for one launch;
    with --mode compile, a compile oracle (compile_repro.py) that needs no GPU; with --launches,
    a whole-program replay (replay.py)."""
    from tritonbisect.traces.reader import reading

    with reading(trace or ir_file):
        _repro(trace, kernel, launch_id, line, out_dir, timeout, mode, from_, ir_file, target, launches)


def _repro(trace: Path | None, kernel: str | None, launch_id: int | None, line: int | None, out_dir: Path | None,
           timeout: float | None, mode: str | None, from_: str, ir_file: Path | None, target: str | None,
           launches: str | None) -> None:
    from tritonbisect.oracles.repro_spec import oracle_commands
    from tritonbisect.oracles.runtime import generate_oracle
    from tritonbisect.traces.reader import load_trace

    if launches is not None and (ir_file is not None or from_ != "source"):
        raise InputError("--launches replays kernels from their source: drop --from/--ir")
    if ir_file is not None and mode == OracleKind.RUNTIME:
        raise InputError("--ir FILE compiles only (no arguments to launch it with): drop --mode runtime, "
                         "or replay a trace's IR with TRACE --from ttir|ttgir --mode runtime")
    loaded = None
    if trace is not None and ir_file is None and launches is None:  # what PyTorch/Triton wrote while debugging
        from tritonbisect.commands.artifact_oracle import artifact_repro

        chosen = out_dir or _free_folder(f"{kernel or trace.stem}-repro")
        loaded = artifact_repro(trace, kernel, launch_id, line, chosen, timeout=timeout, mode=mode, from_=from_,
                                target=target)
        if loaded is None:
            if out_dir is None:
                _said(chosen)
            return
    if ir_file is not None or (from_ != "source" and mode != OracleKind.RUNTIME):  # the IR compile oracle
        from tritonbisect.commands.compile_oracle import echo_ir_oracle

        stem = f"{ir_file.stem}-ir" if ir_file is not None else f"{kernel or (trace.stem if trace else 'kernel')}-{from_}"
        out_dir = out_dir or _new_folder(stem)
        echo_ir_oracle(trace, ir_file, from_, kernel, out_dir, launch_id=launch_id, line=line, target=target,
                       timeout=timeout)
        return
    if trace is None:
        raise InputError("give a TRACE (or --ir FILE --compile-target cuda:90)")
    mode = mode or OracleKind.RUNTIME.value
    if target and mode != OracleKind.COMPILE:
        raise InputError("--compile-target goes with --mode compile")
    tr = loaded or load_trace(trace)
    if launches is not None:
        from tritonbisect.commands.replay_oracle import echo_replay_oracle

        echo_replay_oracle(tr, launches, out_dir or _new_folder("replay"), kernel=kernel, launch_id=launch_id,
                           line=line, mode=mode, timeout=timeout)
        return
    if kernel is None:
        names = tr.kernels()
        if len(names) != 1:
            raise InputError(f"give --kernel: trace {trace} has kernels {', '.join(names) or 'none'}")
        kernel = names[0]
    out_dir = out_dir or _new_folder(f"{kernel}-{'compile' if mode == OracleKind.COMPILE else 'repro'}")
    if mode == OracleKind.COMPILE:
        from tritonbisect.commands.compile_oracle import echo_compile_oracle

        echo_compile_oracle(tr, kernel, out_dir, launch_id=launch_id, line=line, target=target, timeout=timeout)
        return
    oracle = generate_oracle(tr, kernel, out_dir, launch_id=launch_id, line=line, timeout=timeout,
                             ir_stage=None if from_ == "source" else from_)
    echo(oracle.summary())
    for warning in oracle.warnings:
        echo(f"  note: {warning}")
    if tr.skipped:
        skipped = ", ".join(f"{k} x{v}" for k, v in sorted(tr.skipped.items()))
        echo(f"  note: skipped unknown trace events: {skipped}")
    spec = oracle_commands(out_dir)
    echo(f"  record at a good Triton:  {spec.record_command}")
    echo(f"  compare anywhere else:    {spec.command}")


def _new_folder(stem: str) -> Path:
    """The default --out (see _free_folder), said on stderr, since the user did not name it."""
    path = _free_folder(stem)
    _said(path)
    return path


def _free_folder(stem: str) -> Path:
    """./STEM, or ./STEM-2, -3... when that is taken (never into a folder that holds something)."""
    from tritonbisect.core.untrusted import file_component

    base = file_component(stem, "oracle")
    for n in range(1, 1000):
        path = Path(base if n == 1 else f"{base}-{n}")
        if not path.exists() or (path.is_dir() and not any(path.iterdir())):
            return path
    raise InputError(f"./{base} and 998 more are taken: give --out DIR")


def _said(path: Path) -> None:
    click.echo(f"tritonbisect repro: writing into ./{path} (--out DIR to choose)", err=True)


@click.command("trace", context_settings={"ignore_unknown_options": True, "allow_interspersed_args": False})
@click.option("--out", "out_dir", required=True, type=click.Path(path_type=Path), help="Folder for the trace.")
@click.option("--kernel", "kernels", multiple=True, metavar="PATTERN",
              help="Trace only kernels matching this fnmatch pattern (repeatable).")
@click.option("--max-blob-launches", type=int, default=16, show_default=True,
              help="Save tensor data for at most this many launches per kernel and process (0: statistics only).")
@click.option("--outputs-after/--no-outputs-after", default=True, show_default=True,
              help="Record every tensor argument after the launch (a device sync per launch with blobs).")
@click.argument("command", nargs=-1, type=click.UNPROCESSED)
def trace(out_dir: Path, kernels: tuple[str, ...], max_blob_launches: int, outputs_after: bool,
          command: tuple[str, ...]) -> None:
    """Run a program with tracing in tritonparse's format, recording each launch's tensors
    before and (after a device sync) after the kernel ran: `tritonbisect trace --out DIR -- python app.py`.
    Exits with the program's exit status."""
    from tritonbisect.traces.capture import env_changes, run_traced
    from tritonbisect.traces.capture_summary import summary_lines

    if command:
        for change in env_changes(os.environ):
            click.echo(f"tritonbisect trace: for the traced program, {change.line()}", err=True)
    run = run_traced(list(command), out_dir, kernels=kernels, max_blob_launches=max_blob_launches,
                     outputs_after=outputs_after)
    for line, to_stderr in summary_lines(run):
        echo(line, err=to_stderr)
    raise click.exceptions.Exit(run.returncode)


COMMANDS: list[click.Command] = [info, repro, trace]
