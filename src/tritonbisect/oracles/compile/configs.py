"""The other configurations a traced kernel is known to run with, for the compile oracle's
context (`configs`): what `tritonbisect workaround` may switch the oracle to.

Two sources, neither evaluated: the literal `triton.Config({...}, num_warps=..., ...)` entries
of the kernel's `@triton.autotune(configs=[...])` decorator in the captured source (a
comprehension, a call or a name bound to anything but a literal list is left out), and every
other compilation of the kernel in the trace (the configs an autotuner compiled).

    [{"constexprs": {"BLOCK_M": 128, "BLOCK_N": 64}, "options": {"num_warps": 4, "num_stages": 3},
      "from": "decorator"}, ...]
"""

from __future__ import annotations

import ast
import textwrap
from typing import Any

from tritonbisect.core import pyast
from tritonbisect.oracles.compile import spec as compile_spec
from tritonbisect.traces.reader import Compilation, Trace

CONFIG_OPTIONS = ("num_warps", "num_stages", "num_ctas", "maxnreg")


def _name(node: ast.expr) -> str:
    try:
        return ast.unparse(node)
    except Exception:  # noqa: BLE001 - unparse handles every expression
        return ""


def _literal(node: ast.expr) -> Any:
    try:
        return ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return None


def _config(call: ast.expr, constexprs: set[str]) -> dict[str, Any] | None:
    if not isinstance(call, ast.Call) or _name(call.func).rsplit(".", 1)[-1] != "Config":
        return None
    kwargs = _literal(call.args[0]) if call.args else None
    for kw in call.keywords:
        if kw.arg == "kwargs":
            kwargs = _literal(kw.value)
    if not isinstance(kwargs, dict):
        return None
    values = {str(k): v for k, v in kwargs.items() if str(k) in constexprs and isinstance(v, (int, bool))}
    options = {}
    for kw in call.keywords:
        value = _literal(kw.value) if kw.arg in CONFIG_OPTIONS else None
        if isinstance(value, int) and not isinstance(value, bool):
            options[str(kw.arg)] = value
    return {"constexprs": values, "options": options, "from": "decorator"}


def _configs_list(node: ast.expr, tree: ast.Module) -> list[ast.expr]:
    if isinstance(node, (ast.List, ast.Tuple)):
        return list(node.elts)
    if isinstance(node, ast.Name):  # configs=CONFIGS, bound once at module level to a literal list
        bound = [s for s in tree.body if isinstance(s, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == node.id for t in s.targets)]
        if len(bound) == 1 and isinstance(bound[0].value, (ast.List, ast.Tuple)):
            return list(bound[0].value.elts)
    return []


def decorator_configs(python_source: dict[str, Any] | None, kernel: str, constexprs: list[str]) -> list[dict[str, Any]]:
    """The literal configs of `kernel`'s autotune decorator (empty when there are none)."""
    code = (python_source or {}).get("code")
    if not isinstance(code, str):
        return []
    try:
        tree = pyast.parse(code if "function_start_line" in (python_source or {}) else textwrap.dedent(code))
    except SyntaxError:
        return []
    out: list[dict[str, Any]] = []
    for node in ast.walk(tree):
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) or node.name != kernel:
            continue
        for dec in node.decorator_list:
            if not isinstance(dec, ast.Call) or _name(dec.func).rsplit(".", 1)[-1] != "autotune":
                continue
            given = next((kw.value for kw in dec.keywords if kw.arg == "configs"), dec.args[0] if dec.args else None)
            for item in _configs_list(given, tree) if given is not None else []:
                found = _config(item, set(constexprs))
                if found is not None and found not in out:
                    out.append(found)
        break
    return out


def _add(out: list[dict[str, Any]], constexprs: dict[str, Any], options: dict[str, Any], where: str) -> None:
    found = {"constexprs": constexprs, "options": options, "from": where}
    if (constexprs or options) and not any(o["constexprs"] == constexprs and o["options"] == options for o in out):
        out.append(found)


def trace_configs(trace: Trace, kernel: str, constexprs: list[str], params: list[str]) -> list[dict[str, Any]]:
    """The configurations `kernel` was compiled or launched with in the trace: constexpr values
    from each compilation's `src_constants` or each launch's arguments, and its options."""
    out: list[dict[str, Any]] = []
    for comp in trace.compilations.values():
        if comp.name != kernel:
            continue
        values = compile_spec.recorded_constants(comp.metadata, params) or {}
        named = {}
        for key, value in values.items():
            index = key[0] if len(key) == 1 else None
            name = params[index] if isinstance(index, int) and index < len(params) else None
            if name in constexprs and isinstance(value, (int, bool)):
                named[name] = value
        options = {k: v for k, v in compile_spec.compile_options(comp.metadata).items() if k in CONFIG_OPTIONS}
        _add(out, named, options, f"trace line {comp.line}")
    for launch in trace.launches_of(kernel):
        args = launch.args if isinstance(launch.args, dict) else {}
        named = {n: args[n]["value"] for n in constexprs
                 if isinstance(args.get(n), dict) and isinstance(args[n].get("value"), (int, bool))}
        options = {k: v for k, v in launch.compilation_metadata.items()
                   if k in CONFIG_OPTIONS and isinstance(v, int) and not isinstance(v, bool)}
        _add(out, named, options, f"trace line {launch.line}")
    return out


def kernel_configs(trace: Trace, comp: Compilation, kernel: str, constexprs: list[str], params: list[str],
                   current: dict[str, Any]) -> list[dict[str, Any]]:
    """Every known configuration but the oracle's own (`current`: {"constexprs", "options"})."""
    out: list[dict[str, Any]] = []
    for found in decorator_configs(comp.python_source, kernel, constexprs) + trace_configs(trace, kernel, constexprs, params):
        same = all(current["constexprs"].get(k) == v for k, v in found["constexprs"].items()) and \
            all(current["options"].get(k) == v for k, v in found["options"].items())
        if not same:
            _add(out, found["constexprs"], found["options"], found["from"])
    return out
