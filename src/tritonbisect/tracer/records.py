# ruff: noqa: UP031  (runs on the traced program's Python, which may be older than the tool's)
"""Argument records, in tritonparse 0.6's `extracted_args` format, and tensor blobs.

- tensor: `{"type": "tensor", shape, dtype, device, stride, numel, is_contiguous,
  element_size, storage_offset, memory_usage, data_ptr, min, max, mean, std}` plus, when its
  data is saved, `tensor_hash, blob_path, blob_size, blob_size_uncompressed, compression,
  serialization_method` (`torch.save` of the CPU tensor in `saved_tensors/<hh>/<hash>.bin`,
  `.bin.gz` from 1 MiB).
- host-side `TensorDescriptor` (triton.tools.tensor_descriptor): `{"type": "TensorDescriptor",
  "base": <tensor record>, "shape", "strides", "block_shape", "padding"}` as tritonparse writes
  it; plus `round_f32_to_tf32` where the class has that field (Triton >= 3.5).
- tuple: `{"type": "tuple", "repr": ...}` as tritonparse writes it, plus `"elements"`: the
  record of each element, recursively, so the tuple can be rebuilt (tritonparse's repr
  cannot); a namedtuple also gets `"fields"`.
- bool/int/float: `{"type", "value"}`; str: `{"type", "value", "length"}`; anything else:
  `{"type": <class name>, "repr": <str, 200 chars at most>}`.
"""

import gzip
import hashlib
import io
import os
import sys

from . import config, sink

COMPRESS_AT = 1 << 20  # blobs of 1 MiB or more are gzipped (.bin.gz), as tritonparse does
STATS_MAX_NUMEL = 1 << 27  # past this, min/max/mean/std would need a large temporary copy
MAX_DEPTH = 8

_state = globals().get("_state") or {"blob_paths": {}, "blob_launches": {}}


def _torch():
    return sys.modules.get("torch")


def is_tensor(value):
    torch = _torch()
    return torch is not None and isinstance(value, torch.Tensor)


def is_tensor_descriptor(value):
    cls = type(value)
    return cls.__name__ == "TensorDescriptor" and "triton" in (getattr(cls, "__module__", "") or "")


def _short_repr(value, depth=0):
    """A cheap repr: never prints tensor data (that would copy it off the device)."""
    if is_tensor(value):
        return "tensor(shape=%s, dtype=%s, device=%s)" % (list(value.shape), value.dtype, value.device)
    if isinstance(value, tuple) and depth < MAX_DEPTH:
        inner = ", ".join(_short_repr(v, depth + 1) for v in value)
        return "(%s%s)" % (inner, "," if len(value) == 1 else "")
    return str(value)


def _truncate(text, limit=200):
    return text[:limit] + "..." if len(text) > limit else text


# --- blobs ------------------------------------------------------------------------------


def blobs_allowed(name):
    """Whether this launch of kernel `name` may save tensor data (a per-process budget)."""
    limit = config.max_blob_launches()
    if limit <= 0:
        return False
    count = _state["blob_launches"].get(name, 0)
    if count >= limit:
        return False
    _state["blob_launches"][name] = count + 1
    return True


def save_blob(tensor):
    import torch

    buf = io.BytesIO()
    torch.save(tensor.detach().cpu(), buf)
    data = buf.getvalue()
    digest = hashlib.blake2b(data).hexdigest()
    known = _state["blob_paths"].get(digest)
    if known is not None and os.path.exists(known):
        return {"tensor_hash": digest, "blob_path": known, "blob_size": os.path.getsize(known),
                "blob_size_uncompressed": len(data), "compression": "gzip" if known.endswith(".gz") else "none",
                "serialization_method": "torch_save", "deduplicated": True}
    compression, suffix, payload = "none", ".bin", data
    if len(data) >= COMPRESS_AT:
        payload = gzip.compress(data, compresslevel=4)
        compression, suffix = "gzip", ".bin.gz"
    folder = os.path.join(config.out_dir(), "saved_tensors", digest[:2])
    os.makedirs(folder, exist_ok=True)
    path = os.path.abspath(os.path.join(folder, digest + suffix))
    if not os.path.exists(path):
        tmp = "%s.tmp%d" % (path, os.getpid())
        with open(tmp, "wb") as fh:
            fh.write(payload)
        os.replace(tmp, path)
    _state["blob_paths"][digest] = path
    return {"tensor_hash": digest, "blob_path": path, "blob_size": len(payload), "blob_size_uncompressed": len(data),
            "compression": compression, "compression_ratio": len(data) / max(1, len(payload)),
            "serialization_method": "torch_save"}


# --- records ----------------------------------------------------------------------------


def tensor_record(value, blobs, stats, kernel=None):
    info = {
        "type": "tensor",
        "shape": list(value.shape),
        "dtype": str(value.dtype),
        "device": str(value.device),
        "stride": list(value.stride()),
        "numel": value.numel(),
        "is_contiguous": value.is_contiguous(),
        "element_size": value.element_size(),
        "storage_offset": value.storage_offset(),
        "memory_usage": value.numel() * value.element_size(),
        "data_ptr": hex(value.data_ptr()),
    }
    if stats and value.numel():
        if value.numel() > STATS_MAX_NUMEL:
            info["tensor_capture_error"] = "statistics skipped: %d elements" % value.numel()
        else:
            try:
                import torch

                f = value.detach().float()
                # std of one element would warn into the program's stderr; it is 0 here
                std = f.std() if value.numel() > 1 else f.new_zeros(())
                # one device->host copy for the four numbers, not four
                info["min"], info["max"], info["mean"], info["std"] = torch.stack(
                    [f.min(), f.max(), f.mean(), std]).tolist()
            except Exception as exc:
                info["tensor_capture_error"] = str(exc)
    if blobs:
        try:
            info.update(save_blob(value))
        except Exception as exc:
            sink.fail("blob", exc, kernel)
            info["error"] = "blob not saved: %s" % exc
    return info


def arg_record(value, blobs, stats=True, kernel=None, depth=0):
    """The record of one kernel argument (see the module docstring)."""
    if is_tensor(value):
        return tensor_record(value, blobs, stats, kernel)
    if is_tensor_descriptor(value):
        return descriptor_record(value, blobs, stats, kernel)
    if isinstance(value, (bool, int, float)):
        return {"type": type(value).__name__, "value": value}
    if isinstance(value, str):
        return {"type": "str", "value": value, "length": len(value)}
    if value is None:
        return {"type": "NoneType", "repr": "None"}
    if isinstance(value, tuple) and depth < MAX_DEPTH:
        info = {"type": type(value).__name__, "repr": _truncate(_short_repr(value)),
                "elements": [arg_record(v, blobs, stats, kernel, depth + 1) for v in value]}
        if hasattr(value, "_fields"):
            info["fields"] = list(value._fields)
        return info
    return {"type": type(value).__name__, "repr": _truncate(str(value))}


def descriptor_record(value, blobs, stats, kernel=None):
    info: dict = {"type": "TensorDescriptor"}
    base = getattr(value, "base", None)
    if is_tensor(base):
        info["base"] = tensor_record(base, blobs, stats, kernel)
    for field in ("shape", "strides", "block_shape"):
        if hasattr(value, field):
            info[field] = [int(x) for x in getattr(value, field)]
    padding = getattr(value, "padding", "zero")
    info["padding"] = str(getattr(padding, "value", padding)) if padding else "zero"
    if hasattr(value, "round_f32_to_tf32"):
        info["round_f32_to_tf32"] = bool(value.round_f32_to_tf32)
    layout = getattr(value, "layout", None)
    if layout is not None:  # Gluon's descriptors carry a shared-memory layout
        info["layout"] = _truncate(str(layout), 500)
    return info


def holds_tensors(value, depth=0):
    if is_tensor(value) or (is_tensor_descriptor(value) and is_tensor(getattr(value, "base", None))):
        return True
    return isinstance(value, tuple) and depth < MAX_DEPTH and any(holds_tensors(v, depth + 1) for v in value)


def tensors_in(value, depth=0):
    if is_tensor(value):
        return [value]
    if is_tensor_descriptor(value):
        base = getattr(value, "base", None)
        return [base] if is_tensor(base) else []
    if isinstance(value, tuple) and depth < MAX_DEPTH:
        return [t for v in value for t in tensors_in(v, depth + 1)]
    return []


def synchronize(tensors):
    torch = _torch()
    if torch is None:
        return
    kinds = {t.device.type for t in tensors}
    if "cuda" in kinds:
        torch.cuda.synchronize()
    if "xpu" in kinds and hasattr(torch, "xpu"):
        torch.xpu.synchronize()
    if "mps" in kinds and hasattr(torch, "mps"):
        torch.mps.synchronize()


def capturing():
    """Inside a CUDA-graph capture (no sync, no copy, no statistics allowed)."""
    torch = _torch()
    try:
        return bool(torch is not None and torch.cuda.is_available() and torch.cuda.is_current_stream_capturing())
    except Exception:
        return False
