"""`tritonbisect info`: what a trace holds — kernels, launches, compile parameters."""

from __future__ import annotations

from typing import Any

from tritonbisect.traces.reader import GRAPH_CAPTURE_NOTE, Compilation, Launch, Trace
from tritonbisect.traces.replayable import refuse_reason

_SHORT_DTYPES = {
    "float32": "f32", "float16": "f16", "bfloat16": "bf16", "float64": "f64",
    "int64": "i64", "int32": "i32", "int16": "i16", "int8": "i8", "uint8": "u8", "bool": "bool",
}  # fmt: skip


def arg_summary(name: str, info: Any) -> str:
    if not isinstance(info, dict):
        return f"{name}=?"
    kind = info.get("type")
    if kind == "tensor":
        dtype = str(info.get("dtype", "?")).replace("torch.", "")
        dtype = _SHORT_DTYPES.get(dtype, dtype)
        dims = info.get("shape") or []
        shape = "x".join(str(s) for s in dims) if isinstance(dims, list) else "?"
        shape = shape or "scalar"
        extra = []
        if info.get("storage_offset"):
            extra.append(f"+{info['storage_offset']}")
        if info.get("is_contiguous") is False:
            extra.append(f"stride {tuple(info.get('stride') or [])}")
        data = "blob" if info.get("blob_path") else ("stats" if "mean" in info else "no data")
        return f"{name}={dtype}[{shape}]{''.join(' ' + e for e in extra)} {data}"
    if kind in ("int", "float", "bool", "str"):
        return f"{name}={info.get('value')!r}" if kind == "str" else f"{name}={info.get('value')}"
    if kind == "NoneType":
        return f"{name}=None"
    return f"{name}=<{kind}>"


def _compile_line(comp: Compilation) -> str:
    m = comp.metadata
    target = m.get("target") or {}
    tgt = f"{target.get('backend', '?')} {target.get('arch', '?')}" if isinstance(target, dict) else str(target)
    params = " ".join(f"{k}={m[k]}" for k in ("num_warps", "num_stages", "num_ctas", "maxnreg") if m.get(k) is not None)
    inductor = m.get("inductor")
    if isinstance(inductor, dict):  # Inductor output code: one compilation per config
        return (f"config {inductor.get('config')}: {inductor.get('config_label')} ({inductor.get('config_origin')}); "
                f"target {tgt}; @triton_heuristics.{inductor.get('heuristic') or '?'} at line {comp.line}")
    if comp.python_source is None and comp.ir:
        return f"IR {', '.join(sorted(comp.ir))}: {params or 'options not recorded'}; target {tgt}"
    src = comp.python_source or {}
    if src:
        start = src.get("function_start_line", src.get("start_line"))
        end = src.get("function_end_line", src.get("end_line"))
        mode = "full file" if "function_start_line" in src else "function only"
        where = f"{src.get('file_path', '?')}:{start}-{end} ({mode})"
    else:
        where = "no Python source"
    return (
        f"compilation {comp.hash[:12]} (line {comp.line}): {params}; triton {m.get('triton_version', '?')}, target {tgt}; "
        f"source {where}"
    )


def _flags(trace: Trace, launch: Launch) -> str:
    flags = []
    if launch.autotune_benchmark:
        flags.append("autotune benchmark")
    if launch.after:
        flags.append("outputs after launch recorded")
    reason = refuse_reason(trace, launch)
    if reason:
        if launch.graph_capture:
            warmup = trace.warmup_for(launch)
            flags.append("CUDA-graph capture: cannot reproduce" + (
                f"; its eager warm-up is launch {warmup[0].index}" if warmup else ""))
        elif trace.compilation_of(launch) is None:
            flags.append("no compilation: cannot reproduce")
        else:
            flags.append("no arguments: cannot reproduce")
    return f" [{'; '.join(flags)}]" if flags else ""


def render_info(trace: Trace, kernel: str | None = None, max_launches: int = 50) -> str:
    lines: list[str] = []
    artifact = trace.kind != "tritonparse"
    lines.append(f"{trace.kind} {trace.root}" if artifact else f"trace {trace.root}")
    shown_files = trace.files if not artifact or len(trace.files) <= 6 else trace.files[:3]
    for tf in shown_files:
        if artifact:
            lines.append(f"  file {tf.path}" + (f" (rank {tf.rank})" if tf.rank is not None else ""))
            continue
        who = ", ".join(
            f"{k} {v}" for k, v in (("rank", tf.rank), ("pid", tf.pid), ("host", tf.host)) if v is not None
        )
        kind = "parsed" if tf.parsed else "raw"
        lines.append(f"  file {tf.path.name}: {kind}, {tf.compression} compression, {tf.records} records"
                     + (f" ({who})" if who else ""))
    if len(shown_files) < len(trace.files):
        lines.append(f"  … and {len(trace.files) - len(shown_files)} more")
    comps = len(trace.compilations)
    n = len(trace.launches)
    lines.append(f"  {comps} compilation{'s' if comps != 1 else ''}, {n} launch{'es' if n != 1 else ''}")
    lines.extend(f"  note: {note}" for note in trace.notes)
    if trace.ignored:
        lines.append("  other tritonparse events (not needed): "
                     + ", ".join(f"{k} x{v}" for k, v in sorted(trace.ignored.items())))
    if trace.skipped:
        lines.append("  skipped unknown event lines: " + ", ".join(f"{k} x{v}" for k, v in sorted(trace.skipped.items())))
    names = [kernel] if kernel else trace.kernels()
    if kernel and kernel not in trace.kernels():
        trace.require_kernel(kernel)  # raises, listing the kernels there are
    if not kernel:  # kernels an artifact names but no oracle can be made of (a source that does not parse)
        for name, notes in trace.kernel_notes.items():
            if name not in names:
                lines.append("")
                lines.append(f"kernel {name}: no compilation")
                lines.extend(f"  · {note}" for note in notes)
    for name in names:
        launches = trace.launches_of(name)
        comps_of = [c for c in trace.compilations.values() if c.name == name]
        lines.append("")
        lines.append(f"kernel {name}: {len(launches)} launch{'es' if len(launches) != 1 else ''}, "
                     f"{len(comps_of)} compilation{'s' if len(comps_of) != 1 else ''}")
        lines.extend(f"  · {note}" for note in trace.kernel_notes.get(name, []))
        for comp in comps_of:
            n = sum(1 for launch in launches if launch.hash == comp.hash)
            lines.append(f"  {_compile_line(comp)}; {n} launch{'es' if n != 1 else ''}")
        if not kernel:
            if launches:
                default = trace.select_launch(name)
                lines.append(f"  default launch for repro: {default.index} (line {default.line})"
                             f"{_flags(trace, default)}")
            continue
        lines.append("  launches (id, where in the trace, grid, compilation, arguments):")
        shown = launches if len(launches) <= max_launches else launches[: max_launches // 2] + launches[-max_launches // 2 :]
        previous = -1
        for launch in shown:
            if launch.index != previous + 1:
                lines.append(f"    … {launch.index - previous - 1} more …")
            previous = launch.index
            args = ", ".join(arg_summary(k, v) for k, v in launch.args.items()
                             if k != GRAPH_CAPTURE_NOTE) or "(none recorded)"
            h = (launch.hash or "?")[:12]
            where = f"{launch.file.name}:{launch.line}" if len(trace.files) > 1 else f"line {launch.line}"
            lines.append(f"    {launch.index:>4}  {where}  grid {tuple(launch.grid)}  {h}  "
                         f"{args}{_flags(trace, launch)}")
        if launches:
            lines.append(f"  default launch for repro: {trace.select_launch(name).index}")
    return "\n".join(lines)


def info_dict(trace: Trace, kernel: str | None = None) -> dict[str, Any]:
    names = [kernel] if kernel else trace.kernels()
    if kernel and kernel not in trace.kernels():
        trace.require_kernel(kernel)
    out: dict[str, Any] = {
        "trace": str(trace.root),
        "kind": trace.kind,
        "notes": trace.notes,
        "files": [
            {"path": str(f.path), "parsed": f.parsed, "compression": f.compression, "records": f.records,
             "rank": f.rank, "pid": f.pid, "host": f.host}
            for f in trace.files
        ],
        "skipped_events": dict(trace.skipped),
        "kernels": [],
    }
    for name in names:
        launches = trace.launches_of(name)
        out["kernels"].append({
            "name": name,
            "notes": trace.kernel_notes.get(name, []),
            "compilations": [
                {"hash": c.hash, **{k: c.metadata.get(k) for k in ("num_warps", "num_stages", "num_ctas",
                                                                  "triton_version", "target")}}
                for c in trace.compilations.values() if c.name == name
            ],
            "launches": [
                {"id": launch.index, "file": str(launch.file), "line": launch.line, "grid": launch.grid,
                 "hash": launch.hash, "autotune_benchmark": launch.autotune_benchmark,
                 "reproducible": refuse_reason(trace, launch) is None,
                 "args": {k: arg_summary(k, v) for k, v in launch.args.items()}}
                for launch in launches
            ],
            "default_launch": trace.select_launch(name).index if launches else None,
        })
    return out
