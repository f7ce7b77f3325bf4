"""Read a TORCH_TRACE folder (PyTorch's structured trace, what tlparse reads) for the Inductor
output code it carries.

Each log line is a glog prefix and a JSON object (`V1127 15:01:42.327000 469 torch/…py:2575] {…}`);
a record with `has_payload` is followed by its payload, one line per payload line, each starting
with a tab. `inductor_output_code` records carry a graph's wrapper module; the
`triton_kernel_info` artifact of the same graph names each kernel's config when Inductor ran one
(`only_config`) or took it from its autotune cache (`best_config`). A graph is named as tlparse
names it: `[frame_id/frame_compile_id]`, `_attempt` when retried, `!autograd_id/` first under
compiled autograd, and `rank N` when the folder has several ranks' logs.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tritonbisect.core.errors import InputError
from tritonbisect.traces.decoding import iter_lines
from tritonbisect.traces.inductor_trace import Graph, graph_tag, inductor_trace
from tritonbisect.traces.reader import Trace, TraceFile

LINE = re.compile(rb"^[VIWEC]\d{4} [\d:.]+\s+\d+ [^\]]*\] (\{.*\})\s*$")
MAX_PAYLOAD = 256 << 20


def is_torch_trace_line(raw: bytes) -> bool:
    return LINE.match(raw) is not None


def looks_like_torch_trace(path: Path) -> bool:
    """The first line of the file is a structured-trace record (compression told by content)."""
    try:
        with path.open("rb") as fh:
            head = fh.read(4)
        if head.startswith((b"\x1f\x8b", b"\x28\xb5\x2f\xfd")):
            kind = "gzip" if head.startswith(b"\x1f\x8b") else "zstd"
            first = next((raw for _, raw, _ in iter_lines(path, kind)), b"")
        else:
            with path.open("rb") as fh:
                first = fh.readline(1 << 16)
    except (OSError, InputError):
        return False
    return is_torch_trace_line(first.rstrip(b"\n"))


def trace_logs(folder: Path) -> list[Path]:
    try:
        return sorted(p for p in folder.iterdir() if p.is_file() and not p.is_symlink() and (
            p.name.startswith("dedicated_log_torch_trace") or p.suffix in (".log", ".gz", ".zst"))
            and looks_like_torch_trace(p))
    except OSError:
        return []


@dataclass
class _Record:
    meta: dict[str, Any]
    line: int
    payload: list[str] = field(default_factory=list)


def _records(path: Path) -> tuple[list[_Record], list[str]]:
    with path.open("rb") as fh:
        head = fh.read(4)
    kind = "gzip" if head.startswith(b"\x1f\x8b") else "zstd" if head.startswith(b"\x28\xb5\x2f\xfd") else "none"
    out: list[_Record] = []
    notes: list[str] = []
    current: _Record | None = None
    size = 0
    for line_no, raw, _last in iter_lines(path, kind):
        if raw.startswith(b"\t"):
            if current is not None and size < MAX_PAYLOAD:
                text = raw[1:].decode("utf-8", errors="replace")
                current.payload.append(text)
                size += len(text)
            continue
        m = LINE.match(raw)
        if m is None:
            continue
        try:
            meta = json.loads(m.group(1))
        except ValueError:
            notes.append(f"{path.name}:{line_no}: a record that is not JSON was skipped")
            current = None
            continue
        current = _Record(meta, line_no) if isinstance(meta, dict) else None
        if current is not None and any(k in meta for k in ("inductor_output_code", "artifact")):
            out.append(current)
    return out, notes


def _label(meta: dict[str, Any], rank: str | None) -> str:
    frame, compile_id = meta.get("frame_id"), meta.get("frame_compile_id")
    label = f"{frame}/{compile_id}" if frame is not None else "?"
    if meta.get("compiled_autograd_id") is not None:
        label = f"!{meta['compiled_autograd_id']}/{label}"
    if meta.get("attempt"):
        label += f"_{meta['attempt']}"
    return f"[{label}]" + (f" rank {rank}" if rank is not None else "")


def _rank(path: Path) -> str | None:
    m = re.search(r"rank_(\d+)", path.name)
    return m.group(1) if m else None


def torch_trace(root: Path) -> Trace:
    logs = [root] if root.is_file() else trace_logs(root)
    if not logs:
        raise InputError(f"{root}: no TORCH_TRACE log (dedicated_log_torch_trace_*.log) in it")
    ranks = {_rank(p) for p in logs}
    graphs: list[Graph] = []
    notes: list[str] = []
    files: list[TraceFile] = []
    for log in logs:
        records, log_notes = _records(log)
        notes.extend(log_notes)
        rank = _rank(log) if len(ranks) > 1 else None
        info: dict[str, dict[str, Any]] = {}
        for rec in records:
            artifact = rec.meta.get("artifact")
            if isinstance(artifact, dict) and artifact.get("name") == "triton_kernel_info" and rec.payload:
                try:
                    loaded = json.loads("\n".join(rec.payload))
                except ValueError:
                    continue
                if isinstance(loaded, dict):
                    info.setdefault(_label(rec.meta, rank), {}).update(loaded)
        count = 0
        for rec in records:
            if "inductor_output_code" not in rec.meta or not rec.payload:
                continue
            text = "\n".join(rec.payload)
            expected = rec.meta.get("has_payload")
            damaged = None
            if isinstance(expected, str) and hashlib.md5(text.encode()).hexdigest() != expected:
                damaged = (f"{log.name}:{rec.line}: the output code's payload does not match its recorded hash (the log "
                           "was cut or edited)")
                notes.append(damaged)
            label = _label(rec.meta, rank)
            graphs.append(Graph(label=label, tag=graph_tag(label.replace("rank ", "r")), path=log, text=text,
                                line=rec.line + 1, kernel_info=info.get(label, {}), damaged=damaged))
            count += 1
        files.append(TraceFile(path=log, rank=_rank(log), records=count))
    if not graphs:
        raise InputError(f"{root}: its TORCH_TRACE logs hold no inductor_output_code record (no graph was compiled by "
                         "Inductor while tracing, or the logs were cut)")
    return inductor_trace(root, graphs, "TORCH_TRACE", files=files,
                          notes=[f"TORCH_TRACE: {len(graphs)} Inductor graph{'s' if len(graphs) != 1 else ''}", *notes])
