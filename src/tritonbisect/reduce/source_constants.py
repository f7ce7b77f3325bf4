"""Constants of the same type as a kernel's expressions, for the source level to try in their
place: `0.0` for a float expression, `0` for an integer one, and, for a float or integer
tensor, also `tl.zeros_like(v)` with a tensor `v` of the same kind read in the expression (a
scalar broadcasts in most places a tensor goes, not all: `tl.sum(0.0, axis=0)` does not).

The types come from a cheap look at the kernel, not from Triton: the parameters (pointers
and their element type, integers, floats, from the oracle's context), `tl.arange`,
`tl.program_id`, `tl.load` of a pointer, `tl.zeros`/`tl.full` and their dtype, math
functions, arithmetic and comparisons, and the variables assigned from them. An expression
whose type this does not see (or a pointer, a boolean, a shape or a dtype) gets no constant.
A wrong guess only costs a candidate the good Triton rejects.
"""

from __future__ import annotations

import ast
from typing import Any

from tritonbisect.reduce.context_edit import params

FLOAT, INT, BOOL = "float", "int", "bool"
Kind = tuple[str, bool]  # (float | int | bool | ptr:float | ptr:int, is a tensor)

_FLOAT_FUNCS = {"exp", "exp2", "log", "log2", "sqrt", "sqrt_rn", "rsqrt", "sin", "cos", "sigmoid", "erf",
                "div_rn", "fdiv", "softmax", "tanh", "floor", "ceil"}
_SAME_FUNCS = {"abs", "maximum", "minimum", "clamp", "fma", "cumsum", "cumprod", "dot", "trans", "reshape",
               "broadcast_to", "expand_dims", "ravel", "view", "flip"}
# reductions: taken as scalars (a 2-D tensor reduced on one axis is not, and gets no zeros_like)
_REDUCTIONS = {"sum", "max", "min", "reduce", "xor_sum", "argmax", "argmin"}
_SHAPED = {"arange", "zeros", "full", "range", "static_range", "reshape", "view", "broadcast_to", "expand_dims"}


def _elem(type_text: str) -> str | None:
    text = type_text.lower()
    if "fp" in text or "float" in text or "bf16" in text:
        return FLOAT
    if "int" in text or text.lstrip("*").startswith(("i", "u")):
        return INT
    return None


def param_kinds(context: dict[str, Any]) -> dict[str, Kind]:
    """The kernel parameters' kinds, from a runtime or compile oracle's context."""
    out: dict[str, Kind] = {}
    for spec in params(context):
        name, kind = str(spec.get("name")), spec.get("kind")
        if kind in ("tensor", "pointer"):
            elem = _elem(str(spec.get("dtype") or spec.get("type") or ""))
            if elem:
                out[name] = (f"ptr:{elem}", False)
        elif isinstance(spec.get("value"), bool):
            out[name] = (BOOL, False)
        elif isinstance(spec.get("value"), int):
            out[name] = (INT, False)
        elif isinstance(spec.get("value"), float):
            out[name] = (FLOAT, False)
    return out


def _func_name(call: ast.Call) -> str:
    f = call.func
    return f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else ""


class Kinds:
    """Kinds of a kernel's expressions, given its parameters' and the variables assigned in it."""

    def __init__(self, fn: ast.FunctionDef, params: dict[str, Kind]) -> None:
        self.env = dict(params)
        for node in ast.walk(fn):  # assignments in any order: flow-insensitive, good enough to guess
            if isinstance(node, ast.For) and isinstance(node.target, ast.Name):
                self.env[node.target.id] = (INT, False)
        for node in _statements(fn.body):
            if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
                found = self.of(node.value)
                if found is not None:
                    self.env.setdefault(node.targets[0].id, found)

    def of(self, node: ast.expr) -> Kind | None:
        if isinstance(node, ast.Constant):
            value = node.value
            return (BOOL, False) if isinstance(value, bool) else (INT, False) if isinstance(value, int) else \
                (FLOAT, False) if isinstance(value, float) else None
        if isinstance(node, ast.Name):
            return self.env.get(node.id)
        if isinstance(node, ast.BinOp):
            return self._binary(node)
        if isinstance(node, ast.UnaryOp):
            return (BOOL, False) if isinstance(node.op, ast.Not) else self.of(node.operand)
        if isinstance(node, ast.Compare):
            parts = [self.of(x) for x in (node.left, *node.comparators)]
            return BOOL, any(p is not None and p[1] for p in parts)
        if isinstance(node, ast.IfExp):
            return self.of(node.body)
        if isinstance(node, ast.Call):
            return self._call(node)
        return None

    def _binary(self, node: ast.BinOp) -> Kind | None:
        left, right = self.of(node.left), self.of(node.right)
        if left is None or right is None:  # a float on one side: most likely a float
            known = left or right
            return known if known is not None and known[0] == FLOAT else None
        tensor = left[1] or right[1]
        kinds = {left[0], right[0]}
        ptr = next((k for k in kinds if k.startswith("ptr:")), None)
        if ptr is not None:
            return (ptr, tensor) if isinstance(node.op, ast.Add | ast.Sub) else None
        if isinstance(node.op, ast.Div) or FLOAT in kinds:
            return FLOAT, tensor
        return (INT, tensor) if kinds <= {INT, BOOL} else None

    def _call(self, call: ast.Call) -> Kind | None:
        name = _func_name(call)
        first = self.of(call.args[0]) if call.args else None
        dtype = next((kw.value for kw in call.keywords if kw.arg == "dtype"), None)
        if name == "arange":
            return INT, True
        if name in ("program_id", "num_programs"):
            return INT, False
        if name == "load" and first is not None and first[0].startswith("ptr:"):
            return first[0][4:], first[1]
        if name in ("zeros", "full", "to", "cast"):
            if dtype is None and call.args:
                dtype = call.args[-1]
            elem = _elem(ast.unparse(dtype)) if dtype is not None else None
            tensor = name in ("zeros", "full") or (first is not None and first[1]) or \
                (isinstance(call.func, ast.Attribute) and self._tensor(call.func.value))
            return (elem, bool(tensor)) if elem else None
        if name in ("zeros_like", "full_like"):
            return first
        if name in _FLOAT_FUNCS:
            return (FLOAT, first[1]) if first is not None else None
        if name == "where" and len(call.args) == 3:
            return self.of(call.args[1])
        if name in _SAME_FUNCS:
            return first
        if name in _REDUCTIONS and first is not None:
            return (INT if name.startswith("arg") else first[0]), False
        return None

    def _tensor(self, node: ast.expr) -> bool:
        found = self.of(node)
        return found is not None and found[1]


def _statements(body: list[ast.stmt]) -> list[ast.stmt]:
    out: list[ast.stmt] = []
    for st in body:
        out.append(st)
        for field in ("body", "orelse", "finalbody"):
            inner = getattr(st, field, None)
            if isinstance(inner, list) and inner and isinstance(inner[0], ast.stmt):
                out.extend(_statements(inner))
    return out


def parents(fn: ast.FunctionDef) -> dict[int, ast.AST]:
    return {id(child): node for node in ast.walk(fn) for child in ast.iter_child_nodes(node)}


def replacements(kinds: Kinds, node: ast.expr, parents: dict[int, ast.AST], zeros_like: bool = True) -> list[str]:
    """The constants to try in place of `node` (an expression of the kernel `kinds` was made
    for; `parents` from `parents(kernel)`), likeliest first. zeros_like: the source imports
    triton.language as tl."""
    if isinstance(node, ast.Constant | ast.Attribute | ast.Starred | ast.Slice) or \
            not isinstance(getattr(node, "ctx", ast.Load()), ast.Load):
        return []
    parent = parents.get(id(node))
    if isinstance(parent, ast.Call) and (parent.func is node or _func_name(parent) in _SHAPED):
        return []  # a function, or a shape, a range, a dtype
    if isinstance(parent, ast.keyword) and parent.arg in ("dtype", "axis", "mask", "other", "eviction_policy"):
        return []
    kind = kinds.of(node)
    if kind is None or kind[0] not in (FLOAT, INT):
        return []
    out = ["0.0" if kind[0] == FLOAT else "0"]
    if kind[1] and zeros_like:
        like = next((n.id for n in ast.walk(node) if isinstance(n, ast.Name) and n is not node
                     and kinds.env.get(n.id) == kind), None)
        if like is not None:
            out.append(f"tl.zeros_like({like})")
    return out
