# ruff: noqa: UP031, B905  (runs on the target's Python, which may be older than the tool's)
"""The recorded arguments of a launch, rebuilt: the compile options this Triton takes, dtypes,
tensor blobs, seeded synthetic data, storages with guard bytes, descriptors, and the
snapshot of every tensor after the launch. Copied beside the script."""

import gzip
import io
import os
import sys
from typing import Any

from oracle_core import GUARD_BYTE, PAD, Outcome, short_error


def compile_options(triton, ctx):
    """The recorded compile parameters the running Triton understands."""
    wanted = {"num_warps": ctx["compile"].get("num_warps"), "num_stages": ctx["compile"].get("num_stages")}
    defaults = {
        "num_ctas": 1,
        "maxnreg": None,
        "enable_fp_fusion": True,
        "launch_cooperative_grid": False,
        "launch_pdl": False,
        "debug": False,
    }
    for key, default in defaults.items():
        value = ctx["compile"].get(key, default)
        if value is not None and value != default:
            wanted[key] = value
    wanted = {k: v for k, v in wanted.items() if v is not None}
    known = None
    try:
        from triton.compiler import make_backend
        from triton.runtime import driver

        known = set(make_backend(driver.active.get_current_target()).parse_options({}).__dict__)
    except Exception:
        known = None
    if known is not None:
        dropped = sorted(k for k in wanted if k not in known)
        wanted = {k: v for k, v in wanted.items() if k in known}
        if dropped:
            print("repro: this Triton has no compile option(s) %s; ignored" % ", ".join(dropped), file=sys.stderr)
    return wanted

def torch_dtype(torch, name):
    name = name.replace("torch.", "")
    dtype = getattr(torch, name, None)
    if dtype is None:
        raise Outcome("env_unusable", "this torch has no dtype %s" % name)
    return dtype

def load_blob(torch, path):
    with open(path, "rb") as fh:
        data = fh.read()
    if data[:2] == b"\x1f\x8b":
        data = gzip.decompress(data)
    buf = io.BytesIO(data)
    try:
        obj = torch.load(buf, map_location="cpu", weights_only=True)
    except TypeError:  # torch without weights_only
        buf.seek(0)
        obj = torch.load(buf, map_location="cpu")
    if not hasattr(obj, "shape"):
        raise ValueError("blob %s does not hold a tensor" % path)
    return obj

def synthesize(torch, spec, seed, fresh):
    """Seeded data: shaped by the recorded statistics when there are some."""
    dtype = torch_dtype(torch, spec["dtype"])
    numel = 1
    for s in spec["shape"]:
        numel *= s
    gen = torch.Generator().manual_seed(seed)
    stats: Any = spec.get("stats") or {}  # JSON from the trace
    lo, hi, mean, std = (stats.get(k) for k in ("min", "max", "mean", "std"))
    finite = all(isinstance(v, (int, float)) and v == v and abs(v) != float("inf") for v in (lo, hi, mean, std))
    if dtype == torch.bool:
        p = mean if finite and 0 <= mean <= 1 else 0.5
        data = torch.rand(numel, generator=gen) < p
    elif dtype.is_floating_point or dtype.is_complex:
        if finite and std > 0:
            data = (torch.randn(numel, generator=gen, dtype=torch.float64) * std + mean).clamp(lo, hi)
        elif finite and not fresh:
            data = torch.full((numel,), float(mean), dtype=torch.float64)
        else:
            data = torch.rand(numel, generator=gen, dtype=torch.float64) * 2 - 1
    else:
        if finite:
            low, high = int(lo), int(hi)
        else:
            low, high = 0, 7
        data = torch.randint(low, high + 1, (numel,), generator=gen, dtype=torch.int64)
    return data.reshape(spec["shape"]).to(dtype)

def build_state(torch, ctx, device, vector, blob_cache, here):
    """Allocate every storage (with guard bytes), view the tensors into it, fill them."""
    storages = []
    for st in ctx["storages"]:
        total = PAD + st["nbytes"] + PAD
        storages.append(torch.full((total,), GUARD_BYTE, dtype=torch.uint8, device=device))
    values = {}  # every spec's value: the kernel's arguments and the parts of descriptors and tuples
    tensors = []
    for index, spec in enumerate(ctx["args"]):
        kind = spec["kind"]
        name = spec["name"]
        if kind == "tensor":
            dtype = torch_dtype(torch, spec["dtype"])
            raw = storages[spec["storage"]]
            itemsize = torch.empty(0, dtype=dtype).element_size()
            typed = raw.view(dtype)
            offset = (PAD + spec["byte_offset"]) // itemsize
            view = torch.as_strided(typed, spec["shape"], spec["stride"], offset)
            init = spec["init"]
            fresh = vector == "fresh" and (dtype.is_floating_point or dtype.is_complex)
            if init["source"] == "blob" and not fresh:
                key = init["file"]
                if key not in blob_cache:
                    blob_cache[key] = load_blob(torch, os.path.join(here, key))
                data = blob_cache[key]
                if list(data.shape) != list(spec["shape"]):
                    raise Outcome("usage_error", "blob %s has shape %s, argument %s wants %s"
                                  % (key, list(data.shape), name, spec["shape"]))
            else:
                key = "%s#%s" % (name, vector if fresh else "recorded")
                if key not in blob_cache:  # deterministic: synthesize once per process
                    seed = ctx.get("seed", 0) + 1000003 * (index + 1) + (7919 if fresh else 0)
                    blob_cache[key] = synthesize(torch, spec, seed, fresh)
                data = blob_cache[key]
            view.copy_(data.to(device=device, dtype=dtype))
            values[name] = view
            tensors.append(name)
        elif kind == "scalar":
            values[name] = spec["value"]
            if spec.get("type") == "float":
                values[name] = float(spec["value"])
        elif kind == "none":
            values[name] = None
        elif kind == "dtype":
            text = spec["value"]
            if text.startswith("torch."):
                values[name] = torch_dtype(torch, text)
            else:
                import triton.language as tl

                values[name] = tl.dtype(text)
        elif kind == "descriptor":
            values[name] = make_descriptor(values[spec["base"]], spec)
        elif kind == "tuple":
            values[name] = tuple(values[part] for part in spec["elements"])
        else:
            raise Outcome("usage_error", "argument %s has kind %s, which this oracle cannot rebuild" % (name, kind))
    for name in ctx["kernel"].get("reset_to_zero") or []:  # the autotuner zeroes these before a launch
        if name in tensors:
            values[name].zero_()
        elif name + ".base" in tensors:
            values[name + ".base"].zero_()
    arguments = dict((spec["name"], values[spec["name"]]) for spec in ctx["args"] if not spec.get("part_of"))
    return {"values": values, "arguments": arguments, "tensors": tensors, "storages": storages}

def make_descriptor(base, spec):
    """A host-side TensorDescriptor over the rebuilt base tensor, as the trace recorded it."""
    try:
        from triton.tools.tensor_descriptor import TensorDescriptor
    except Exception as exc:
        raise Outcome("usage_error", "argument %s is a TensorDescriptor, which this Triton does not have: %s"
                      % (spec["name"], short_error(exc))) from None
    extra = {}  # only what the trace recorded, so a Triton without these options still takes the rest
    if spec.get("padding", "zero") != "zero":
        extra["padding"] = spec["padding"]
    if spec.get("round_f32_to_tf32"):
        extra["round_f32_to_tf32"] = True
    try:
        return TensorDescriptor(base, spec["shape"], spec["strides"], spec["block_shape"], **extra)
    except Exception as exc:
        raise Outcome("usage_error", "cannot rebuild TensorDescriptor %s: %s" % (spec["name"], short_error(exc))) from None

def install_allocator(torch, triton, device, source):
    """Device-side descriptors (tl.make_tensor_descriptor) need scratch memory from the host.
    `source`: the kernel source that may build them."""
    setter = getattr(triton, "set_allocator", None)
    if setter is None or "make_tensor_descriptor" not in source:
        return

    def alloc(size, alignment, stream):
        return torch.empty(size, dtype=torch.int8, device=device)

    setter(alloc)

def snapshot(state, ctx, vector):
    """Every tensor argument and the guard bytes of every storage, on the CPU."""
    suffix = "" if vector == "recorded" else "#" + vector
    out = {}
    for name in state["tensors"]:
        out[name + suffix] = state["values"][name].detach().to("cpu").clone()
    for i, (raw, st) in enumerate(zip(state["storages"], ctx["storages"])):
        lo = PAD + st["lo"]
        hi = PAD + st["hi"]
        guard = raw.detach().to("cpu")
        out["#guard%d%s" % (i, suffix)] = guard[:lo].clone()
        out["#guard%d_end%s" % (i, suffix)] = guard[hi:].clone()
    return out
