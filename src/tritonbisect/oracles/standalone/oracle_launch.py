# ruff: noqa: UP031, B905  (runs on the target's Python, which may be older than the tool's)
"""One launch of the kernel: the interpreter's NumPy compatibility, compile-only warmup, the
recorded IR compiled in the source's place (the runtime IR oracle), and the launch with its
errors classified. Copied beside the script."""

import os
import traceback

from oracle_args import compile_options, install_allocator
from oracle_core import Outcome, error_kind, short_error, synchronize


def interpreter_numpy_compat():
    """Triton's interpreter turns a scalar tensor into an int with int(array) of a one-element,
    one-dimensional array, which NumPy 2.4 refuses ("only 0-dimensional arrays can be converted"):
    a loop `tl.range(0, n, BLOCK)` over a scalar bound (every Inductor reduction kernel) then
    fails. The conversion is wrapped to read the one element, where this Triton has the hook."""
    try:
        import triton.runtime.interpreter as interp
    except Exception:
        return
    original = getattr(interp, "_patch_lang_tensor", None)
    if original is None or getattr(original, "__name__", "") == "tb_patch_lang_tensor":
        return

    def index(self):
        data = self.handle.data
        return int(data.reshape(-1)[0]) if getattr(data, "size", 0) == 1 else int(data)

    def tb_patch_lang_tensor(tensor, *scope):  # 3.6 passes a scope that restores what it set; 3.5 sets directly
        original(tensor, *scope)
        if scope:
            scope[0].set_attr(tensor, "__index__", index)
        else:
            tensor.__index__ = index

    interp._patch_lang_tensor = tb_patch_lang_tensor

def has_warmup(kernel):
    """Triton 3's JITFunction.warmup(*args, grid, **kwargs): compile without launching."""
    fn = getattr(getattr(kernel, "warmup", None), "__func__", None)
    code = getattr(fn, "__code__", None)
    return code is not None and "grid" in code.co_varnames[: code.co_argcount + code.co_kwonlyargcount]

class IRKernel:
    """The kernel compiled from the recorded IR, launched by the JIT with the arguments it
    bound from the source's signature. The IR's function has no constexpr parameters, so
    the launcher gets the bound arguments without them."""

    def __init__(self, inner, nparams, keep):
        self._inner, self._nparams, self._keep = inner, nparams, keep

    def __getattr__(self, name):
        return getattr(self._inner, name)

    def run(self, *args, **kwargs):
        if len(self._keep) < self._nparams <= len(args):
            head, tail = args[: len(args) - self._nparams], args[len(args) - self._nparams:]
            args = tuple(head) + tuple(tail[i] for i in self._keep)
        return self._inner.run(*args, **kwargs)

def parse_ir(target, path):
    """Raise when this Triton's dialects cannot read the IR file (dialect drift)."""
    try:
        from triton._C.libtriton import ir as mlir
        from triton.compiler.compiler import make_backend
    except ImportError:
        return
    if not hasattr(mlir, "parse_mlir_module"):
        return
    context = mlir.context()
    mlir.load_dialects(context)
    backend = make_backend(target)
    if hasattr(backend, "load_dialects"):
        backend.load_dialects(context)
    mlir.parse_mlir_module(path, context)

def use_recorded_ir(triton, kernel, ir, here):
    """Make the JIT compile the recorded IR (a file in `here`) instead of the kernel's source;
    it still binds, specialises and launches the arguments as for the source."""
    path = os.path.join(here, ir["file"])
    caches = getattr(kernel, "device_caches", None)
    if caches is not None:  # Triton 3.x sets kernel.compile when it makes the device's binder: make it first
        caches[triton.runtime.driver.active.get_current_device()]
    if not callable(getattr(kernel, "compile", None)):
        raise Outcome("usage_error", "this Triton's JIT compiles through no per-kernel hook: the recorded %s "
                      "cannot be launched (use the source oracle)" % ir["stage"])

    def compile_ir(src, target=None, options=None, **_ignored):
        try:
            parse_ir(target, path)
        except Exception as exc:
            raise Outcome("unreadable_ir", "this Triton cannot read the recorded %s: %s"
                          % (ir["stage"], short_error(exc))) from None
        inner = triton.compile(path, target=target, options=options)
        signature = list((getattr(src, "signature", None) or {}).items())
        keep = [i for i, (_, ty) in enumerate(signature) if ty != "constexpr"]
        return IRKernel(inner, len(signature), keep)

    kernel.compile = compile_ir

def launch(torch, triton, kernel, ctx, state, device, interpret, source):
    grid = tuple(ctx["launch"]["grid"])
    kwargs = dict(state["arguments"])
    options = compile_options(triton, ctx)
    install_allocator(torch, triton, device, source)
    if not interpret and has_warmup(kernel):
        try:
            kernel.warmup(grid=grid, **kwargs, **options)
        except Outcome:
            raise
        except Exception as exc:
            traceback.print_exc()
            raise Outcome("compile_error", "the kernel does not compile: " + short_error(exc)) from None
    try:
        kernel[grid](**kwargs, **options)
        synchronize(torch, device)
    except Outcome:
        raise
    except Exception as exc:
        traceback.print_exc()
        kind = error_kind(exc)
        what = "the kernel does not compile" if kind == "compile_error" else "the launch failed"
        raise Outcome(kind, "%s: %s" % (what, short_error(exc))) from None
