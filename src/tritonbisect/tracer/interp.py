# ruff: noqa: UP031  (runs on the traced program's Python, which may be older than the tool's)
"""TRITON_INTERPRET=1: Triton compiles nothing and calls no hook, so the tracer wraps the
interpreter's `GridExecutor.__call__` (on the class, with a module-level function) and writes
a synthetic `compilation` record (target `interpreter`) for each kernel + signature."""

import hashlib
import inspect
import weakref

from . import config, hooks, sink

_state = globals().get("_state") or {"original_call": None, "sources": weakref.WeakKeyDictionary()}


def grid_executor_call(self, *args_dev, **kwargs):
    """Installed as GridExecutor.__call__."""
    pending = None
    try:
        pending = _before(self, args_dev, kwargs)
    except Exception as exc:
        sink.fail("interpreter", exc, getattr(getattr(self, "fn", None), "__name__", None))
    out = _state["original_call"](self, *args_dev, **kwargs)
    if pending is not None:
        hooks.record_exit(*pending)
    return out


hooks._mark(grid_executor_call, "grid_executor_call")


def _interp_meta(fn, name, args, kwargs, constexprs):
    import triton

    options = {k: kwargs[k] for k in ("num_warps", "num_stages", "num_ctas") if k in kwargs}
    signature: list = []
    for k, v in args.items():
        if hasattr(v, "dtype") and hasattr(v, "data_ptr"):
            signature.append((k, str(v.dtype), v.data_ptr() % 16 == 0))
        elif k in constexprs:
            signature.append((k, repr(v)))
        else:
            signature.append((k, type(v).__name__))
    source = _state["sources"].get(fn)
    if source is None:  # read once per kernel, not at every launch
        try:
            source = inspect.getsource(fn)
        except Exception:
            source = name
        _state["sources"][fn] = source
    key = repr((name, signature, sorted(options.items())))
    return {
        "hash": hashlib.sha256((source + key).encode()).hexdigest(),
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


def _before(executor, args_dev, kwargs):
    fn = executor.fn
    name = fn.__name__
    if not config.kernel_wanted(name):
        return None
    sig = inspect.signature(fn)
    params = list(sig.parameters)
    bound = sig.bind(*args_dev, **{k: v for k, v in kwargs.items() if k in params})
    bound.apply_defaults()
    args = dict(bound.arguments)
    grid = executor.grid(args) if callable(executor.grid) else executor.grid
    grid = list(grid) if isinstance(grid, (list, tuple)) else [grid]
    meta = _interp_meta(fn, name, args, kwargs, getattr(executor, "constexprs", ()))
    if meta["hash"] not in hooks._state["compiled"]:
        hooks._state["compiled"].add(meta["hash"])
        payload = {"metadata": dict(meta, cache_hit=False, env={}, src_constants={}, src_attrs={}),
                   "file_path": {}, "file_content": {}}
        try:
            payload["python_source"] = hooks.python_source(fn)
        except Exception as exc:
            sink.fail("compilation", "no Python source: %s" % exc, name)
        sink.write({"event_type": "compilation", "stack": hooks.stack(3), "payload": payload})
    return hooks.record_launch(name, grid, meta, args, None, None)


def install():
    try:
        from triton.runtime import interpreter
    except Exception:
        return
    executor = getattr(interpreter, "GridExecutor", None)
    if executor is None:
        return
    current = executor.__dict__.get("__call__")
    if not hooks._ours(current):
        _state["original_call"] = current
    executor.__call__ = grid_executor_call


# Keep the installed function across importlib.reload (see the end of hooks.py).
grid_executor_call = _state.setdefault("first_grid_executor_call", grid_executor_call)
