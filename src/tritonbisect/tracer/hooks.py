# ruff: noqa: UP031, B905  (runs on the traced program's Python, which may be older than the tool's)
"""Triton's side: the compilation listener, the launch context, the launch enter/exit hooks.

How a launch is seen: Triton asks `CompiledKernel.launch_metadata(grid, stream, *args)` for
the object it then hands to the launch hooks (when a launch-enter hook is installed; Inductor's
generated launchers ask the same method). The tracer wraps that method on the *class*, so no
kernel, JITFunction or metadata object of the program carries anything of ours, and a kernel
compiled in another process (an Inductor compile worker) is seen like any other. The wrapper
returns Triton's own result untouched and keeps (kernel, grid, args) in a thread-local slot
that the enter hook, called next by the launcher with that very object, takes.

Records:
- `compilation`: as tritonparse writes it (metadata, IR files, the kernel's whole source file),
  from the compilation listener; a process that launches a kernel it did not compile (compiled
  by a compile worker, loaded from a cache, inherited through fork) writes the record at the
  kernel's first launch instead, from the `CompiledKernel`, so every process's file has the
  compilations of the launches in it.
- `launch`: as tritonparse writes it, plus `tritonbisect_launch_seq`, and
  `tritonbisect_benchmark: true` for launches made while an autotuner benchmarks configs (those
  get no statistics, no blobs and no sync: the tracer must not change the timings it measures).
- `tritonbisect_launch_exit`: after the launch, a device sync, then every argument that holds
  tensors (tensors, TensorDescriptors, tuples of them), recorded as in `launch` with blobs.
"""

import functools
import inspect
import itertools
import os
import sys
import threading
import traceback
import types
from typing import Any

from . import config, notes, records, sink

GRAPH_NOTE = "argument extraction skipped during CUDA graph capture"
TEXT_IR = (".ttir", ".ttgir", ".llir", ".ptx", ".amdgcn", ".json", ".source")
MAX_IR_BYTES = 10 * 1024 * 1024
STACK_DEPTH = 40

_state = globals().get("_state") or {
    "compiled": set(),  # kernel hashes whose compilation this process has written
    "seq": itertools.count(),
    "original_launch_metadata": None,
}
_tls = globals().get("_tls") or threading.local()


def _mark(fn, name):
    fn._tritonbisect = name
    return fn


def _ours(obj, name=None):
    """Whether `obj` is one of the tracer's functions (or a partial of one)."""
    target = obj.func if isinstance(obj, functools.partial) else obj
    tag = getattr(target, "_tritonbisect", None)
    return tag is not None and (name is None or tag == name)


# --- helpers ----------------------------------------------------------------------------


def stack(skip=2):
    frames = traceback.extract_stack(sys._getframe(skip), limit=STACK_DEPTH)
    return [{"line": f.lineno, "name": f.name, "filename": f.filename, "loc": f.line} for f in frames]


def _benchmark_frame(filename, name):
    base = os.path.basename(filename)
    if base == "autotuner.py":
        return name in ("_bench", "kernel_call")
    if base == "testing.py":
        return name.startswith("do_bench")
    return base in ("benchmarking.py", "autotune_process.py") and "_inductor" in filename


def in_benchmark():
    """Called from an autotuner's benchmark (Triton's autotuner, triton.testing.do_bench,
    Inductor's benchmarker and autotune subprocess)."""
    frame: types.FrameType | None = sys._getframe(1)
    while frame is not None:
        code = frame.f_code
        if _benchmark_frame(code.co_filename, code.co_name):
            return True
        frame = frame.f_back
    return False


def after_fork_in_child():
    _state["compiled"] = set()
    _state["seq"] = itertools.count()
    records._state["blob_launches"] = {}


# --- compilation records ----------------------------------------------------------------


def python_source(fn):
    """The kernel's whole source file plus its line range (TRITON_FULL_PYTHON_SOURCE form)."""
    target = fn if inspect.isfunction(fn) else getattr(fn, "fn", None)
    start = getattr(fn, "starting_line_number", None)
    raw = getattr(fn, "raw_src", None)
    path = getattr(fn, "file_name", None)
    if target is not None:  # Inductor clears .fn before pickling a kernel to another process
        path = inspect.getsourcefile(target) or inspect.getfile(target)
        if start is None or raw is None:
            raw, start = inspect.getsourcelines(target)
    if raw is None or start is None:
        raise ValueError("no source recorded for %s" % getattr(fn, "__name__", fn))
    end = start + len(raw) - 1
    code = None
    if path:
        try:
            with open(path, encoding="utf-8") as fh:
                code = fh.read()
        except OSError:
            code = None
    if code is None:
        return {"file_path": path or "", "start_line": start, "end_line": end, "code": "".join(raw)}
    return {"file_path": path, "start_line": 1, "end_line": len(code.split("\n")), "code": code,
            "function_start_line": start, "function_end_line": end}


def compilation_event(src, metadata, metadata_group, times, cache_hit, asm=None):
    fn = getattr(src, "fn", None)
    name = metadata.get("name") or getattr(fn, "__name__", "?")
    meta = dict(metadata)
    meta["cache_hit"] = bool(cache_hit)
    meta["src_constants"] = sink.convert(getattr(src, "constants", {}) or {})
    meta["src_attrs"] = sink.convert(getattr(src, "attrs", {}) or {})
    meta["src_cache_key"] = getattr(fn, "cache_key", "")
    try:
        from triton._C.libtriton import get_cache_invalidating_env_vars

        meta["env"] = dict(get_cache_invalidating_env_vars())
    except Exception:
        meta.setdefault("env", {})
    if times is not None:
        meta["times"] = sink.convert(times)
    payload = {"metadata": meta, "file_path": {}, "file_content": {}}
    for fname, path in (metadata_group or {}).items():
        payload["file_path"][fname] = path
        if fname.endswith(TEXT_IR):
            try:
                if os.path.getsize(path) <= MAX_IR_BYTES:
                    with open(path, encoding="utf-8") as fh:
                        payload["file_content"][fname] = fh.read()
            except (OSError, UnicodeDecodeError):
                pass
    for ext, text in (asm or {}).items():  # the IR the kernel holds, where its files are gone
        fname = "%s.%s" % (name, ext)
        if isinstance(text, str) and fname.endswith(TEXT_IR) and fname not in payload["file_content"]:
            payload["file_content"][fname] = text
    if fn is not None:
        try:
            payload["python_source"] = python_source(fn)
        except Exception as exc:
            sink.fail("compilation", "no Python source: %s" % exc, name)
    return {"event_type": "compilation", "stack": stack(3), "payload": payload}


def on_compile(previous, *, src, metadata, metadata_group, times, cache_hit, **kwargs):
    """knobs.compilation.listener, as functools.partial(on_compile, <the listener before>)."""
    name = None
    try:
        name = (metadata or {}).get("name")
        if getattr(src, "fn", None) is not None and config.kernel_wanted(name):  # IR sources have no fn
            event = compilation_event(src, metadata or {}, metadata_group, times, cache_hit)
            sink.write(event)
            notes.count("compilations")
            if metadata.get("hash"):
                _state["compiled"].add(metadata["hash"])
    except Exception as exc:
        sink.fail("compilation", exc, name)
    if previous is not None:
        return previous(src=src, metadata=metadata, metadata_group=metadata_group, times=times,
                        cache_hit=cache_hit, **kwargs)
    return None


_mark(on_compile, "on_compile")


def _compilation_from_kernel(kernel):
    meta = kernel.metadata._asdict() if hasattr(kernel.metadata, "_asdict") else dict(kernel.metadata)
    meta.setdefault("hash", kernel.hash)
    event = compilation_event(kernel.src, meta, getattr(kernel, "metadata_group", None), None, True,
                              asm=getattr(kernel, "asm", None))
    event["tritonbisect_recorded_at"] = "first launch"
    return event


# --- launches ---------------------------------------------------------------------------


def launch_metadata(self, grid, stream, *args):
    """Installed as CompiledKernel.launch_metadata: Triton's own, then keep the launch context."""
    result = _state["original_launch_metadata"](self, grid, stream, *args)
    if result is not None:
        try:
            if enter_hook_installed():
                _tls.context = (result, self, grid, args)
            elif config.kernel_wanted(self.name):
                sink.fail("hooks", "the program replaced launch_enter_hook: its launches are not recorded", self.name)
        except Exception as exc:
            sink.fail("launch", exc, getattr(self, "name", None))
    return result


_mark(launch_metadata, "launch_metadata")


def launch_enter(metadata):
    context = getattr(_tls, "context", None)
    if context is None:
        return
    _tls.context = None
    if context[0] is not metadata:  # not the launch we were told about
        return
    _, kernel, grid, args = context
    name = getattr(kernel, "name", None)
    try:
        if not config.kernel_wanted(name):
            return
        src = kernel.src
        fn = getattr(src, "fn", None)
        if fn is None:  # compiled from IR: no arguments to name
            return
        if kernel.hash not in _state["compiled"]:
            _state["compiled"].add(kernel.hash)
            try:
                sink.write(_compilation_from_kernel(kernel))
                notes.count("compilations")
            except Exception as exc:
                sink.fail("compilation", exc, name)
        data = getattr(metadata, "data", None) or {}
        kmeta = kernel.metadata._asdict() if hasattr(kernel.metadata, "_asdict") else dict(kernel.metadata)
        named = dict(zip(fn.arg_names, args))
        pending = record_launch(name, grid, kmeta, named, data.get("stream"), data.get("function"))
        if pending is not None:
            exits = getattr(_tls, "exits", None)
            if exits is None:
                exits = _tls.exits = []
            del exits[:-8]  # launches whose exit never came (the launch raised) are dropped
            exits.append((metadata, pending))
    except Exception as exc:
        sink.fail("launch", exc, name)


_mark(launch_enter, "launch_enter")


def launch_exit(metadata):
    exits = getattr(_tls, "exits", None)
    if not exits:
        return
    for i in range(len(exits) - 1, -1, -1):
        if exits[i][0] is metadata:
            pending = exits.pop(i)[1]
            record_exit(*pending)
            return


_mark(launch_exit, "launch_exit")


def record_launch(name, grid, kmeta, args, stream, function):
    """Write the `launch` record; return what `record_exit` needs, or None."""
    seq = next(_state["seq"])
    benchmark = in_benchmark()
    blobs = False
    if records.capturing():
        # what a capture allows: where each tensor is and how it is laid out (no copy, no
        # sync, no statistics), so a replay can find the eager launch that used the same memory
        extracted = {"_note": GRAPH_NOTE}
        extracted.update((k, records.arg_record(v, False, stats=False, kernel=name)) for k, v in args.items())
        notes.count("captured")
    else:
        blobs = not benchmark and records.blobs_allowed(name)
        extracted = {k: records.arg_record(v, blobs, stats=not benchmark, kernel=name) for k, v in args.items()}
    grid = [int(g) for g in grid] if isinstance(grid, (list, tuple)) else [int(grid)]
    event = {
        "event_type": "launch",
        "name": name,
        "function": function if isinstance(function, int) and not isinstance(function, bool) else None,
        "stream": stream if isinstance(stream, int) else None,
        "grid": grid,
        "compilation_metadata": kmeta,
        "extracted_args": extracted,
        "extracted_inductor_args": {},
        "stack": stack(4),
        "tritonbisect_launch_seq": seq,
    }
    if benchmark:
        event["tritonbisect_benchmark"] = True
    sink.write(event)
    notes.count("launches")
    if not (blobs and config.outputs_after()):
        return None
    held = {k: v for k, v in args.items() if records.holds_tensors(v)}
    return (seq, name, held) if held else None


def record_exit(seq, name, args):
    try:
        tensors = [t for v in args.values() for t in records.tensors_in(v)]
        records.synchronize(tensors)
        outputs = {k: records.arg_record(v, True, kernel=name) for k, v in args.items()}
        sink.write({"event_type": "tritonbisect_launch_exit", "name": name, "tritonbisect_launch_seq": seq,
                    "outputs": outputs})
    except Exception as exc:  # e.g. the kernel faulted: the program sees that error itself
        sink.fail("launch_exit", exc, name)


# --- installation -----------------------------------------------------------------------


def chain_hooks(hooks, metadata):
    """A single-slot hook (older Triton) holding the program's hook and ours, in order."""
    for hook in hooks:
        hook(metadata)


_mark(chain_hooks, "chain_hooks")


def _hook_owner():
    owner = _state.get("owner")
    if owner is not None:
        return owner
    _state["owner"] = owner = _find_hook_owner()
    return owner


def _find_hook_owner():
    try:
        from triton import knobs

        return knobs.runtime
    except ImportError:  # Triton < 3.4: class attributes of CompiledKernel
        from triton.compiler.compiler import CompiledKernel

        return CompiledKernel


def _add_hook(owner, attr, hook):
    current: Any = getattr(owner, attr, None)
    if hasattr(current, "add") and hasattr(current, "calls"):  # knobs.HookChain
        for call in [c for c in current.calls if _ours(c, hook._tritonbisect)]:
            current.calls.remove(call)  # an older copy of ours (module reloaded)
        current.add(hook)
        return
    if current is None or _ours(current, hook._tritonbisect):
        setattr(owner, attr, functools.partial(hook))
        return
    if _ours(current, "chain_hooks"):
        others = [h for h in current.args[0] if not _ours(h, hook._tritonbisect)]
    else:
        others = [current]
    setattr(owner, attr, functools.partial(chain_hooks, (*others, hook)))


def enter_hook_installed():
    current: Any = getattr(_hook_owner(), "launch_enter_hook", None)
    if hasattr(current, "calls"):
        return launch_enter in current.calls
    if isinstance(current, functools.partial):
        return current.func is launch_enter or (current.func is chain_hooks and any(
            h is launch_enter or (isinstance(h, functools.partial) and h.func is launch_enter)
            for h in current.args[0]))
    return current is launch_enter


def install():
    """Chain into an imported triton (idempotent, and safe after importlib.reload)."""
    from triton.compiler.compiler import CompiledKernel

    current = CompiledKernel.__dict__.get("launch_metadata")
    if current is None:
        raise RuntimeError("this Triton has no CompiledKernel.launch_metadata: launches cannot be traced")
    if not _ours(current):
        _state["original_launch_metadata"] = current
    CompiledKernel.launch_metadata = launch_metadata
    owner = _hook_owner()
    _add_hook(owner, "launch_enter_hook", launch_enter)
    _add_hook(owner, "launch_exit_hook", launch_exit)
    try:
        from triton import knobs
    except ImportError:
        return  # no compilation listener before Triton 3.4: compilations are written at first launch
    previous = knobs.compilation.listener
    if _ours(previous, "on_compile"):
        previous = previous.args[0]
    knobs.compilation.listener = functools.partial(on_compile, previous)


# importlib.reload of this module must not change the identity of what is installed in Triton:
# pickle finds a function by its name and checks it is the same object. The first definitions
# stay; they read this module's globals, which a reload updates in place.
for _name in ("launch_metadata", "launch_enter", "launch_exit", "on_compile", "chain_hooks"):
    globals()[_name] = _state.setdefault("first_" + _name, globals()[_name])
