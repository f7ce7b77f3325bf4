"""What `tritonbisect trace` tells the user when the program has finished: what was recorded,
from how many processes, and how many records the tracer lost and why."""

from __future__ import annotations

import shlex
from collections.abc import Iterator

from tritonbisect.core.errors import InputError
from tritonbisect.tracer.config import ERRORS_LOG
from tritonbisect.traces.capture import TraceRun
from tritonbisect.traces.reader import Trace, load_trace

SHOWN_LOSSES = 6


def _plural(n: int, word: str, plural: str | None = None) -> str:
    return f"{n} {word if n == 1 else (plural or word + 's')}"


def _counter(processes: list[dict], name: str) -> int:
    return sum(int((p.get("counters") or {}).get(name) or 0) for p in processes if isinstance(p.get("counters"), dict))


def _static_cause(static: list[dict]) -> str:
    """What turned the static launcher back on, as far as the processes said."""
    envs = {p.get("static_env", "?") for p in static}
    if envs == {"1"}:
        return ("the program's own environment sets TORCHINDUCTOR_USE_STATIC_CUDA_LAUNCHER=1 again "
                "(after `trace` set it to 0): leave it out of the traced run")
    if "?" not in envs and "1" not in envs:
        return ("the program sets torch._inductor.config.use_static_cuda_launcher = True itself: "
                "leave that out of the traced run")
    return ("the program turned it back on, through TORCHINDUCTOR_USE_STATIC_CUDA_LAUNCHER=1 in its own environment "
            "or torch._inductor.config.use_static_cuda_launcher = True: leave that out of the traced run")


def process_facts(run: TraceRun) -> Iterator[str]:
    """What the traced processes said at their end about launches the hooks cannot see."""
    procs = run.processes
    static = [p for p in procs if p.get("static_launcher")]
    if static:
        loaded = _counter(static, "triton_bundler_load_static_autotuner")
        cached = (f" ({_plural(loaded, 'kernel')} loaded for it from Inductor's FX graph cache)" if loaded else "")
        yield (f"Inductor's static CUDA launcher was on in {_plural(len(static), 'process', 'processes')}{cached}: "
               f"its launches never reach Triton's launch hooks, so they are not in the trace; "
               f"{_static_cause(static)}, and trace again")
    if any(p.get("cudagraph_trees") for p in procs):
        yield ("the program used CUDA graphs (mode=\"reduce-overhead\"): a graph's replays run its kernels without "
               "Triton's launcher, so only the eager warm-up and the capture of each graph are recorded")


def summary_lines(run: TraceRun) -> Iterator[tuple[str, bool]]:
    """(line, to_stderr) pairs."""
    out = run.out
    facts = list(process_facts(run))
    if not run.files:
        if any(p.get("triton") for p in run.processes):
            yield (f"tritonbisect trace: no trace written to {out}: Triton was imported in "
                   f"{_plural(sum(1 for p in run.processes if p.get('triton')), 'process', 'processes')}, "
                   "but no kernel compilation, cache load or launch reached the tracer", True)
        else:
            yield (f"tritonbisect trace: no trace written to {out}: no process that the tracer ran in imported "
                   "Triton (if the program uses Triton, it ran python with -I/-S/-E, which ignore PYTHONPATH, "
                   "so the tracer was not loaded)", True)
        for fact in facts:
            yield f"  {fact}", True
    else:
        try:
            tr = load_trace(out)
        except InputError as exc:  # e.g. a process killed in the middle of a record
            yield f"tritonbisect trace: the trace in {out} cannot be read back: {exc}", True
        else:
            yield from _trace_lines(run, tr, facts)
    yield from _loss_lines(run)


def _trace_lines(run: TraceRun, tr: Trace, facts: list[str]) -> Iterator[tuple[str, bool]]:
    out = run.out
    if not tr.launches:
        names = ", ".join(tr.kernels())
        yield (f"tritonbisect trace: {_plural(len(tr.compilations), 'compilation')} recorded in {out} "
               f"({names}): compiled or loaded from a cache, but no launch of them was seen", True)
        for fact in facts:
            yield f"  {fact}", True
        if not facts:
            yield ("  the program did not launch them in a traced process, or launched them through a launcher "
                   "of its own that does not call Triton's launch hooks", True)
        yield f"  next: tritonbisect info {shlex.quote(str(out))}", True
        return
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
    captured = sum(1 for launch in tr.launches if launch.graph_capture)
    if captured:
        yield (f"  {_plural(captured, 'launch', 'launches')} recorded during CUDA-graph capture: tensors are "
               "recorded without their data there; `repro --launches all` replays each kernel's eager warm-up "
               "launch instead", False)
    bench_only = benchmark_only_kernels(tr)
    if bench_only:
        yield (f"  ran only while an autotuner benchmarked them (no outputs recorded; their oracles need a golden "
               f"recorded at a good Triton): {', '.join(bench_only)}", False)
    for fact in facts:
        yield f"  {fact}", bool(fact.startswith("Inductor's static"))
    yield f"  next: tritonbisect info {shlex.quote(str(out))}", False


def benchmark_only_kernels(tr: Trace) -> list[str]:
    """Kernels whose every launch was an autotuner's benchmark run."""
    names = []
    for name in tr.kernels():
        launches = tr.launches_of(name)
        if launches and all(launch.autotune_benchmark for launch in launches):
            names.append(name)
    return names



def _loss_lines(run: TraceRun) -> Iterator[tuple[str, bool]]:
    out = run.out
    if run.losses:
        yield (f"tritonbisect trace: the tracer lost {_plural(run.records_lost, 'record')} "
               f"(the program was not affected; details in {out / ERRORS_LOG}):", True)
        for loss in run.losses[:SHOWN_LOSSES]:
            procs = _plural(len(loss.pids), "process", "processes")
            yield f"  {loss.count} {loss.lost}: {loss.error} [{loss.stage}, {procs}]", True
        if len(run.losses) > SHOWN_LOSSES:
            yield f"  … and {len(run.losses) - SHOWN_LOSSES} other kinds", True
