"""Inductor output code (one module or several graphs' modules) as a Trace the oracles read.

Each kernel and each of its configs (inductor_configs) is one compilation: the kernel's source as a
whole captured file, the triton_meta signature, constants and specialization (`configs`), the
target from its DeviceProperties, num_warps/num_stages and the constexpr values of the config. Each
`.run(...)` call that the wrapper's `call()` (or the kernel's own benchmark harness) makes is one
launch per config: the arguments its harness allocates (shape, stride, dtype; no data, so the
oracle seeds them and a good Triton's outputs are the golden), tensors views of one buffer where
they were, and the grid its grid_type computes from the config. A call whose arguments the reader
cannot follow gets no launch (the compile oracle still can be made); the reason is a note.

A kernel name that two graphs both use (Inductor numbers kernels per graph) is qualified with its
graph (`triton_poi_fused_add_0__g1_0`), and the oracle's function is renamed to match, as it is
where a user kernel's Triton function (`scaled_add`) is bound under Inductor's name (`scaled_add_0`).
"""

from __future__ import annotations

import hashlib
import json
import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tritonbisect.core.errors import InputError
from tritonbisect.traces.inductor_code import (
    CallSite,
    InductorKernel,
    InductorModule,
    Tensor,
    Unknown,
    read_output_code,
)
from tritonbisect.traces.inductor_configs import KernelConfig, kernel_configs
from tritonbisect.traces.reader import Compilation, Launch, Trace, TraceFile

_SIGNATURE_TO_TORCH = {
    "fp32": "float32", "fp16": "float16", "bf16": "bfloat16", "fp64": "float64",
    "i8": "int8", "i16": "int16", "i32": "int32", "i64": "int64", "u8": "uint8", "u16": "uint16",
    "u32": "uint32", "u64": "uint64", "i1": "bool", "fp8e4nv": "float8_e4m3fn", "fp8e5": "float8_e5m2",
    "fp8e4b8": "float8_e4m3fnuz", "fp8e5b16": "float8_e5m2fnuz",
}  # fmt: skip
_ELEMENT_SIZE = {"float64": 8, "int64": 8, "uint64": 8, "float32": 4, "int32": 4, "uint32": 4, "float16": 2,
                 "bfloat16": 2, "int16": 2, "uint16": 2}
_BUFFER_SPACING = 1 << 32  # synthetic addresses: buffers far apart, each 1024-byte aligned


@dataclass
class Graph:
    """One compiled graph's output code and where it came from."""

    label: str  # "[0/0]" (TORCH_TRACE), "model__0_inference_0.0" (debug folder), "" (one file)
    tag: str  # identifier-safe form of the label, to qualify clashing kernel names
    path: Path
    text: str
    line: int = 1  # line in `path` where `text` starts (a TORCH_TRACE payload)
    kernel_info: dict[str, Any] = field(default_factory=dict)  # TORCH_TRACE triton_kernel_info
    damaged: str | None = None  # why the text may be incomplete (a TORCH_TRACE payload that fails its hash)


def graph_tag(label: str) -> str:
    text = re.sub(r"\W+", "_", label.replace("model__", "")).strip("_")
    return f"g{text}" if text else "g"


def _target(kernel: InductorKernel) -> dict[str, Any] | None:
    device = kernel.triton_meta.get("device")
    if not isinstance(device, dict):
        return None
    backend = device.get("type")
    if backend not in ("cuda", "hip"):
        return None
    arch = device.get("cc")
    warp = device.get("warp_size") or (32 if backend == "cuda" else 64)
    return {"backend": backend, "arch": arch, "warp_size": warp} if arch not in (None, "") else None


def _attrs(kernel: InductorKernel) -> dict[str, Any]:
    configs = kernel.triton_meta.get("configs")
    first = configs[0] if isinstance(configs, list) and configs else None
    if isinstance(first, dict) and "__call__" in first:  # AttrsDescriptor.from_dict({...}) / instance_descriptor(...)
        inner = (first.get("__args__") or [{}])[0] if first.get("__args__") else first
        return {k: v for k, v in inner.items() if not k.startswith("__")} if isinstance(inner, dict) else {}
    return dict(first) if isinstance(first, dict) else {}


def _renamed_source(kernel: InductorKernel, name: str) -> str:
    if name == kernel.function:
        return kernel.source
    lines = kernel.source.splitlines(keepends=True)
    for i in range(max(kernel.def_line - 1, 0), min(kernel.end_line, len(lines))):
        new = re.sub(rf"\bdef\s+{re.escape(kernel.function)}\s*\(", f"def {name}(", lines[i], count=1)
        if new != lines[i]:
            lines[i] = new
            break
    return "".join(lines)


def _digest(*parts: Any) -> str:
    return hashlib.sha256(json.dumps(parts, sort_keys=True, default=str).encode()).hexdigest()


def _arg_record(value: Any, sig_type: str, device: str, addresses: dict[str, int]) -> dict[str, Any] | None:
    if isinstance(value, Tensor):
        dtype = value.dtype or _SIGNATURE_TO_TORCH.get(sig_type.lstrip("*"), "")
        if not dtype:
            return None
        if value.buffer not in addresses:
            addresses[value.buffer] = (len(addresses) + 1) * _BUFFER_SPACING
        ptr = addresses[value.buffer] + value.offset * _ELEMENT_SIZE.get(dtype, 1)
        return {"type": "tensor", "dtype": f"torch.{dtype}", "shape": list(value.shape), "stride": list(value.stride),
                "storage_offset": value.offset, "data_ptr": ptr, "device": device,
                "is_contiguous": _contiguous(value.shape, value.stride)}
    if isinstance(value, bool):
        return {"type": "bool", "value": value}
    if isinstance(value, int):
        return {"type": "int", "value": value}
    if isinstance(value, float):
        return {"type": "float", "value": value}
    return None


def _contiguous(shape: tuple[int, ...], stride: tuple[int, ...]) -> bool:
    expected = 1
    for size, st in zip(reversed(shape), reversed(stride), strict=True):
        if size != 1 and st != expected:
            return False
        expected *= size
    return True


def _cdiv(a: int, b: int) -> int:
    return -(-a // b)


def _grid(kernel: InductorKernel, config: KernelConfig, named: dict[str, Any], extra: list[Any]) -> tuple[list[int] | None, str]:
    """The launch grid Inductor computes for this config, or None and why not."""
    meta = kernel.inductor_meta
    grid_type = str(meta.get("grid_type") or "")
    values = {**named, **config.values}

    def numel(dim: str) -> int | None:
        v = values.get(f"{dim}numel")
        return v if isinstance(v, int) and not isinstance(v, bool) else None

    def block(dim: str) -> int:
        v = values.get(f"{dim.upper()}BLOCK")
        return v if isinstance(v, int) and v > 0 else 1

    if grid_type in ("Grid1D", "Grid2D", "Grid3D", "Grid2DWithYZOverflow"):
        dims = {"Grid1D": "x", "Grid2D": "xy", "Grid3D": "xyz", "Grid2DWithYZOverflow": "xy"}[grid_type]
        grid = []
        for dim in dims:
            n = numel(dim)
            if n is None:
                return None, f"its {dim}numel is not a number the reader knows"
            grid.append(_cdiv(n, block(dim)))
        if grid_type == "Grid2DWithYZOverflow" and grid[1] > 65535:
            return None, "its y grid overflows into z (Grid2DWithYZOverflow), which the reader does not compute"
        return (grid + [1, 1])[:3], ""
    if grid_type == "FixedGrid":
        names = meta.get("fixed_grid") or []
        launcher = meta.get("extra_launcher_args") or []
        known = dict(zip(launcher, extra, strict=False))
        grid = []
        for name in names:
            v = known.get(name, values.get(name))
            if isinstance(name, int):
                v = name
            if not isinstance(v, int):
                return None, f"its fixed grid {names} is not known"
            grid.append(v)
        return (grid + [1, 1])[:3], ""
    if grid_type == "PrecomputedGrid":
        for entry in meta.get("precomputed_grids") or []:
            if isinstance(entry, dict) and entry.get("config") and all(
                    entry["config"].get(k) == v for k, v in {**config.values, **config.options}.items()
                    if k in entry["config"]):
                texts = entry.get("python") or []
                if all(isinstance(t, str) and t.strip().isdigit() for t in texts):
                    return ([int(t) for t in texts] + [1, 1])[:3], ""
                return None, f"its precomputed grid {texts} is an expression the reader does not evaluate"
        return None, "no precomputed grid for this config"
    return None, f"its grid type {grid_type or '(none)'} is not one the reader computes"


@dataclass
class _Built:
    compilations: dict[str, Compilation] = field(default_factory=dict)
    launches: list[Launch] = field(default_factory=list)
    notes: dict[str, list[str]] = field(default_factory=dict)
    order: int = 0


def _launches(kernel: InductorKernel, name: str, configs: list[tuple[KernelConfig, str]], sites: list[CallSite],
              path: Path, line_of: Any, built: _Built) -> None:
    sig = kernel.signature
    tuned = kernel.tuned_params()
    positional = [p for p in kernel.params if p not in tuned]
    device = "cuda:0" if (kernel.device_str or "cuda") == "cuda" else str(kernel.device_str)
    notes = built.notes.setdefault(name, [])
    for site in sites:
        args = list(site.args)
        extra = args[len(positional):]
        named_values = dict(zip(positional, args, strict=False))
        missing = [p for p in positional[len(args):] if p not in kernel.constants]
        unknown = [(p, v.why) for p, v in named_values.items() if isinstance(v, Unknown)]
        where = f"line {line_of(site.line)}" if site.origin == "module call()" else "its benchmark harness"
        if missing or unknown:
            why = (f"argument {unknown[0][0]} is {unknown[0][1]}" if unknown
                   else f"it passes no {', '.join(missing)}")
            notes.append(f"the call at {where}: {why}; no launch to replay (the compile oracle still can be made)")
            continue
        for p in positional[len(args):]:
            named_values[p] = kernel.constants[p]
        for config, comp_hash in configs:
            addresses: dict[str, int] = {}
            records: dict[str, Any] = {}
            for p in kernel.params:
                value = config.values.get(p) if p in tuned else named_values.get(p)
                record = _arg_record(value, sig.get(p, ""), device, addresses)
                if record is None:
                    break
                records[p] = record
            if len(records) != len(kernel.params):
                notes.append(f"the call at {where}: argument {p} has no type the reader can rebuild")
                break
            grid, why = _grid(kernel, config, named_values, extra)
            if grid is None:
                notes.append(f"the call at {where} under config {config.label()}: no grid, because {why}; the "
                             "compile oracle still can be made")
                continue
            built.order += 1
            built.launches.append(Launch(
                name=name, hash=comp_hash, grid=grid, args=records, file=path, line=line_of(site.line),
                order=(built.order,), compilation_metadata=dict(config.options)))


def _add_graph(graph: Graph, module: InductorModule, names: dict[tuple[str, str], str], built: _Built) -> None:
    def line_of(line: int) -> int:
        return graph.line + line - 1

    for kernel in module.kernels:
        name = names[(graph.label, kernel.name)]
        notes = built.notes.setdefault(name, [])
        if graph.label:
            notes.append(f"graph {graph.label}")
        if kernel.name != name:
            notes.append(f"Inductor's {kernel.name}, a name other graphs use too: the oracle's kernel is named {name}")
        elif kernel.function != name:
            notes.append(f"Triton function {kernel.function}, bound by Inductor as {name}: the oracle's kernel is "
                         f"named {name}")
        if kernel.broken:
            notes.append(f"{kernel.broken}: no oracle can be made from it")
            continue
        target = _target(kernel)
        configs = kernel_configs(kernel, graph.kernel_info.get(kernel.name) or graph.kernel_info.get(kernel.function))
        source = _renamed_source(kernel, name)
        attrs = _attrs(kernel)
        pairs: list[tuple[KernelConfig, str]] = []
        for index, config in enumerate(configs):
            comp_hash = _digest(graph.label, name, source, config.values, config.options)[:40]
            constants = {**kernel.constants, **config.values}
            meta: dict[str, Any] = {
                "name": name, "hash": comp_hash, "target": target, **config.options,
                "src_constants": constants, "src_attrs": attrs, "signature": kernel.signature,
                "inductor": {"heuristic": kernel.heuristic, "graph": graph.label, "config": index,
                             "config_label": config.label(), "config_origin": config.origin},
            }
            for key in ("enable_fp_fusion", "launch_pdl"):
                if isinstance(kernel.triton_meta.get(key), bool):
                    meta[key] = kernel.triton_meta[key]
            built.compilations[comp_hash] = Compilation(
                hash=comp_hash, name=name, metadata=meta,
                python_source={"code": source, "file_path": f"{graph.path} ({kernel.name})",
                               "function_start_line": kernel.def_line, "function_end_line": kernel.end_line},
                file=graph.path, line=line_of(kernel.line))
            pairs.append((config, comp_hash))
            notes.extend(f"config {index}: {n}" for n in config.notes)
        if len(configs) > 1:
            notes.append(f"{len(configs)} configs ({configs[0].origin}): launch ids count call sites x configs")
        if target is None:
            notes.append("its triton_meta names no CUDA or HIP device: give --compile-target for --mode compile")
        _launches(kernel, name, pairs, [c for c in module.calls if c.kernel == kernel.name], graph.path, line_of, built)


def inductor_trace(root: Path, graphs: list[Graph], kind: str, files: list[TraceFile] | None = None,
                   notes: list[str] | None = None) -> Trace:
    """The Trace of these graphs' output code; InputError when none holds a Triton kernel."""
    modules: list[tuple[Graph, InductorModule]] = []
    errors: list[str] = []
    for graph in graphs:
        try:
            modules.append((graph, read_output_code(graph.text, str(graph.path))))
        except InputError as exc:
            errors.append(f"{exc.message}; {graph.damaged}" if graph.damaged else exc.message)
    if not modules:
        raise InputError(errors[0] if len(errors) == 1 else f"{root}: no Triton kernel in its Inductor output code "
                         f"({len(graphs)} graph{'s' if len(graphs) != 1 else ''} read)")
    tags: Counter = Counter()
    for graph, _ in modules:  # two graphs of one tag (same folder name in two runs) stay apart
        tags[graph.tag] += 1
        if tags[graph.tag] > 1:
            graph.tag = f"{graph.tag}_{tags[graph.tag]}"
    uses = Counter(k.name for _, m in modules for k in m.kernels)
    names = {(g.label, k.name): (k.name if uses[k.name] == 1 or not g.label else f"{k.name}__{g.tag}")
             for g, m in modules for k in m.kernels}
    built = _Built()
    for graph, module in modules:
        _add_graph(graph, module, names, built)
        if module.notes and graph.label:
            built.notes.setdefault("", []).extend(f"graph {graph.label}: {n}" for n in module.notes)
        elif module.notes:
            built.notes.setdefault("", []).extend(module.notes)
    per_kernel: Counter = Counter()
    for launch in built.launches:
        launch.index = per_kernel[launch.name]
        per_kernel[launch.name] += 1
    header = list(notes or []) + built.notes.pop("", []) + [f"{root}: {e}" for e in errors]
    return Trace(root=root, files=files or [TraceFile(path=g.path, records=1) for g, _ in modules],
                 compilations=built.compilations, launches=built.launches, skipped=Counter(), ignored=Counter(),
                 kind=kind, notes=header, kernel_notes={k: v for k, v in built.notes.items() if v})
