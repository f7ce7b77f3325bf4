"""What `tritonbisect trace` tells the user when the program has finished: what was recorded,
from how many processes, and how many records the tracer lost and why."""

from __future__ import annotations

import shlex
from collections.abc import Iterator

from tritonbisect.errors import InputError
from tritonbisect.tritonparse.reader import load_trace
from tritonbisect.tritonparse.trace_cmd import TraceRun
from tritonbisect.tritonparse.tracer.config import ERRORS_LOG

SHOWN_LOSSES = 6


def _plural(n: int, word: str, plural: str | None = None) -> str:
    return f"{n} {word if n == 1 else (plural or word + 's')}"


def summary_lines(run: TraceRun) -> Iterator[tuple[str, bool]]:
    """(line, to_stderr) pairs."""
    out = run.out
    if not run.files:
        yield (f"tritonbisect trace: no trace written to {out}: the program launched no Triton kernel "
               "(or ran python with -I/-S/-E, which ignore PYTHONPATH)", True)
    else:
        try:
            tr = load_trace(out)
        except InputError as exc:  # e.g. a process killed in the middle of a record
            yield f"tritonbisect trace: the trace in {out} cannot be read back: {exc}", True
        else:
            with_after = sum(1 for launch in tr.launches if launch.after)
            benchmark = sum(1 for launch in tr.launches if launch.autotune_benchmark)
            launching = {launch.file for launch in tr.launches}
            names = ", ".join(tr.kernels())
            bench_note = f", {benchmark} autotuner benchmark runs" if benchmark else ""
            yield (f"trace written to {out}: {len(tr.compilations)} compilations, {len(tr.launches)} launches "
                   f"({with_after} with outputs after the launch{bench_note}) of {names}", False)
            only_compiled = len(run.files) - len(launching)
            yield (f"  {_plural(len(run.files), 'file')}, one per process: {len(launching)} with launches, "
                   f"{only_compiled} with compilations only", False)
            yield f"  next: tritonbisect info {shlex.quote(str(out))}", False
    if run.losses:
        yield (f"tritonbisect trace: the tracer lost {_plural(run.records_lost, 'record')} "
               f"(the program was not affected; details in {out / ERRORS_LOG}):", True)
        for loss in run.losses[:SHOWN_LOSSES]:
            procs = _plural(len(loss.pids), "process", "processes")
            yield f"  {loss.count} {loss.lost}: {loss.error} [{loss.stage}, {procs}]", True
        if len(run.losses) > SHOWN_LOSSES:
            yield f"  … and {len(run.losses) - SHOWN_LOSSES} other kinds", True
