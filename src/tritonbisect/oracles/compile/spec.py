"""From a trace to a compile job: what to compile, specialized how, for which GPU.

The traced compilation says it all when the trace has it: the target (`metadata.target`),
the compile options, the specialization (`src_constants`, `src_attrs`: which arguments were
constants, which were divisible by 16) and the argument types (the TTIR's function
signature). The launch's recorded arguments fill in what is missing (pointer dtypes such as
u8 vs i8, which TTIR cannot tell apart; integer ranges; interpreter traces that have no
TTIR). The result is version-neutral (see standalone/tb_bridge.py for how each Triton gets
it). Pure: no I/O, no triton import.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from tritonbisect.core import pyast
from tritonbisect.core.errors import InputError
from tritonbisect.mlir.signature import Signature, SignatureArg, read_signature
from tritonbisect.traces.reader import Compilation, Launch, Trace

# Options a user (or the autotuner) chooses; the rest of the metadata is derived by the
# backend (arch, extern_libs with the capture machine's paths, supported dtypes…).
COMPILE_OPTION_KEYS = (
    "num_warps", "num_ctas", "num_stages", "maxnreg", "enable_fp_fusion", "launch_cooperative_grid",
    "launch_pdl", "debug", "sanitize_overflow", "default_dot_input_precision",
    "max_num_imprecise_acc_default", "enable_reflect_ftz", "ptx_version", "ptx_options", "instrumentation_mode",
    # AMD
    "waves_per_eu", "matrix_instr_nonkdim", "kpack", "schedule_hint", "instruction_sched_variant",
)  # fmt: skip

TORCH_TO_TRITON = {
    "float32": "fp32", "float16": "fp16", "bfloat16": "bf16", "float64": "fp64",
    "int8": "i8", "int16": "i16", "int32": "i32", "int64": "i64",
    "uint8": "u8", "uint16": "u16", "uint32": "u32", "uint64": "u64", "bool": "i1",
    "float8_e4m3fn": "fp8e4nv", "float8_e5m2": "fp8e5", "float8_e4m3fnuz": "fp8e4b8",
    "float8_e5m2fnuz": "fp8e5b16",
}  # fmt: skip
MLIR_TO_TRITON = {
    "f16": "fp16", "bf16": "bf16", "f32": "fp32", "f64": "fp64",
    "i1": "i1", "i8": "i8", "i16": "i16", "i32": "i32", "i64": "i64",
    "f8E4M3FN": "fp8e4nv", "f8E5M2": "fp8e5", "f8E4M3FNUZ": "fp8e4b8", "f8E5M2FNUZ": "fp8e5b16",
    "f8E4M3B11FNUZ": "fp8e4b15",
}  # fmt: skip
DEFAULT_WARP = {"cuda": 32, "hip": 64}


@dataclass
class CompileSpec:
    kernel: str
    params: list[dict[str, Any]]
    target: dict[str, Any]
    options: dict[str, Any]
    sources: list[str] = field(default_factory=list)  # where the facts came from
    warnings: list[str] = field(default_factory=list)


# --- target -----------------------------------------------------------------------------


def parse_target_text(text: str) -> dict[str, Any]:
    """`cuda:90`, `cuda:80:32`, `hip:gfx942`, `hip:gfx942:64`."""
    parts = text.strip().split(":")
    if len(parts) not in (2, 3) or parts[0] not in DEFAULT_WARP or not parts[1]:
        raise InputError(f"--compile-target {text!r}: expected cuda:ARCH[:WARP] or hip:GFX[:WARP], e.g. cuda:90 or hip:gfx942")
    arch: int | str = int(parts[1]) if parts[1].isdigit() else parts[1]
    if parts[0] == "cuda" and not isinstance(arch, int):
        raise InputError(f"--compile-target {text!r}: a CUDA arch is a number such as 80 or 90")
    try:
        warp = int(parts[2]) if len(parts) == 3 else DEFAULT_WARP[parts[0]]
    except ValueError:
        raise InputError(f"--compile-target {text!r}: the warp size must be a number") from None
    return {"backend": parts[0], "arch": arch, "warp_size": warp}


def traced_target(meta: dict[str, Any]) -> dict[str, Any] | None:
    """The GPU target of a compilation's metadata, or None (interpreter, unknown)."""
    target = meta.get("target")
    backend = arch = warp = None
    if isinstance(target, dict):
        backend, arch, warp = target.get("backend"), target.get("arch"), target.get("warp_size")
    elif isinstance(target, (list, tuple)) and len(target) >= 2:
        backend, arch = target[0], target[1]
        warp = target[2] if len(target) > 2 else None
    elif isinstance(target, str):
        m = re.search(r"backend='(\w+)', arch=([\w']+), warp_size=(\d+)", target)
        if m:
            backend, arch, warp = m.group(1), m.group(2).strip("'"), int(m.group(3))
    if backend is None and meta.get("backend_name") in DEFAULT_WARP:
        backend = meta["backend_name"]
        arch = meta.get("arch")
        warp = meta.get("warp_size")
    if backend not in DEFAULT_WARP:
        return None
    if isinstance(arch, str):
        digits = arch.removeprefix("sm").removesuffix("a")
        arch = int(digits) if backend == "cuda" and digits.isdigit() else arch
    if arch in (None, ""):
        return None
    return {"backend": backend, "arch": arch, "warp_size": int(warp or DEFAULT_WARP[backend])}


def compile_options(meta: dict[str, Any]) -> dict[str, Any]:
    return {k: meta[k] for k in COMPILE_OPTION_KEYS if meta.get(k) is not None and meta.get(k) != ""}


# --- recorded specialization ------------------------------------------------------------


def _path(key: Any, names: list[str]) -> tuple[int, ...] | None:
    """A key of src_constants/src_attrs: "(7,)", "(0, 1)", a parameter name, or an index."""
    if isinstance(key, int):
        return (key,)
    text = str(key).strip()
    if text in names:
        return (names.index(text),)
    if text.isdigit():
        return (int(text),)
    try:
        value = pyast.literal_eval(text)
    except (ValueError, SyntaxError):
        return None
    if isinstance(value, int):
        return (value,)
    if isinstance(value, tuple) and all(isinstance(v, int) for v in value):
        return value
    return None


def recorded_constants(meta: dict[str, Any], names: list[str]) -> dict[tuple[int, ...], Any] | None:
    raw = meta.get("src_constants")
    if not isinstance(raw, dict):
        return None
    out = {}
    for key, value in raw.items():
        path = _path(key, names)
        if path is not None:
            out[path] = value
    return out


def recorded_attrs(meta: dict[str, Any], names: list[str]) -> dict[tuple[int, ...], list[list[Any]]] | None:
    """Path -> [[attr, value]]; from the 3.3+ dict, a 3.2 `arg_properties` or 3.0 index sets."""
    raw = meta.get("src_attrs")
    if not isinstance(raw, dict):
        return None
    out: dict[tuple[int, ...], list[list[Any]]] = {}
    props = raw.get("arg_properties") if isinstance(raw.get("arg_properties"), dict) else None
    if props is not None or "divisible_by_16" in raw:
        source = props if props is not None else {"tt.divisibility": raw.get("divisible_by_16") or [],
                                                  "tt.equal_to": raw.get("equal_to_1") or []}
        for prop, indices in source.items():
            value = {"tt.divisibility": 16, "tt.equal_to": 1}.get(prop, 16)
            for i in indices or []:
                if isinstance(i, int):
                    out.setdefault((i,), []).append([prop, value])
        return out
    for key, value in raw.items():
        path = _path(key, names)
        if path is None or not isinstance(value, list):
            continue
        out[path] = [list(v) for v in value if isinstance(v, (list, tuple)) and len(v) == 2]
    return out


# --- TTIR signature ---------------------------------------------------------------------


def ttir_leaves(ttir: str | None, kernel: str, params: list[str],
                skipped: set[str]) -> tuple[Signature | None, dict[str, list[SignatureArg]]]:
    """The kernel's TTIR signature and its arguments grouped by source parameter.

    Newer Tritons name each argument's parameter in its location; 3.4 and older write
    `%arg0 ... loc("file":line:col)`, so the arguments are the parameters that were not
    specialized away (`skipped`: constexprs, recorded constants), in order. A tuple
    parameter has several arguments: when some are unnamed and the count does not fit, each
    argument is keyed by its name where it has one, else by its SSA name."""
    sig = read_signature(ttir, kernel) if ttir else None
    grouped: dict[str, list[SignatureArg]] = {}
    if sig is None:
        return None, grouped
    runtime = [p for p in params if p not in skipped]
    if sig.named:
        for a in sig.args:
            grouped.setdefault(a.name or a.var, []).append(a)
    elif len(runtime) == len(sig.args):
        for name, a in zip(runtime, sig.args, strict=True):
            grouped[name] = [a]
    else:
        for a in sig.args:
            grouped.setdefault(a.name or a.var, []).append(a)
    return sig, grouped


def mlir_to_signature(type_text: str) -> str | None:
    """`!tt.ptr<f16>` -> `*fp16`, `i32` -> `i32`, `!tt.tensordesc<tensor<64x64xf16>>` -> tensordesc
    (a pointer's address space and a descriptor's shared layout do not change the type)."""
    t = type_text.strip()
    if m := re.fullmatch(r"!tt\.ptr<(\w+)(?:,\s*\d+)?>", t):
        inner = MLIR_TO_TRITON.get(m.group(1))
        return "*" + inner if inner else None
    if m := re.fullmatch(r"!tt\.tensordesc<tensor<([\dx]+)x(\w+)(?:,.*)?>>", t, re.S):
        inner = MLIR_TO_TRITON.get(m.group(2))
        dims = ", ".join(m.group(1).split("x"))
        return f"tensordesc<{inner}[{dims}]>" if inner else None
    return MLIR_TO_TRITON.get(t)


def ir_signature_line(ir: str, kernel: str) -> str:
    """The kernel's arguments as an IR oracle shows them: `a_ptr:*fp32/16, n:i32` (the source
    parameter where the IR names it, else the SSA name; the MLIR type where it has no
    signature type)."""
    sig = read_signature(ir, kernel)
    if sig is None:
        return f"no function @{kernel} in the IR"
    def one(a: SignatureArg) -> str:
        typ = mlir_to_signature(a.type) or a.type
        return f"{a.name or a.var}:{typ}{'/16' if a.divisible_16 else ''}"
    return ", ".join(one(a) for a in sig.args) or "(no arguments)"


# --- parameters -------------------------------------------------------------------------


def _int_type(value: Any) -> str:
    if isinstance(value, bool):
        return "i1"
    if isinstance(value, int):
        if -(2**31) <= value < 2**31:
            return "i32"
        if value >= 2**63:
            return "u64"
    return "i64"


def _launch_param(name: str, info: Any, kernel: str) -> dict[str, Any] | None:
    """A parameter from a launch's recorded argument (None: not enough recorded)."""
    if not isinstance(info, dict):
        return None
    kind = info.get("type")
    if kind == "tensor":
        dtype = str(info.get("dtype", "")).replace("torch.", "")
        if dtype not in TORCH_TO_TRITON:
            raise InputError(f"argument '{name}' of {kernel} has dtype {info.get('dtype')!r}, which the compile oracle cannot type")
        ptr = info.get("data_ptr")
        aligned = None
        if isinstance(ptr, str):
            try:
                aligned = int(ptr, 16) % 16 == 0
            except ValueError:
                aligned = None
        elif isinstance(ptr, int):
            aligned = ptr % 16 == 0
        return {"name": name, "kind": "pointer", "type": "*" + TORCH_TO_TRITON[dtype], "divisible_16": bool(aligned)}
    if kind == "bool":
        return {"name": name, "kind": "int", "type": "i1", "divisible_16": False, "equal_to_1": False}
    if kind == "int":
        value = info.get("value")
        if not isinstance(value, int):
            return None
        return {"name": name, "kind": "int", "type": _int_type(value), "value": value,
                "divisible_16": value % 16 == 0, "equal_to_1": value == 1}
    if kind == "float":
        return {"name": name, "kind": "float", "type": "fp32"}
    if kind == "NoneType":
        return {"name": name, "kind": "none"}
    if kind == "TensorDescriptor":
        base = info.get("base") or {}
        dtype = str(base.get("dtype", "")).replace("torch.", "")
        block = info.get("block_shape")
        if dtype in TORCH_TO_TRITON and isinstance(block, list) and block:
            dims = ", ".join(str(int(b)) for b in block)
            return {"name": name, "kind": "tensordesc", "type": f"tensordesc<{TORCH_TO_TRITON[dtype]}[{dims}]>"}
    return None


def _declared_param(name: str, declared: str, known: dict[str, Any] | None) -> dict[str, Any] | None:
    """A parameter typed by a stated signature; a recorded int keeps its value (specialization)."""
    if declared.startswith("*"):
        return {"name": name, "kind": "pointer", "type": declared, "divisible_16": False}
    if declared.startswith(("fp", "bf")):
        return {"name": name, "kind": "float", "type": declared}
    if declared in ("i1", "i8", "i16", "i32", "i64", "u1", "u8", "u16", "u32", "u64"):
        param = dict(known) if known is not None and known["kind"] == "int" else {
            "name": name, "kind": "int", "divisible_16": False, "equal_to_1": False}
        param["type"] = declared
        return param
    return known


def _constexpr_value(value: Any, name: str, kernel: str) -> Any:
    """A recorded constexpr value as the job's JSON form."""
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        return value if value == value and abs(value) != float("inf") else {"float": repr(value)}
    if isinstance(value, dict):
        kind = value.get("type")
        if kind in ("int", "bool", "str"):
            return value.get("value")
        if kind == "float":
            raw: Any = value.get("value")
            return _constexpr_value(float(raw), name, kernel)
        if kind == "NoneType":
            return None
        if kind == "dtype":
            text = str(value.get("repr") or value.get("value") or "")
            text = text.split("'")[1] if "'" in text else text.replace("triton.language.", "").replace("torch.", "")
            return {"dtype": TORCH_TO_TRITON.get(text, text)}
    raise InputError(f"constexpr '{name}' of {kernel} has a recorded value {str(value)[:60]!r} the compile oracle cannot rebuild")


def derive_params(
    kernel: str,
    params: list[str],
    constexpr_params: list[str],
    meta: dict[str, Any],
    ttir: str | None,
    launch: Launch | None,
) -> tuple[list[dict[str, Any]], list[str]]:
    """The job's parameters, and which sources they were taken from."""
    constants = recorded_constants(meta, params)
    # a signature the compilation states (Inductor's triton_meta): name -> "*fp16", "i64", "fp64", "constexpr"
    signature = {str(k): str(v) for k, v in meta["signature"].items()} if isinstance(meta.get("signature"), dict) else {}
    attrs = recorded_attrs(meta, params)
    recorded = constants is not None and attrs is not None and (bool(constants) or bool(attrs) or bool(ttir))
    consts = constants or {}  # read only when recorded, that is when both were recorded
    attr_map = attrs or {}
    skipped = {n for i, n in enumerate(params) if n in constexpr_params or (recorded and (i,) in consts)}
    ttir_sig, by_name = ttir_leaves(ttir, kernel, params, skipped)
    launch_args = launch.args if launch is not None and launch.args else {}
    sources = []
    if recorded:
        sources.append("recorded specialization (src_constants, src_attrs)")
    if ttir_sig is not None:
        sources.append("TTIR signature")
    if launch_args:
        sources.append(f"launch {launch.index} arguments" if launch is not None else "launch arguments")

    out: list[dict[str, Any]] = []
    for i, name in enumerate(params):
        path = (i,)
        info = launch_args.get(name)
        if name in constexpr_params or (recorded and path in consts and consts[path] not in (1, None)):
            if recorded and path in consts:
                value = consts[path]
            elif isinstance(info, dict):
                value = info
            else:
                raise InputError(f"the value of constexpr '{name}' of {kernel} is not in the trace")
            out.append({"name": name, "kind": "constexpr", "value": _constexpr_value(value, name, kernel)})
            continue
        if recorded and path in consts:  # specialized away: an int equal to 1, or None
            if consts[path] is None:
                out.append({"name": name, "kind": "none"})
            else:
                typ = _int_type(1)
                out.append({"name": name, "kind": "int", "type": typ, "divisible_16": False, "equal_to_1": True})
            continue
        param = _launch_param(name, info, kernel)
        declared = signature.get(name)
        if declared and declared != "constexpr" and (param is None or param["kind"] in ("int", "float")):
            param = _declared_param(name, declared, param)
        leaves = by_name.get(name) or []
        is_tuple = (isinstance(info, dict) and info.get("type") == "tuple") or (
            param is None and len(leaves) > 1 and not leaves[0].type.startswith("!tt.tensordesc")
        )
        if is_tuple:
            out.append(_tuple_param(name, i, leaves, consts, attr_map, kernel))
            continue
        if param is None and leaves:
            sig = mlir_to_signature(leaves[0].type)
            if sig is None:
                raise InputError(f"argument '{name}' of {kernel} has type {leaves[0].type}, which the compile oracle cannot map")
            kind = "pointer" if sig.startswith("*") else "tensordesc" if sig.startswith("tensordesc") else (
                "float" if sig.startswith(("fp", "bf")) else "int")
            param = {"name": name, "kind": kind, "type": sig}
            if kind in ("pointer", "int"):
                param["divisible_16"] = leaves[0].divisible_16
                if kind == "int":
                    param["equal_to_1"] = False
        if param is None:
            shown = info.get("type") if isinstance(info, dict) else "nothing"
            raise InputError(
                f"argument '{name}' of {kernel}: the trace records {shown} for it and no TTIR signature, "
                "so the compile oracle cannot type it"
            )
        if param["kind"] == "int" and leaves and param.get("value") is not None:
            sig = mlir_to_signature(leaves[0].type)
            if sig in ("i32", "i64", "i1") and param["type"] != "u64":
                param["type"] = sig
        if recorded and param["kind"] in ("pointer", "int", "tensordesc"):
            recorded_attr = attr_map.get(path, [])
            param["divisible_16"] = any(a[0] == "tt.divisibility" for a in recorded_attr)
            param["equal_to_1"] = False if param["kind"] == "int" else param.get("equal_to_1", False)
            extra = [a for a in recorded_attr if a[0] not in ("tt.divisibility", "tt.equal_to")]
            if extra:
                param["attrs"] = extra
        if param["kind"] == "pointer":
            param.pop("equal_to_1", None)
        out.append(param)
    return out, sources


def _tuple_param(name: str, index: int, leaves: list[SignatureArg], constants: dict, attrs: dict,
                 kernel: str) -> dict[str, Any]:
    """A tuple argument, rebuilt from the TTIR's flattened leaves and the constants' paths."""
    inner_constants = {p[1]: v for p, v in constants.items() if len(p) == 2 and p[0] == index}
    size = len(leaves) + len(inner_constants)
    if size == 0:
        raise InputError(f"tuple argument '{name}' of {kernel} is recorded only as text and the trace has no TTIR: "
                         "the compile oracle cannot type its items")
    items: list[dict[str, Any]] = []
    it = iter(leaves)
    for j in range(size):
        if j in inner_constants:
            value = inner_constants[j]
            items.append({"name": f"{name}[{j}]", "kind": "none"} if value is None else
                         {"name": f"{name}[{j}]", "kind": "constexpr", "value": _constexpr_value(value, name, kernel)})
            continue
        leaf = next(it)
        sig = mlir_to_signature(leaf.type)
        if sig is None:
            raise InputError(f"item {j} of tuple '{name}' of {kernel} has type {leaf.type}, which the compile oracle cannot map")
        kind = "pointer" if sig.startswith("*") else ("float" if sig.startswith(("fp", "bf")) else "int")
        item: dict[str, Any] = {"name": f"{name}[{j}]", "kind": kind, "type": sig}
        if kind != "float":
            item["divisible_16"] = any(a[0] == "tt.divisibility" for a in attrs.get((index, j), [])) or leaf.divisible_16
        items.append(item)
    return {"name": name, "kind": "tuple", "items": items}


# --- selection --------------------------------------------------------------------------


def select(trace: Trace, kernel: str, launch_id: int | None, line: int | None) -> tuple[Compilation, Launch | None]:
    """The compilation to compile and the launch that used it (None: compiled, never launched)."""
    names = trace.kernels()
    if kernel not in names:
        available = ", ".join(names) if names else "none"
        raise InputError(f"kernel '{kernel}' is not in trace {trace.root}; available kernels: {available}")
    launches = trace.launches_of(kernel)
    comps = [c for c in trace.compilations.values() if c.name == kernel]
    launch: Launch | None
    if launches and (launch_id is not None or line is not None):
        launch = trace.select_launch(kernel, launch_id, line)
    elif line is not None:  # compiled, never launched: --line picks one of its compilations
        hits = [c for c in comps if c.line == line]
        if len(hits) != 1:
            lines = ", ".join(str(c.line) for c in comps)
            raise InputError(f"no single compilation of kernel '{kernel}' on line {line} of {trace.root}; "
                             f"its compilations are on lines {lines} (see `tritonbisect info`)")
        return hits[0], None
    elif launch_id is not None:
        raise InputError(f"kernel '{kernel}' was compiled but never launched in trace {trace.root}: leave out "
                         "--launch-id to compile its first compilation, or pick one with --line N (see `tritonbisect info`)")
    else:
        with_comp = [la for la in launches if trace.compilation_of(la) is not None]
        real = [la for la in with_comp if not la.autotune_benchmark]
        picked = real or with_comp
        launch = picked[0] if picked else None
    if launch is not None:
        comp = trace.compilation_of(launch)
        if comp is None:
            h = (launch.hash or "unknown")[:16]
            raise InputError(
                f"launch {launch.index} of kernel '{kernel}' ({launch.where()}) has no compilation event in the "
                f"trace (hash {h}): compile mode needs the compilation's metadata; trace from before the kernel's "
                "first compilation"
            )
        return comp, launch
    if not comps:
        raise InputError(f"kernel '{kernel}' has no compilation event in trace {trace.root}: "
                         "compile mode needs the compilation's metadata")
    return comps[0], None
