"""Make the source of an Inductor-generated kernel run outside the program that generated it.

Inductor's kernel files import `triton_helpers`, `libdevice` and `tl_math` from
`torch._inductor.runtime`, call `triton_helpers.set_driver_to_gpu()` at module level and wrap
each kernel in a `@triton_heuristics.*` autotuner (dropped by source.py, which pins the launched
config). The helpers are `@triton.jit` functions of torch: the oracle keeps importing them from
the torch of the target environment, but through a shim, because their home moved across
PyTorch releases (`torch._inductor.triton_helpers` before `torch._inductor.runtime.*`) and
because a torch may fail to import them with the Triton under test: then libdevice and math
fall back to Triton's own modules, and anything else fails with one line naming the helper.
"""

from __future__ import annotations

import ast

INDUCTOR_PACKAGE = "torch._inductor"

# Written into the embedded kernel source. It must run on old Pythons and needs no tritonbisect.
SHIM = '''
def _tb_inductor_import(module, name):
    """Inductor's runtime helper `name`, wherever this torch (or Triton) keeps it."""
    import importlib

    homes = [module]
    runtime = "torch._inductor.runtime"
    if module.startswith(runtime):
        homes.append("torch._inductor" + module[len(runtime):])
    elif module.startswith("torch._inductor"):
        homes.append(runtime + module[len("torch._inductor"):])
    tried = []
    for home in homes:
        for attempt in ("module", "attribute"):
            try:
                if attempt == "module":
                    found = importlib.import_module(home + "." + name)
                else:
                    found = getattr(importlib.import_module(home), name)
            except Exception as exc:
                if attempt == "attribute":
                    tried.append("%s.%s (%s: %s)" % (home, name, type(exc).__name__, exc))
                continue
            if _tb_on_gpu():
                return found
            if name == "libdevice":
                return _TbInterpretedLibdevice(found)
            return _TbInterpretedHelpers(found) if name == "triton_helpers" else found
    fallbacks = {
        "libdevice": [("triton.language.extra.libdevice", None), ("triton.language.extra.cuda.libdevice", None),
                      ("triton.language.extra.cuda", "libdevice"), ("triton.language", "math")],
        "math": [("triton.language", "math")],
    }
    for home, attr in fallbacks.get(name, []):
        try:
            found = importlib.import_module(home)
            found = getattr(found, attr) if attr else found
            return found if name != "libdevice" or _tb_on_gpu() else _TbInterpretedLibdevice(found)
        except Exception as exc:
            tried.append("%s (%s)" % (home, type(exc).__name__))
    raise ImportError("Inductor runtime helper %r is not importable with this torch and triton: tried %s"
                      % (name, "; ".join(tried)))


def _tb_on_gpu():
    import os

    return os.environ.get("TRITON_INTERPRET", "0") in ("", "0")


class _TbInterpretedHelpers(object):
    """triton_helpers under TRITON_INTERPRET=1: max2/min2 reduce with a combine function of
    Inductor's, which the interpreter calls once per element (a minute for a 128x512 softmax);
    here they are Triton's own max/min (numpy in the interpreter), with Inductor's NaN
    propagation kept. Everything else is Inductor's."""

    def __init__(self, module):
        self._module = module
        self._fast = {}

    def __getattr__(self, name):
        if name not in ("max2", "min2"):
            return getattr(self._module, name)
        if not self._fast:
            self._fast.update(_tb_fast_reductions())
        return self._fast[name]


def _tb_fast_reductions():
    import triton
    import triton.language as tl

    @triton.jit
    def max2(a, dim):
        m = tl.max(a, dim)
        if a.dtype.is_floating():
            m = tl.where(tl.max((a != a).to(tl.int8), dim) > 0, float("nan"), m).to(m.dtype)
        return m

    @triton.jit
    def min2(a, dim):
        m = tl.min(a, dim)
        if a.dtype.is_floating():
            m = tl.where(tl.max((a != a).to(tl.int8), dim) > 0, float("nan"), m).to(m.dtype)
        return m

    return {"max2": max2, "min2": min2}


class _TbInterpretedLibdevice(object):
    """libdevice under TRITON_INTERPRET=1: its functions are bodiless stubs that only a GPU
    backend resolves, so the interpreter gets Triton's own math where it has the function, and
    a composition of it for a few more; anything else is still the stub (and fails loudly)."""

    def __init__(self, stub):
        self._stub = stub

    def __getattr__(self, name):
        import triton.language as tl

        for space in (tl.math, tl):
            fn = getattr(space, name, None)
            if callable(fn) and not isinstance(fn, type):
                return fn
        composed = {
            "tanh": lambda x: 2 * tl.sigmoid(2 * x) - 1,
            "log1p": lambda x: tl.log(1 + x),
            "expm1": lambda x: tl.exp(x) - 1,
            "isnan": lambda x: x != x,
            "isinf": lambda x: tl.abs(x) == float("inf"),
            "signbit": lambda x: x < 0,
            "pow": lambda x, y: tl.where((x < 0) & (y % 2 == 1), -1.0, 1.0) * tl.exp2(y * tl.log2(tl.abs(x))),
            "tan": lambda x: tl.sin(x) / tl.cos(x),
            "log10": lambda x: tl.log2(x) * 0.30102999566398120,
        }
        if name in composed:
            return composed[name]
        return getattr(self._stub, name)
'''


def is_inductor_import(stmt: ast.stmt) -> bool:
    if isinstance(stmt, ast.ImportFrom):
        return stmt.module is not None and not stmt.level and (
            stmt.module == INDUCTOR_PACKAGE or stmt.module.startswith(INDUCTOR_PACKAGE + "."))
    if isinstance(stmt, ast.Import):
        return any(a.name.startswith(INDUCTOR_PACKAGE + ".") for a in stmt.names)
    return False


def rewrite_import(stmt: ast.ImportFrom | ast.Import, needed: set[str]) -> str:
    """The shim calls that bind what `stmt` bound (only the names the kernel needs)."""
    lines = []
    if isinstance(stmt, ast.ImportFrom):
        for alias in stmt.names:
            bound = alias.asname or alias.name
            if alias.name == "*" or bound not in needed:
                continue
            lines.append(f"{bound} = _tb_inductor_import({stmt.module!r}, {alias.name!r})")
    else:  # `import torch._inductor.x as y` keeps its own import: no helper moved there that kernels use
        lines.append(ast.unparse(stmt))
    return "".join(line + "\n" for line in lines)


def driver_calls(tree: ast.Module) -> list[str]:
    """Module-level `X.set_driver_to_gpu()` calls, replayed only when not interpreting.

    Under TRITON_INTERPRET=1, or on a machine without a GPU, it raises "Could not find an active
    GPU backend"; on a GPU it only makes sure a GPU driver is the active one.
    """
    out = []
    for stmt in tree.body:
        if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call):
            func = stmt.value.func
            if isinstance(func, ast.Attribute) and func.attr == "set_driver_to_gpu" and isinstance(func.value, ast.Name):
                out.append(func.value.id)
    return out


def guarded_driver_call(owner: str) -> str:
    """The call, skipped under the interpreter; on a machine with no GPU at all (the compile
    oracle cross-compiles there) there is no driver to switch to, which is not an error."""
    return (f"if _tb_on_gpu():\n    try:\n        {owner}.set_driver_to_gpu()\n"
            "    except RuntimeError as _tb_exc:  # no active GPU backend: compile-only\n"
            "        if 'GPU backend' not in str(_tb_exc):\n            raise\n")
