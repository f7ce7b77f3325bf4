"""Read tritonparse traces: raw or parsed NDJSON; plain, gzip members or zstd frames.

The compression of a file is told by its first bytes, never by its name. A trace may be one
file or a folder of several (one per rank/process, raw `logs/` and/or `parsed/` output);
launches are joined to their compilation by `compilation_metadata.hash`, across files.

Nothing here imports torch or triton: the tool's own environment has neither.
"""

from __future__ import annotations

import contextlib
import json
import re
import shlex
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tritonbisect.core.errors import InputError, unexpected_shapes
from tritonbisect.core.untrusted import one_line
from tritonbisect.traces.arg_records import normalise_args
from tritonbisect.traces.blobs import resolve_blob as resolve_blob  # re-exported
from tritonbisect.traces.decoding import iter_lines, sniff
from tritonbisect.traces.ir_content import ir_texts

# Event types tritonparse (raw and parsed output) or our own tracer write. Others are
# skipped and counted.
USED_EVENTS = {"compilation", "launch", "tritonbisect_launch_exit"}
KNOWN_IGNORED_EVENTS = {
    "launch_diff",
    "ir_analysis",
    "roofline",
    "autotune",
    "autotune_analysis",
    "autotune_summary",
    "compilation_summary",
    "unified_trace",
}

# Marker tritonparse puts in `extracted_args` for launches during CUDA-graph capture.
GRAPH_CAPTURE_NOTE = "_note"

_TRACE_SUFFIXES = (".bin.ndjson", ".ndjson.gz", ".ndjson.zst", ".ndjson.zstd", ".ndjson")


@dataclass
class TraceFile:
    path: Path
    compression: str = "none"  # none | gzip | zstd
    parsed: bool = False  # output of `tritonparse parse` (…_mapped.ndjson.gz)
    rank: str | None = None  # "0", "1", … or "none"
    pid: int | None = None
    host: str | None = None
    records: int = 0

    @property
    def identity(self) -> str:
        """The file name without the parsed/compression suffixes (raw and parsed agree)."""
        return trace_identity(self.path.name)


@dataclass
class Compilation:
    hash: str
    name: str
    metadata: dict[str, Any]
    python_source: dict[str, Any] | None
    file: Path
    line: int
    ttir: str | None = None  # the TTIR the traced compile produced (its signature types the arguments)
    ir: dict[str, str] = field(default_factory=dict)  # "ttir"/"ttgir" -> the IR text the traced compile produced


@dataclass
class Launch:
    name: str
    hash: str | None
    grid: list[int]
    args: dict[str, Any]
    file: Path
    line: int
    order: tuple  # sort key: trace order across files
    compilation_metadata: dict[str, Any] = field(default_factory=dict)
    stream: Any = None
    stack: list[dict] = field(default_factory=list)
    seq: Any = None  # tritonbisect tracer's launch sequence number (joins the exit event)
    after: dict[str, Any] = field(default_factory=dict)  # arg name -> after-launch record
    index: int = -1  # index among the launches of its kernel, set by Trace
    benchmark: bool = False  # tritonbisect tracer: made while an autotuner benchmarked configs

    @property
    def graph_capture(self) -> bool:
        note = self.args.get(GRAPH_CAPTURE_NOTE) if isinstance(self.args, dict) else None
        return isinstance(note, str) and "graph" in note.lower()

    @property
    def by_tritonbisect(self) -> bool:
        """Recorded by `tritonbisect trace` (which numbers its launches), not by tritonparse."""
        return self.seq is not None

    def layout(self) -> dict[str, Any] | None:
        """Each argument's memory and value, comparable across launches: tensors by pointer,
        dtype, shape and stride; other arguments by value. None when the trace does not say
        (tritonparse records nothing of a launch made during CUDA-graph capture)."""
        if not isinstance(self.args, dict):
            return None
        named = {k: v for k, v in self.args.items() if k != GRAPH_CAPTURE_NOTE}
        if not named:
            return None
        result: dict[str, Any] = {}
        for name, rec in named.items():
            if not isinstance(rec, dict):
                result[name] = rec
            elif rec.get("type") == "tensor":
                result[name] = ("tensor", rec.get("data_ptr"), rec.get("dtype"), tuple(rec.get("shape") or ()),
                                tuple(rec.get("stride") or ()))
            else:
                result[name] = (rec.get("type"), json.dumps(rec.get("value", rec.get("repr")), sort_keys=True))
        return result

    @property
    def autotune_benchmark(self) -> bool:
        """A launch made by the autotuner while benchmarking configs (not the real call)."""
        if self.benchmark:
            return True
        for frame in self.stack or []:
            fname = str(frame.get("filename", ""))
            if fname.endswith("autotuner.py") and frame.get("name") in ("_bench", "benchmark", "kernel_call"):
                return True
        return False

    def where(self) -> str:
        return f"{self.file}:{self.line}"


@dataclass
class Trace:
    root: Path
    files: list[TraceFile]
    compilations: dict[str, Compilation]
    launches: list[Launch]
    skipped: Counter  # unknown event type -> count
    ignored: Counter  # known but unused event type -> count
    # what the trace was read from: "tritonparse", or an artifact PyTorch or Triton wrote (traces.sources)
    kind: str = "tritonparse"
    notes: list[str] = field(default_factory=list)  # what `info` says about the whole source
    kernel_notes: dict[str, list[str]] = field(default_factory=dict)  # … and about each kernel
    ir_only: bool = False  # IR alone, no Python source: its oracles compile the IR (see default_stage)

    def kernel_named(self, name: str) -> str:
        """The kernel a user's name stands for: itself, the kernel of a compilation of that hash
        or folder (a kernel dump's folder name), or the one kernel qualified from it
        (`triton_mm__4xzbjyvo`, `triton_poi_fused_add_0__g1_0`); else the name as given."""
        names = self.kernels()
        if name in names:
            return name
        for comp in self.compilations.values():
            if name in (comp.hash, comp.file.name):
                return comp.name
        qualified = [n for n in names if n.startswith(f"{name}__")]
        return qualified[0] if len(qualified) == 1 else name

    def default_stage(self, kernel: str) -> str:
        """The IR stage an oracle of this IR-only source compiles: the TTGIR where there is one."""
        stages = {s for c in self.compilations.values() if c.name == kernel for s in c.ir}
        return "ttgir" if "ttgir" in stages or not stages else sorted(stages)[0]

    def kernels(self) -> list[str]:
        names: list[str] = []
        for launch in self.launches:
            if launch.name not in names:
                names.append(launch.name)
        for comp in self.compilations.values():
            if comp.name not in names:
                names.append(comp.name)
        return names

    def launches_of(self, kernel: str) -> list[Launch]:
        return [launch for launch in self.launches if launch.name == kernel]

    def compilation_of(self, launch: Launch) -> Compilation | None:
        if launch.hash is None:
            return None
        return self.compilations.get(launch.hash)

    def require_kernel(self, kernel: str) -> list[Launch]:
        names = self.kernels()
        if kernel not in names:
            available = ", ".join(names) if names else "none"
            raise InputError(f"kernel '{kernel}' is not in trace {self.root}; available kernels: {available}")
        launches = self.launches_of(kernel)
        if not launches:
            stages = sorted({s for c in self.compilations.values() if c.name == kernel for s in c.ir})
            ir_oracle = f" and the IR oracle (--from {'|'.join(stages)})" if stages else ""
            raise InputError(
                f"kernel '{kernel}' was compiled but never launched in trace {self.root}, so no launch can be "
                f"reproduced (capture with enable_trace_launch=True); the compile oracle (--mode compile){ir_oracle} "
                f"can still be made from this trace: tritonbisect repro {shlex.quote(str(self.root))} --kernel {kernel} --mode compile "
                "--out DIR"
            )
        return launches

    def select_launch(self, kernel: str, launch_id: int | None = None, line: int | None = None) -> Launch:
        """The launch to reproduce: by index among the kernel's launches, by trace line, or
        by default the first reproducible launch that is not an autotuner benchmark."""
        launches = self.require_kernel(kernel)
        if launch_id is not None and line is not None:
            raise InputError("give either --launch-id or --line, not both")
        if line is not None:
            hits = [launch for launch in launches if launch.line == line]
            if not hits:
                lines = ", ".join(str(launch.line) for launch in launches[:20])
                more = ", …" if len(launches) > 20 else ""
                raise InputError(
                    f"no launch of kernel '{kernel}' on line {line} of {self.root}; "
                    f"its launches are on lines {lines}{more}"
                )
            if len(hits) > 1:
                files = ", ".join(str(launch.file.name) for launch in hits)
                raise InputError(f"line {line} holds a launch of '{kernel}' in several files ({files}); pass one file")
            return hits[0]
        if launch_id is not None:
            if not 0 <= launch_id < len(launches):
                raise InputError(
                    f"launch id {launch_id} is out of range: kernel '{kernel}' has "
                    f"{len(launches)} launch{'es' if len(launches) != 1 else ''} (ids 0-{len(launches) - 1})"
                )
            return launches[launch_id]
        # The first real launch: later ones often find their outputs already holding the
        # result (a buffer reused across iterations), which hides kernels that skip writes.
        usable = [launch for launch in launches if self.reproducible(launch)]
        real = [launch for launch in usable if not launch.autotune_benchmark]
        return (real or usable or launches)[0]

    def warmup_for(self, captured: Launch) -> tuple[Launch, list[str]] | None:
        """The eager launch that stands for a launch made during CUDA-graph capture, and the
        tensor arguments it had elsewhere in memory. CUDA graph trees run each graph once eagerly
        before capturing it: the same compiled kernel, in the same process, outside capture and
        benchmarking, with the same argument values, dtypes, shapes and strides; parameters stay
        where they were, while intermediates the graph allocates from its own memory pool may
        move. The last launch with every buffer in place wins, else the last with some moved.
        None when the trace cannot tell (no layout recorded) or there is none."""
        wanted = captured.layout()
        if wanted is None:
            return None
        exact: Launch | None = None
        moved: tuple[Launch, list[str]] | None = None
        for launch in self.launches_of(captured.name):
            if launch.order >= captured.order:
                break
            if not (launch.hash == captured.hash and launch.file == captured.file and not launch.autotune_benchmark
                    and self.reproducible(launch)):
                continue
            have = launch.layout()
            if have is None or set(have) != set(wanted):
                continue
            if have == wanted:
                exact = launch
                continue
            elsewhere = []
            for name, rec in wanted.items():
                other = have[name]
                if rec == other:
                    continue
                if rec[0] == "tensor" and other[0] == "tensor" and rec[2:] == other[2:]:
                    elsewhere.append(name)
                else:
                    break
            else:
                moved = (launch, elsewhere)
        if exact is not None:
            return exact, []
        return moved

    def reproducible(self, launch: Launch) -> bool:
        """Recorded arguments, outside CUDA-graph capture, with its compilation in the trace."""
        return bool(launch.args) and not launch.graph_capture and self.compilation_of(launch) is not None


def reading(trace: Path | str | None) -> contextlib.AbstractContextManager[None]:
    """Code that meets a record of a shape tritonparse never writes (a trace edited by hand, or
    crafted) ends in one line naming the trace and where the tool met it, not a traceback."""
    return unexpected_shapes(f"trace {trace}", "is it a trace as tritonparse or `tritonbisect trace` write them?")


# --- file names -------------------------------------------------------------------------


def trace_identity(name: str) -> str:
    for suffix in ("_mapped.ndjson.gz", "_mapped.ndjson"):
        if name.endswith(suffix):
            return name[: -len(suffix)]
    for suffix in _TRACE_SUFFIXES:
        if name.endswith(suffix):
            return name[: -len(suffix)]
    return name


def parse_file_name(path: Path) -> TraceFile:
    """rank/pid/host from `…_rank_{N|none}_pid_{PID}_host_{HOST}_…`; legacy names lack some."""
    name = path.name
    tf = TraceFile(path=path, parsed="_mapped." in name)
    if m := re.search(r"_rank_(\d+|none)_", name):
        tf.rank = m.group(1)
    if m := re.search(r"_pid_(\d+)_", name):
        tf.pid = int(m.group(1))
    if m := re.search(r"_host_([A-Za-z0-9.-]+?)_", name):
        tf.host = m.group(1)
    return tf


def _is_trace_name(name: str) -> bool:
    return name.endswith(_TRACE_SUFFIXES) and not name.startswith(".")


def find_trace_files(path: Path) -> list[TraceFile]:
    """The trace files of a path: the file itself, or a folder's trace files. In a folder,
    a parsed file is dropped when the raw file of the same process is also there."""
    if not path.exists():
        raise InputError(f"trace {path} does not exist")
    if path.is_file():
        return [parse_file_name(path)]
    found = sorted(p for p in path.iterdir() if p.is_file() and _is_trace_name(p.name))
    if not found:
        found = sorted(
            p
            for p in path.rglob("*")
            if p.is_file() and _is_trace_name(p.name) and "saved_tensors" not in p.parts
        )
    if not found:
        raise InputError(f"no trace files (*.ndjson, *.bin.ndjson, *.ndjson.gz) in folder {path}")
    files = [parse_file_name(p) for p in found]
    raw_ids = {f.identity for f in files if not f.parsed}
    files = [f for f in files if not (f.parsed and f.identity in raw_ids)]

    def key(f: TraceFile) -> tuple:
        rank = -1 if f.rank in (None, "none") else int(f.rank)
        return (rank, f.pid if f.pid is not None else -1, str(f.path))

    return sorted(files, key=key)


# --- decoding ---------------------------------------------------------------------------


def iter_records(tf: TraceFile) -> Iterator[tuple[int, dict]]:
    """(line, record) of each JSON object in a trace file; a corrupt line is an InputError."""
    tf.compression = sniff(tf.path)
    for line_no, raw, is_last in iter_lines(tf.path, tf.compression):
        if not raw.strip():
            continue
        try:
            record = json.loads(raw)
        except (UnicodeDecodeError, ValueError) as exc:
            detail = getattr(exc, "msg", None) or str(exc)
            col = getattr(exc, "colno", None)
            where = f", column {col}" if col else ""
            hint = "; the file looks truncated (cut off mid-record)" if is_last else ""
            raise InputError(f"{tf.path}:{line_no}: corrupt trace record ({detail}{where}){hint}") from None
        if not isinstance(record, dict):
            raise InputError(f"{tf.path}:{line_no}: corrupt trace record (a JSON {type(record).__name__}, not an object)")
        tf.records += 1
        yield line_no, record


# --- loading ----------------------------------------------------------------------------


def _launch_from(record: dict, tf: TraceFile, line: int, order: tuple) -> Launch:
    meta = record.get("compilation_metadata") or record.get("metadata") or {}
    if not isinstance(meta, dict):
        meta = {}
    grid = record.get("grid") or [1]
    if isinstance(grid, int):
        grid = [grid]
    if not isinstance(grid, list) or not all(isinstance(g, int) and not isinstance(g, bool) for g in grid):
        raise InputError(f"{tf.path}:{line}: corrupt trace record (a launch's grid is {str(grid)[:60]}, not integers)")
    args = record.get("extracted_args")
    args = normalise_args(args) if isinstance(args, dict) else {}
    stack = record.get("stack")
    return Launch(
        name=one_line(record.get("name") or meta.get("name") or "?"),
        hash=_text_or_none(meta.get("hash")),
        grid=list(grid),
        args=args,
        file=tf.path,
        line=line,
        order=order,
        compilation_metadata=meta,
        stream=record.get("stream"),
        stack=[f for f in stack if isinstance(f, dict)] if isinstance(stack, list) else [],
        seq=_key_or_none(record.get("tritonbisect_launch_seq")),
        # tritonparse's parse step names the autotuner's benchmark runs (sessions split by key from 0.7)
        benchmark=record.get("tritonbisect_benchmark") is True or record.get("autotune_launch_type") == "benchmark",
    )


def _text_or_none(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def _key_or_none(value: Any) -> int | str | None:
    """A value that can key a dict (the tracer's launch numbers), else None."""
    return value if isinstance(value, (int, str)) and not isinstance(value, bool) else None


def _object(value: Any) -> dict:
    return value if isinstance(value, dict) else {}


def _richer_source(payload: dict, known: Compilation) -> bool:
    """A compilation record of an already known kernel hash replaces the known one when it
    holds the kernel's whole source file and the known one does not (the tritonbisect tracer
    records a kernel compiled in another process again at its first launch, sometimes with
    only the function's source)."""
    new = _object(payload.get("python_source"))
    old = known.python_source or {}
    return "function_start_line" in new and "function_start_line" not in old


def load_trace(path: Path | str) -> Trace:
    """Read every trace file under `path` and join launches with their compilations; or, told by
    content, what PyTorch and Triton wrote while debugging (traces.sources): Inductor output code,
    a TORCH_COMPILE_DEBUG or TORCH_TRACE folder, a TRITON_KERNEL_DUMP folder, an MLIR reproducer."""
    from tritonbisect.traces.sources import load_artifact

    root = Path(path)
    artifact = load_artifact(root)
    if isinstance(artifact, Trace):
        return artifact
    files = find_trace_files(root)
    compilations: dict[str, Compilation] = {}
    launches: list[Launch] = []
    skipped: Counter = Counter()
    ignored: Counter = Counter()
    for file_index, tf in enumerate(files):
        exits: dict[Any, dict] = {}
        file_launches: list[Launch] = []
        for line, record in iter_records(tf):
            etype = record.get("event_type")
            if not isinstance(etype, str):
                etype = None
            if etype == "compilation":
                payload = _object(record.get("payload"))
                meta = _object(payload.get("metadata"))
                h = _text_or_none(meta.get("hash"))
                if not h:
                    skipped["compilation without hash"] += 1
                    continue
                if h not in compilations or _richer_source(payload, compilations[h]):
                    ir = ir_texts(payload)
                    compilations[h] = Compilation(
                        hash=h,
                        name=one_line(meta.get("name") or "?"),
                        metadata=meta,
                        python_source=_object(payload.get("python_source")) or None,
                        file=tf.path,
                        line=line,
                        ttir=ir.get("ttir"),
                        ir=ir,
                    )
            elif etype == "launch":
                occurrence = record.get("occurrence_id")
                order = (file_index, occurrence if isinstance(occurrence, int) else line, line)
                file_launches.append(_launch_from(record, tf, line, order))
            elif etype == "tritonbisect_launch_exit":
                exits[_key_or_none(record.get("tritonbisect_launch_seq"))] = record
            elif etype in KNOWN_IGNORED_EVENTS:
                ignored[etype] += 1
            else:
                skipped[str(etype) if etype is not None else "(no event_type)"] += 1
        for launch in file_launches:
            if launch.seq is not None and launch.seq in exits:
                outputs = exits[launch.seq].get("outputs")
                if isinstance(outputs, dict):
                    launch.after = outputs
        launches.extend(file_launches)
    launches.sort(key=lambda launch: launch.order)
    per_kernel: Counter = Counter()
    for launch in launches:
        launch.index = per_kernel[launch.name]
        per_kernel[launch.name] += 1
    return Trace(
        root=root,
        files=files,
        compilations=compilations,
        launches=launches,
        skipped=skipped,
        ignored=ignored,
    )
