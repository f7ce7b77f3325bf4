"""Generate the reproducer oracle folder for one launch of a trace.

The folder holds `repro.py` (standard library + torch + triton only, kernel source embedded)
and its helpers (standalone/: `oracle_*.py`, beside it), `context.json` (arguments, grid,
compile parameters, storage layout) and `blobs/` (the recorded tensors it needs). It can be
copied to another machine. See runtime_template.py for what the script does when it runs.
"""

from __future__ import annotations

import json
import math
import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tritonbisect import __version__
from tritonbisect.core import pyast
from tritonbisect.core.errors import InputError
from tritonbisect.core.untrusted import file_component, one_line
from tritonbisect.oracles.autotune_context import resets_before
from tritonbisect.oracles.composite_args import (
    DESCRIPTOR_TYPES,
    TensorSpec,
    descriptor_specs,
    tuple_specs,
)
from tritonbisect.oracles.kernel_source import KernelSource, extract_kernel_source
from tritonbisect.oracles.standalone import copy_helpers
from tritonbisect.traces.ir_content import recorded_ir
from tritonbisect.traces.reader import Launch, Trace, load_trace, resolve_blob
from tritonbisect.traces.replayable import refuse_reason

TEMPLATE = Path(__file__).with_name("runtime_template.py")
SCRIPT_NAME = "repro.py"
CONTEXT_NAME = "context.json"
BLOB_DIR = "blobs"
DEFAULT_TIMEOUT = 600.0
ALIGN = 256  # byte alignment preserved between the recorded pointers and the rebuilt ones

DTYPE_SIZES = {
    "float64": 8, "float32": 4, "float16": 2, "bfloat16": 2,
    "complex128": 16, "complex64": 8, "complex32": 4,
    "int64": 8, "int32": 4, "int16": 2, "int8": 1,
    "uint64": 8, "uint32": 4, "uint16": 2, "uint8": 1, "bool": 1,
    "float8_e4m3fn": 1, "float8_e4m3fnuz": 1, "float8_e5m2": 1, "float8_e5m2fnuz": 1,
    "float8_e8m0fnu": 1, "float4_e2m1fn_x2": 1,
}  # fmt: skip
COMPILE_KEYS = (
    "num_warps", "num_stages", "num_ctas", "maxnreg", "enable_fp_fusion",
    "launch_cooperative_grid", "launch_pdl", "debug",
)  # fmt: skip


@dataclass
class Oracle:
    out_dir: Path
    script: Path
    context: dict[str, Any]
    launch: Launch
    kernel: KernelSource
    warnings: list[str] = field(default_factory=list)

    def summary(self) -> str:
        args = self.context["args"]
        sources: dict[str, int] = {}
        for a in args:
            key = a["init"]["source"] if a["kind"] == "tensor" else a["kind"]
            sources[key] = sources.get(key, 0) + 1
        parts = ", ".join(f"{n} {k}" for k, n in sources.items())
        tune = " (autotuned: config pinned)" if self.kernel.autotuned else ""
        return (
            f"wrote {self.script} — kernel {self.kernel.kernel}{tune}, launch {self.launch.index} "
            f"({self.launch.where()}), grid {tuple(self.launch.grid)}; arguments: {parts}"
        )


def _float_or_none(value: Any) -> float | None:
    if isinstance(value, bool):
        return float(value)
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, str):
        try:
            return float(value)
        except ValueError:
            return None
    return None


def _dtype_name(text: str) -> str:
    return str(text).replace("torch.", "")


def _extent(shape: list[int], stride: list[int]) -> int:
    """Number of elements from the first to one past the last addressed element."""
    if any(s == 0 for s in shape):
        return 0
    return 1 + sum((s - 1) * abs(st) for s, st in zip(shape, stride, strict=True))


def no_outputs_note(trace: Trace, launch: Launch, args: list[dict[str, Any]]) -> str | None:
    """Why this oracle has no recorded outputs to compare with, when it has none."""
    if any(a.get("after") for a in args if a.get("kind") == "tensor"):
        return None
    golden = "record a golden at a good Triton first (the record command below), then compare against it"
    if launch.autotune_benchmark:
        real = [other.index for other in trace.launches_of(launch.name)
                if not other.autotune_benchmark and trace.reproducible(other)]
        where = (f"pick a real launch (--launch-id {real[0]}) or " if real
                 else "the kernel ran only there, e.g. a template that lost to another choice; ")
        return (f"launch {launch.index} of '{launch.name}' was made while an autotuner benchmarked configs: no "
                f"outputs were recorded after it, so this oracle has nothing from the program to compare with; "
                f"{where}{golden}")
    if launch.after:
        return (f"the outputs recorded after launch {launch.index} of '{launch.name}' have no data here (saved "
                f"without blobs, or their blob files are missing): {golden}")
    return f"no outputs were recorded after launch {launch.index} of '{launch.name}': {golden}"


def _plan_storages(tensors: list[dict[str, Any]], warnings: list[str]) -> list[dict[str, Any]]:
    """Lay out the storages: tensors whose recorded memory overlaps share one storage again.

    Each tensor gets `storage` and `byte_offset`; offsets keep the recorded pointer's
    alignment modulo ALIGN, so Triton specializes the same way (e.g. on 16-byte divisibility).
    """
    items = []
    for t in tensors:
        size = DTYPE_SIZES[t["dtype"]]
        extent = _extent(t["shape"], t["stride"]) * size
        ptr = None
        raw_ptr = t.pop("_data_ptr", None)
        if isinstance(raw_ptr, str):
            try:
                ptr = int(raw_ptr, 16)
            except ValueError:
                ptr = None
        elif isinstance(raw_ptr, int):
            ptr = raw_ptr
        if ptr is not None:
            start = ptr
            base = ptr - t["storage_offset"] * size
        else:
            base = 0
            start = t["storage_offset"] * size
        items.append({"t": t, "size": size, "base": base, "start": start, "end": start + extent, "known": ptr is not None})
    groups: list[list[dict]] = []
    known = sorted((i for i in items if i["known"]), key=lambda i: (i["base"], i["start"]))
    for item in known:
        if groups and item["base"] < max(g["end"] for g in groups[-1]):
            groups[-1].append(item)
        else:
            groups.append([item])
    groups += [[i] for i in items if not i["known"]]
    storages: list[dict[str, Any]] = []
    for group in groups:
        base = min(i["base"] for i in group)
        lo = min(i["start"] for i in group)
        hi = max(i["end"] for i in group)
        alloc = lo - ((lo - base) % ALIGN)
        members = group
        bad = [i for i in group if (i["start"] - alloc) % i["size"]]
        if bad:
            names = ", ".join(i["t"]["name"] for i in group)
            warnings.append(f"tensors {names} share memory at offsets their dtypes cannot express; rebuilt apart")
            members = [i for i in group if i not in bad]
            groups.extend([[i] for i in bad])  # handled below as their own groups
            if not members:
                continue
            lo = min(i["start"] for i in members)
            hi = max(i["end"] for i in members)
            alloc = lo - ((lo - base) % ALIGN)
        index = len(storages)
        nbytes = hi - alloc
        nbytes += (-nbytes) % 16
        storages.append({"nbytes": nbytes, "lo": lo - alloc, "hi": hi - alloc, "tensors": [i["t"]["name"] for i in members]})
        for i in members:
            i["t"]["storage"] = index
            i["t"]["byte_offset"] = i["start"] - alloc
        if len(members) > 1:
            warnings.append(f"tensors {', '.join(i['t']['name'] for i in members)} share memory: rebuilt aliased")
    return storages


def _tensor_spec(name: str, info: dict[str, Any], launch: Launch, trace: Trace, out_dir: Path,
                 copied: dict[Path, str], warnings: list[str], after: Any) -> dict[str, Any]:
    """`after`: the tensor's record after the launch (None when the trace has none)."""
    dtype = _dtype_name(info.get("dtype", ""))
    if dtype not in DTYPE_SIZES:
        raise InputError(f"argument '{name}' of {launch.name} has dtype {info.get('dtype')!r}, which the oracle cannot rebuild")
    shape = [int(s) for s in info.get("shape") or []]
    stride = info.get("stride")
    if stride is None:  # contiguous
        stride, acc = [], 1
        for s in reversed(shape):
            stride.insert(0, acc)
            acc *= max(s, 1)
    stride = [int(s) for s in stride]
    if any(s < 0 for s in stride):
        raise InputError(f"argument '{name}' has negative strides {stride}; torch tensors cannot")
    spec: dict[str, Any] = {
        "name": name,
        "kind": "tensor",
        "dtype": dtype,
        "shape": shape,
        "stride": stride,
        "storage_offset": int(info.get("storage_offset") or 0),
        "recorded_device": info.get("device"),
        "_data_ptr": info.get("data_ptr"),
    }
    if info.get("data_ptr") is not None:
        spec["recorded_data_ptr"] = info.get("data_ptr")
    stats = {k: _float_or_none(info.get(k)) for k in ("min", "max", "mean", "std")}
    spec["stats"] = stats if all(v is not None for v in stats.values()) else None
    init: dict[str, Any] | None = None
    blob = info.get("blob_path")
    if isinstance(blob, str) and blob:
        found = resolve_blob(blob, launch.file, trace.root)
        if found is not None:
            init = {"source": "blob", "file": _copy_blob(found, out_dir, copied), "tensor_hash": info.get("tensor_hash")}
        else:
            warnings.append(f"blob of '{name}' not found in the trace's own saved_tensors/ ({blob}); its data is "
                            "synthesized")
    if init is None:
        if spec["stats"] is not None:
            init = {"source": "stats"}
        else:
            init = {"source": "random"}
            warnings.append(f"'{name}' has neither blob nor statistics: seeded random data")
    spec["init"] = init
    if isinstance(after, dict) and isinstance(after.get("blob_path"), str):
        found = resolve_blob(after["blob_path"], launch.file, trace.root)
        if found is not None:
            spec["after"] = {"file": _copy_blob(found, out_dir, copied), "tensor_hash": after.get("tensor_hash")}
    return spec


def _copy_blob(src: Path, out_dir: Path, copied: dict[Path, str]) -> str:
    if src in copied:
        return copied[src]
    rel = f"{BLOB_DIR}/{src.name}"
    dest = out_dir / rel
    dest.parent.mkdir(parents=True, exist_ok=True)
    if not (dest.is_file() and dest.stat().st_size == src.stat().st_size):
        if dest.exists():
            dest.chmod(0o644)
            dest.unlink()
        shutil.copyfile(src, dest)
    copied[src] = rel
    return rel


def _scalar_spec(name: str, info: dict[str, Any], launch: Launch) -> dict[str, Any]:
    kind = info.get("type")
    if kind in ("int", "bool", "str"):
        return {"name": name, "kind": "scalar", "type": kind, "value": info.get("value")}
    if kind == "float":
        value = info.get("value")
        if isinstance(value, str):  # tritonparse writes non-finite floats as "nan"/"inf"
            value = float(value)
        if isinstance(value, float) and not math.isfinite(value):
            return {"name": name, "kind": "scalar", "type": "float", "value": repr(value)}
        return {"name": name, "kind": "scalar", "type": "float", "value": value}
    if kind == "NoneType":
        return {"name": name, "kind": "none"}
    if kind == "dtype":
        text = str(info.get("repr") or info.get("value") or "")
        if text.startswith("triton.language.core.dtype("):
            text = text.split("'")[1] if "'" in text else text
        return {"name": name, "kind": "dtype", "value": text}
    shown = info.get("repr") or kind
    raise InputError(
        f"argument '{name}' of {launch.name} is a {kind} ({str(shown)[:60]}), which the oracle cannot rebuild"
    )


def launch_arg_specs(launch: Launch, params: list[str], tensor: TensorSpec) -> list[dict[str, Any]]:
    """The specs of a launch's arguments, in parameter order: tensors through `tensor` (the
    caller's, which knows where blobs go), descriptors and tuples flattened into their parts
    (composite_args), scalars as they were recorded."""
    def scalar(part: str, record: dict[str, Any]) -> dict[str, Any]:
        return _scalar_spec(part, record, launch)

    args: list[dict[str, Any]] = []
    for name in params:
        info = launch.args[name]
        if not isinstance(info, dict):
            raise InputError(f"argument '{name}' of {launch.name} launch {launch.index} is not a recorded argument record")
        after = launch.after.get(name) if launch.after else None
        kind = info.get("type")
        try:
            if kind == "tensor":
                args.append(tensor(name, info, after))
            elif isinstance(kind, str) and kind in DESCRIPTOR_TYPES:
                args.extend(descriptor_specs(name, info, after, launch.name, tensor))
            elif kind == "tuple":
                args.extend(tuple_specs(name, info, after, launch.name, tensor, scalar))
            else:
                args.append(scalar(name, info))
        except (TypeError, ValueError, KeyError, AttributeError, IndexError) as exc:
            # a record edited by hand or by someone else: a shape, a stride, an offset that is no number
            raise InputError(f"argument '{name}' of {launch.name} ({launch.where()}) is not recorded as tritonparse "
                             f"records one ({type(exc).__name__}: {exc})") from None
    return args


def _literal(source: str) -> str:
    for quote in ("'''", '"""'):
        if quote not in source and not source.endswith(quote[0]):
            literal = f"r{quote}\n{source}{quote}"
            try:
                if pyast.literal_eval(literal) == "\n" + source:
                    return literal
            except (SyntaxError, ValueError):
                pass
    return repr("\n" + source)


def render_script(kernel: str, source: str, header: str) -> str:
    text = TEMPLATE.read_text(encoding="utf-8")
    replacements = {
        'KERNEL_NAME = "kernel"  # <<KERNEL_NAME>>': f"KERNEL_NAME = {json.dumps(kernel)}",
        'KERNEL_SOURCE = ""  # <<KERNEL_SOURCE>>': f"KERNEL_SOURCE = {_literal(source)}",
        "# <<HEADER>>": header,
    }
    for marker, value in replacements.items():
        if marker not in text:  # pragma: no cover - the template is ours
            raise RuntimeError(f"oracle template lost its marker {marker!r}")
        text = text.replace(marker, value, 1)
    return text


def generate_oracle(
    trace: Path | str | Trace,
    kernel: str,
    out_dir: Path | str,
    *,
    launch_id: int | None = None,
    line: int | None = None,
    timeout: float | None = None,
    ir_stage: str | None = None,
) -> Oracle:
    """Write the oracle folder for one launch of `kernel`; InputError when it cannot.

    ir_stage ("ttir" or "ttgir"): the runtime IR oracle. The launch is the same, but the JIT
    compiles the IR that the compilation event recorded instead of the source (on a GPU)."""
    tr = trace if isinstance(trace, Trace) else load_trace(Path(trace))
    launch = tr.select_launch(kernel, launch_id, line)
    reason = refuse_reason(tr, launch)
    if reason:
        raise InputError(reason)
    comp = tr.compilation_of(launch)
    assert comp is not None
    ir_text = recorded_ir(comp, kernel, ir_stage) if ir_stage is not None else None  # before writing anything
    ks = extract_kernel_source(comp.python_source, kernel)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)

    recorded = list(launch.args)
    missing = [p for p in ks.params if p not in launch.args]
    extra = [a for a in recorded if a not in ks.params]
    if missing or extra:
        raise InputError(
            f"the source of '{kernel}' in the trace does not match launch {launch.index}: "
            f"parameters {ks.params}, recorded arguments {recorded}"
        )
    warnings: list[str] = list(ks.tuning.notes)
    resets = resets_before(launch, tr.launches_of(kernel))
    if ks.tuning.reset_to_zero and not resets:
        warnings.append(f"reset_to_zero ({', '.join(ks.tuning.reset_to_zero)}) not applied: launch {launch.index} "
                        "followed no benchmarking, so the autotuner did not reset before it")
    copied: dict[Path, str] = {}

    def tensor(part: str, record: dict[str, Any], after: Any) -> dict[str, Any]:
        return _tensor_spec(part, record, launch, tr, out, copied, warnings, after)

    args = launch_arg_specs(launch, ks.params, tensor)
    storages = _plan_storages([a for a in args if a["kind"] == "tensor"], warnings)
    no_outputs = no_outputs_note(tr, launch, args)
    if no_outputs:
        warnings.append(no_outputs)

    meta = dict(comp.metadata)
    meta.update({k: v for k, v in launch.compilation_metadata.items() if k in COMPILE_KEYS})
    compile_params = {k: meta.get(k) for k in COMPILE_KEYS if k in meta}
    pinned = {name: launch.args[name].get("value") for name in ks.constexpr_params if name in launch.args}
    context: dict[str, Any] = {
        "schema": 1,
        "generator": f"tritonbisect {__version__}",
        "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "trace": {"path": str(tr.root), "file": str(launch.file), "line": launch.line},
        "kernel": {
            "name": kernel,
            "hash": launch.hash,
            "source": ks.origin,
            "helpers": ks.helpers,
            "autotuned": ks.autotuned,
            "dropped_decorators": ks.dropped_decorators,
            "inductor": ks.inductor,
            # applied by the oracle before each launch, as the autotuner does
            "reset_to_zero": ks.tuning.reset_to_zero if resets else [],
            "reset_to_zero_declared": ks.tuning.reset_to_zero,
            "restore_value": ks.tuning.restore_value,
            "pinned_config": {**pinned, **{k: compile_params[k] for k in ("num_warps", "num_stages") if k in compile_params}},
        },
        "launch": {
            "index": launch.index,
            "count": len(tr.launches_of(kernel)),
            "grid": list(launch.grid),
            "autotune_benchmark": launch.autotune_benchmark,
        },
        "compile": compile_params,
        "env": meta.get("env") if isinstance(meta.get("env"), dict) else {},
        "target": meta.get("target"),
        "triton_version": meta.get("triton_version"),
        "args": args,
        "storages": storages,
        "vectors": ["recorded", "fresh"],
        "seed": 0,
        "timeout": float(timeout) if timeout else DEFAULT_TIMEOUT,
        "tolerances": {},
        "warnings": warnings,
    }
    # a comment's line each: a name or path from the trace must not end the comment
    header = (
        f"# Generated by tritonbisect {__version__} from {one_line(launch.where())}\n"
        f"# kernel {one_line(kernel)}, launch {launch.index} of {context['launch']['count']}, "
        f"grid {tuple(launch.grid)}"
    )
    if ir_stage is not None and ir_text:
        ir_name = f"{file_component(kernel)}.{ir_stage}"  # the trace names the kernel: never a path
        (out / ir_name).write_text(ir_text, encoding="utf-8")
        context["ir"] = {"stage": ir_stage, "file": ir_name}
        header += f"\n# runtime IR oracle: the JIT compiles {ir_name} (recorded) instead of the source"
    script = out / SCRIPT_NAME
    script.write_text(render_script(kernel, ks.text, header), encoding="utf-8")
    script.chmod(0o755)
    copy_helpers(out)
    (out / CONTEXT_NAME).write_text(json.dumps(context, indent=1) + "\n", encoding="utf-8")
    return Oracle(out_dir=out, script=script, context=context, launch=launch, kernel=ks, warnings=warnings)
