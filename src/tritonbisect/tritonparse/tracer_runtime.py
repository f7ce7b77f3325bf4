# ruff: noqa: UP031  (runs on the traced program's Python, which may be older than the tool's)
"""The tracer `tritonbisect trace` injects into the traced program (through sitecustomize).

This file is copied, as `_tritonbisect_tracer.py`, into a bootstrap folder put first on
PYTHONPATH; it must not import tritonbisect or tritonparse. It needs the standard library at
import time and torch/triton only once the program imports triton.

It writes tritonparse's NDJSON format (`compilation` and `launch` events, tensor blobs in
`saved_tensors/<hh>/<blake2b>.bin` saved with torch.save) and adds one event of its own,
`tritonbisect_launch_exit`, holding every tensor argument *after* the launch (taken after a
device synchronisation), so the oracle can compare against the program's own original run.

It chains onto Triton's hooks and never replaces what is there: the launch hooks are added to
`knobs.runtime.launch_enter_hook` / `launch_exit_hook` (HookChain.add), the compilation
listener and each kernel's `launch_metadata` wrap the previous ones and call them.
Under TRITON_INTERPRET=1 Triton calls none of those hooks, so the interpreter's
GridExecutor is wrapped instead and synthetic compilation events are written.
"""

import atexit
import contextlib
import fnmatch
import getpass
import gzip
import hashlib
import importlib.abc
import importlib.util
import inspect
import io
import itertools
import json
import math
import os
import re
import socket
import sys
import threading
import time
import traceback

ENV_DIR = "TRITONBISECT_TRACE_DIR"
ENV_KERNELS = "TRITONBISECT_TRACE_KERNELS"  # comma-separated fnmatch patterns
ENV_MAX_BLOB_LAUNCHES = "TRITONBISECT_TRACE_MAX_BLOB_LAUNCHES"  # per kernel; 0 = no blobs
GRAPH_NOTE = "argument extraction skipped during CUDA graph capture"
COMPRESS_AT = 1 << 20  # blobs of 1 MiB or more are gzipped (.bin.gz), as tritonparse does
TEXT_IR = (".ttir", ".ttgir", ".llir", ".ptx", ".amdgcn", ".json", ".source")

_lock = threading.RLock()
_seq = itertools.count()
_state = {
    "installed": False,
    "stream": None,
    "stream_pid": None,
    "blob_hashes": {},
    "blob_launches": {},
    "interp_compiled": set(),
    "warned": set(),
}


# --- configuration ----------------------------------------------------------------------


def out_dir():
    return os.environ.get(ENV_DIR)


def _kernel_wanted(name):
    patterns = [p.strip() for p in os.environ.get(ENV_KERNELS, "").split(",") if p.strip()]
    return not patterns or any(fnmatch.fnmatch(str(name), p) for p in patterns)


def _max_blob_launches():
    try:
        return int(os.environ.get(ENV_MAX_BLOB_LAUNCHES, "16"))
    except ValueError:
        return 16


def _warn(key, message):
    if key in _state["warned"]:
        return
    _state["warned"].add(key)
    print("tritonbisect trace: " + message, file=sys.stderr)


# --- writing ----------------------------------------------------------------------------


def _user():
    try:
        return re.sub(r"[^A-Za-z0-9-]", "-", getpass.getuser()) or "unknown"
    except Exception:
        return "unknown"


def _rank():
    torch = sys.modules.get("torch")
    try:
        dist = torch.distributed if torch is not None else None
        if dist is not None and dist.is_available() and dist.is_initialized():
            return str(dist.get_rank())
    except Exception:
        pass
    return "none"


def _host():
    return re.sub(r"[^A-Za-z0-9-]", "-", socket.gethostname().split(".")[0]) or "unknown"


def _stream():
    pid = os.getpid()
    if _state["stream"] is None or _state["stream_pid"] != pid:
        directory = out_dir()
        os.makedirs(directory, exist_ok=True)
        name = "dedicated_log_triton_trace_%s_rank_%s_pid_%d_host_%s_.ndjson" % (_user(), _rank(), pid, _host())
        _state["stream"] = open(os.path.join(directory, name), "a", encoding="utf-8")  # noqa: SIM115
        _state["stream_pid"] = pid
    return _state["stream"]


def _convert(obj):
    """JSON-able form of metadata (tritonparse's conventions: non-finite floats as strings)."""
    if obj is None or isinstance(obj, (bool, int, str)):
        return obj
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else str(obj)
    if isinstance(obj, (list, tuple)):
        if hasattr(obj, "_asdict"):
            return _convert(obj._asdict())
        return [_convert(x) for x in obj]
    if isinstance(obj, (set, frozenset)):
        return [_convert(x) for x in sorted(obj, key=str)]
    if isinstance(obj, dict):
        return {str(k): _convert(v) for k, v in obj.items()}
    if hasattr(obj, "__dataclass_fields__"):
        return {k: _convert(getattr(obj, k)) for k in obj.__dataclass_fields__}
    if hasattr(obj, "_asdict"):
        return _convert(obj._asdict())
    return str(obj)


def _write(event):
    event.setdefault("pid", os.getpid())
    event.setdefault("timestamp", time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime()) + ".%06dZ" % (time.time() % 1 * 1e6))
    line = json.dumps(_convert(event), separators=(",", ":"))
    with _lock:
        stream = _stream()
        stream.write(line + "\n")
        stream.flush()


def _close():
    stream = _state.get("stream")
    if stream is not None:
        with contextlib.suppress(Exception):
            stream.close()
        _state["stream"] = None


atexit.register(_close)


def _stack(skip=2):
    frames = []
    for frame in traceback.extract_stack()[:-skip][-40:]:
        frames.append({"line": frame.lineno, "name": frame.name, "filename": frame.filename, "loc": frame.line})
    return frames


def _in_autotune_benchmark():
    frame = sys._getframe(1)
    while frame is not None:
        code = frame.f_code
        if code.co_filename.endswith("autotuner.py") and code.co_name in ("_bench", "kernel_call", "benchmark"):
            return True
        frame = frame.f_back
    return False


# --- tensors ----------------------------------------------------------------------------


def _save_blob(tensor):
    import torch

    buf = io.BytesIO()
    torch.save(tensor.detach().cpu(), buf)
    data = buf.getvalue()
    digest = hashlib.blake2b(data).hexdigest()
    known = _state["blob_hashes"].get(digest)
    if known is not None:
        return {"tensor_hash": digest, "blob_path": known, "blob_size": os.path.getsize(known),
                "blob_size_uncompressed": len(data), "compression": "gzip" if known.endswith(".gz") else "none",
                "serialization_method": "torch_save", "deduplicated": True}
    compression = "none"
    suffix = ".bin"
    payload = data
    if len(data) >= COMPRESS_AT:
        payload = gzip.compress(data, compresslevel=4)
        compression, suffix = "gzip", ".bin.gz"
    folder = os.path.join(out_dir(), "saved_tensors", digest[:2])
    os.makedirs(folder, exist_ok=True)
    path = os.path.abspath(os.path.join(folder, digest + suffix))
    if not os.path.exists(path):
        tmp = "%s.tmp%d" % (path, os.getpid())
        with open(tmp, "wb") as fh:
            fh.write(payload)
        os.replace(tmp, path)
    _state["blob_hashes"][digest] = path
    return {"tensor_hash": digest, "blob_path": path, "blob_size": len(payload), "blob_size_uncompressed": len(data),
            "compression": compression, "compression_ratio": len(data) / max(1, len(payload)),
            "serialization_method": "torch_save"}


def _arg_info(value, blobs):
    torch = sys.modules.get("torch")
    if torch is not None and isinstance(value, torch.Tensor):
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
        if value.numel():
            try:
                f = value.detach().float()
                info.update(min=f.min().item(), max=f.max().item(), mean=f.mean().item(), std=f.std().item())
            except Exception as exc:
                info["tensor_capture_error"] = str(exc)
        if blobs:
            try:
                info.update(_save_blob(value))
            except Exception as exc:
                info["error"] = "blob not saved: %s" % exc
        return info
    if isinstance(value, (bool, int, float)):
        return {"type": type(value).__name__, "value": value}
    if isinstance(value, str):
        return {"type": "str", "value": value, "length": len(value)}
    if value is None:
        return {"type": "NoneType", "repr": "None"}
    text = str(value)
    return {"type": type(value).__name__, "repr": text[:200] + ("..." if len(text) > 200 else "")}


def _blobs_for(name):
    limit = _max_blob_launches()
    if limit <= 0:
        return False
    count = _state["blob_launches"].get(name, 0)
    if count >= limit:
        return False
    _state["blob_launches"][name] = count + 1
    return True


def _synchronize(tensors):
    torch = sys.modules.get("torch")
    if torch is None:
        return
    kinds = {t.device.type for t in tensors}
    if "cuda" in kinds:
        torch.cuda.synchronize()
    if "xpu" in kinds and hasattr(torch, "xpu"):
        torch.xpu.synchronize()
    if "mps" in kinds and hasattr(torch, "mps"):
        torch.mps.synchronize()


def _capturing():
    torch = sys.modules.get("torch")
    try:
        return bool(torch is not None and torch.cuda.is_available() and torch.cuda.is_current_stream_capturing())
    except Exception:
        return False


# --- compilation events -----------------------------------------------------------------


def _python_source(fn):
    """Whole file of the kernel plus the kernel's line range (TRITON_FULL_PYTHON_SOURCE form)."""
    target = getattr(fn, "fn", fn)
    path = inspect.getsourcefile(target) or inspect.getfile(target)
    start = getattr(fn, "starting_line_number", None)
    raw = getattr(fn, "raw_src", None)
    if start is None or raw is None:
        raw, start = inspect.getsourcelines(target)
    end = start + len(raw) - 1
    try:
        with open(path, encoding="utf-8") as fh:
            code = fh.read()
    except OSError:
        code = "".join(raw)
        return {"file_path": path, "start_line": start, "end_line": end, "code": code}
    return {"file_path": path, "start_line": 1, "end_line": len(code.split("\n")), "code": code,
            "function_start_line": start, "function_end_line": end}


def _wrap_launch_metadata(fn):
    previous = getattr(fn, "launch_metadata", None)
    if getattr(previous, "_tritonbisect", False):
        return

    def launch_metadata(grid, metadata, args):
        extra = previous(grid, metadata, args) if previous is not None else None
        out = dict(extra or {})
        out["tritonbisect"] = (grid, metadata, args)
        return out

    launch_metadata._tritonbisect = True
    fn.launch_metadata = launch_metadata


def _on_compile(src, metadata, metadata_group, times, cache_hit):
    fn = getattr(src, "fn", None)
    if fn is None:  # compiled from IR: no Python source, no arguments
        return
    name = (metadata or {}).get("name") or getattr(getattr(fn, "fn", None), "__name__", "?")
    if not _kernel_wanted(name):
        return
    meta = dict(metadata or {})
    meta["cache_hit"] = bool(cache_hit)
    meta["src_constants"] = _convert(getattr(src, "constants", {}) or {})
    meta["src_attrs"] = _convert(getattr(src, "attrs", {}) or {})
    meta["src_cache_key"] = getattr(fn, "cache_key", "")
    try:
        from triton._C.libtriton import get_cache_invalidating_env_vars

        meta["env"] = dict(get_cache_invalidating_env_vars())
    except Exception:
        meta.setdefault("env", {})
    if times is not None:
        meta["times"] = _convert(times)
    payload = {"metadata": meta, "file_path": {}, "file_content": {}}
    for fname, path in (metadata_group or {}).items():
        payload["file_path"][fname] = path
        if fname.endswith(TEXT_IR):
            try:
                if os.path.getsize(path) <= 10 * 1024 * 1024:
                    with open(path, encoding="utf-8") as fh:
                        payload["file_content"][fname] = fh.read()
            except (OSError, UnicodeDecodeError):
                pass
    try:
        payload["python_source"] = _python_source(fn)
    except Exception as exc:
        _warn("source:" + str(name), "no Python source for %s: %s" % (name, exc))
    _write({"event_type": "compilation", "stack": _stack(), "payload": payload})
    _wrap_launch_metadata(fn)


def _make_listener(previous):
    def listener(*, src, metadata, metadata_group, times, cache_hit, **kwargs):
        try:
            _on_compile(src, metadata, metadata_group, times, cache_hit)
            _ensure_launch_hooks()
        except Exception as exc:
            _warn("compile", "compilation event not written: %r" % (exc,))
        if previous is not None:
            return previous(src=src, metadata=metadata, metadata_group=metadata_group, times=times,
                            cache_hit=cache_hit, **kwargs)
        return None

    listener._tritonbisect = True
    return listener


# --- launch hooks -----------------------------------------------------------------------


def launch_enter(metadata):
    try:
        data = metadata.get()
    except Exception:
        return
    item = data.get("tritonbisect") if isinstance(data, dict) else None
    if item is None:
        return
    grid, kmeta, args = item
    name = data.get("name") or (kmeta._asdict().get("name") if hasattr(kmeta, "_asdict") else "?")
    if not _kernel_wanted(name):
        return
    _record_launch(name, grid, kmeta, args, data.get("stream"), data.get("function"), holder=metadata)


def _record_launch(name, grid, kmeta, args, stream, function, holder):
    seq = next(_seq)
    capturing = _capturing()
    benchmark = _in_autotune_benchmark()
    if capturing:
        extracted = {"_note": GRAPH_NOTE}
        blobs = False
    else:
        blobs = not benchmark and _blobs_for(name)
        extracted = {k: _arg_info(v, blobs) for k, v in args.items()}
    event = {
        "event_type": "launch",
        "name": name,
        "function": function if isinstance(function, int) else None,
        "stream": stream if isinstance(stream, int) else None,
        "grid": [int(g) for g in grid] if isinstance(grid, (list, tuple)) else [int(grid)],
        "compilation_metadata": kmeta._asdict() if hasattr(kmeta, "_asdict") else dict(kmeta or {}),
        "extracted_args": extracted,
        "extracted_inductor_args": {},
        "stack": _stack(3),
        "tritonbisect_launch_seq": seq,
    }
    _write(event)
    if blobs:
        tensors = {k: v for k, v in args.items() if hasattr(v, "data_ptr") and hasattr(v, "shape")}
        with contextlib.suppress(Exception):
            holder._tritonbisect_pending = (seq, name, tensors)
    return seq


def launch_exit(metadata):
    pending = getattr(metadata, "_tritonbisect_pending", None)
    if pending is None:
        return
    with contextlib.suppress(Exception):
        delattr(metadata, "_tritonbisect_pending")
    _record_exit(*pending)


def _record_exit(seq, name, tensors):
    try:
        _synchronize(list(tensors.values()))
        outputs = {k: _arg_info(v, True) for k, v in tensors.items()}
    except Exception as exc:  # e.g. the kernel faulted: the program will report it
        _warn("exit:%s" % name, "outputs after %s not recorded: %r" % (name, exc))
        return
    _write({"event_type": "tritonbisect_launch_exit", "name": name, "tritonbisect_launch_seq": seq,
            "outputs": outputs})


def _add_hook(knobs_runtime, attr, hook):
    current = getattr(knobs_runtime, attr, None)
    if hasattr(current, "add") and hasattr(current, "calls"):
        if hook not in current.calls:
            current.add(hook)
        return
    if getattr(current, "_tritonbisect", False):
        return

    # older Triton: a single callable; call what was there, then ours
    def chained(metadata, _previous=current):
        if _previous is not None:
            _previous(metadata)
        hook(metadata)

    chained._tritonbisect = True
    setattr(knobs_runtime, attr, chained)


def _ensure_launch_hooks():
    from triton import knobs

    _add_hook(knobs.runtime, "launch_enter_hook", launch_enter)
    _add_hook(knobs.runtime, "launch_exit_hook", launch_exit)


# --- interpreter ------------------------------------------------------------------------


def _wrap_interpreter():
    try:
        from triton.runtime import interpreter
    except Exception:
        return
    executor = getattr(interpreter, "GridExecutor", None)
    if executor is None or getattr(executor.__call__, "_tritonbisect", False):
        return
    original = executor.__call__

    def __call__(self, *args_dev, **kwargs):
        pending = None
        try:
            pending = _interp_before(self, args_dev, kwargs)
        except Exception as exc:
            _warn("interp", "interpreted launch not traced: %r" % (exc,))
        out = original(self, *args_dev, **kwargs)
        if pending is not None:
            _record_exit(*pending)
        return out

    __call__._tritonbisect = True
    executor.__call__ = __call__


def _interp_before(executor, args_dev, kwargs):
    import triton

    fn = executor.fn
    name = fn.__name__
    if not _kernel_wanted(name):
        return None
    sig = inspect.signature(fn)
    params = list(sig.parameters)
    bound = sig.bind(*args_dev, **{k: v for k, v in kwargs.items() if k in params})
    bound.apply_defaults()
    args = dict(bound.arguments)
    grid = executor.grid(args) if callable(executor.grid) else executor.grid
    grid = list(grid) if isinstance(grid, (list, tuple)) else [grid]
    options = {k: kwargs[k] for k in ("num_warps", "num_stages", "num_ctas") if k in kwargs}
    signature = []
    for k, v in args.items():
        if hasattr(v, "dtype") and hasattr(v, "data_ptr"):
            signature.append((k, str(v.dtype), v.data_ptr() % 16 == 0))
        elif k in executor.constexprs:
            signature.append((k, repr(v)))
        else:
            signature.append((k, type(v).__name__))
    key = repr((name, signature, sorted(options.items())))
    try:
        source = inspect.getsource(fn)
    except Exception:
        source = name
    digest = hashlib.sha256((source + key).encode()).hexdigest()
    meta = {
        "hash": digest,
        "name": name,
        "num_warps": options.get("num_warps", 4),
        "num_stages": options.get("num_stages", 3),
        "num_ctas": options.get("num_ctas", 1),
        "debug": False,
        "enable_fp_fusion": True,
        "backend_name": "interpreter",
        "target": {"backend": "interpreter", "arch": "cpu", "warp_size": 32},
        "triton_version": getattr(triton, "__version__", "?"),
    }
    if digest not in _state["interp_compiled"]:
        _state["interp_compiled"].add(digest)
        payload = {"metadata": dict(meta, cache_hit=False, env={}, src_constants={}, src_attrs={}),
                   "file_path": {}, "file_content": {}}
        try:
            payload["python_source"] = _python_source(fn)
        except Exception as exc:
            _warn("source:" + name, "no Python source for %s: %s" % (name, exc))
        _write({"event_type": "compilation", "stack": _stack(), "payload": payload})
    holder = type("_Holder", (), {})()
    _record_launch(name, grid, meta, args, None, None, holder=holder)
    return getattr(holder, "_tritonbisect_pending", None)


# --- installation -----------------------------------------------------------------------


def install_hooks():
    """Chain our hooks into an imported triton (idempotent)."""
    if _state["installed"]:
        return
    from triton import knobs

    previous = getattr(knobs.compilation, "listener", None)
    if not getattr(previous, "_tritonbisect", False):
        knobs.compilation.listener = _make_listener(previous)
    _ensure_launch_hooks()
    _wrap_interpreter()
    _state["installed"] = True


class _Loader(importlib.abc.Loader):
    def __init__(self, inner):
        self.inner = inner

    def create_module(self, spec):
        return self.inner.create_module(spec)

    def exec_module(self, module):
        self.inner.exec_module(module)
        try:
            install_hooks()
        except Exception as exc:
            _warn("install", "could not hook into triton: %r" % (exc,))

    def __getattr__(self, name):
        return getattr(self.inner, name)


class _Watcher(importlib.abc.MetaPathFinder):
    """Installs the hooks right after `import triton` finishes."""

    def find_spec(self, name, path=None, target=None):
        if name != "triton":
            return None
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(name, path, target)
            if spec is not None:
                if spec.loader is not None:
                    spec.loader = _Loader(spec.loader)
                return spec
        return None


def install():
    if not out_dir():
        return
    if "triton" in sys.modules and hasattr(sys.modules["triton"], "knobs"):
        install_hooks()
    else:
        sys.meta_path.insert(0, _Watcher())


def chain_sitecustomize(own_dir):
    """Run the sitecustomize that ours shadows, if there is one."""
    own = os.path.abspath(own_dir)
    for entry in sys.path:
        if not entry or os.path.abspath(entry) == own:
            continue
        candidate = os.path.join(entry, "sitecustomize.py")
        if os.path.isfile(candidate):
            spec = importlib.util.spec_from_file_location("_tritonbisect_next_sitecustomize", candidate)
            if spec is not None and spec.loader is not None:
                module = importlib.util.module_from_spec(spec)
                spec.loader.exec_module(module)
            return
