"""Planted bugs, to measure whether an oracle tells a broken kernel from a good one.

Each mutation edits the kernel function of an oracle's embedded source the way a miscompile
or a slip would change its behaviour:

  op_swap      the arithmetic that produces the stored value: + <-> -, * <-> /, …
  mask_grow    the first `a < b` mask becomes `a <= b` (one element too many)
  mask_shrink  the first `a < b` mask becomes `a < b - 1` (one element too few)
  store_dtype  the stored value is rounded through the wrong dtype first
  drop_other   the first `tl.load(..., other=X)` loses its `other=`

`mutate` returns None when a mutation does not apply to a kernel (no `other=` to drop…).
"""

from __future__ import annotations

import ast
from collections.abc import Mapping

from tritonbisect.core import pyast

MUTATIONS = ("op_swap", "mask_grow", "mask_shrink", "store_dtype", "drop_other")
_SWAP = {ast.Add: "-", ast.Sub: "+", ast.Mult: "/", ast.Div: "*", ast.FloorDiv: "*", ast.Mod: "*"}
_SYMBOL = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/", ast.FloorDiv: "//", ast.Mod: "%"}
_WRONG_DTYPE = {
    "float64": "tl.float16", "float32": "tl.float16", "float16": "tl.bfloat16", "bfloat16": "tl.float16",
}  # fmt: skip


class _Text:
    """Edit source text at AST (line, col) positions (col offsets are UTF-8 bytes)."""

    def __init__(self, source: str) -> None:
        self.source = source
        self.starts = [0]
        for line in source.splitlines(keepends=True):
            self.starts.append(self.starts[-1] + len(line))
        self.lines = source.splitlines(keepends=True)

    def offset(self, line: int, col: int) -> int:
        text = self.lines[line - 1].encode("utf-8")[:col].decode("utf-8", errors="ignore")
        return self.starts[line - 1] + len(text)

    def span(self, node: ast.expr) -> tuple[int, int]:
        assert node.end_lineno is not None and node.end_col_offset is not None  # set by ast.parse
        return (self.offset(node.lineno, node.col_offset), self.offset(node.end_lineno, node.end_col_offset))

    def replace(self, start: int, end: int, new: str) -> str:
        return self.source[:start] + new + self.source[end:]


def _kernel_node(tree: ast.Module, kernel: str) -> ast.FunctionDef | None:
    found = None
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef) and node.name == kernel:
            found = node
    return found


def _in_order(nodes):
    return sorted(nodes, key=lambda n: (n.lineno, n.col_offset))


def _calls(fn: ast.FunctionDef, attr: str) -> list[ast.Call]:
    out = []
    for node in ast.walk(fn):
        if isinstance(node, ast.Call):
            f = node.func
            name = f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else None
            if name == attr:
                out.append(node)
    return _in_order(out)


def _store_value(call: ast.Call) -> ast.expr | None:
    if len(call.args) >= 2:
        return call.args[1]
    for kw in call.keywords:
        if kw.arg == "value":
            return kw.value
    return None


def _base_name(node: ast.AST) -> str | None:
    while True:
        if isinstance(node, ast.Name):
            return node.id
        if isinstance(node, ast.Attribute):
            node = node.value
        elif isinstance(node, ast.Call):
            node = node.func
        elif isinstance(node, ast.Subscript):
            node = node.value
        elif isinstance(node, ast.BinOp):  # pointer arithmetic: the base pointer is leftmost
            node = node.left
        else:
            return None


def _first_binop(node: ast.AST) -> ast.BinOp | None:
    ops = [n for n in ast.walk(node) if isinstance(n, ast.BinOp) and type(n.op) in _SWAP]
    return _in_order(ops)[0] if ops else None


def _op_swap(text: _Text, fn: ast.FunctionDef, dtypes: Mapping[str, str]) -> str | None:
    stores = _calls(fn, "store")
    if not stores:
        return None
    value = _store_value(stores[0])
    if value is None:
        return None
    binop = _first_binop(value)
    if binop is None:
        name = _base_name(value)
        assigns = [
            n for n in ast.walk(fn)
            if isinstance(n, (ast.Assign, ast.AugAssign)) and n.lineno < stores[0].lineno
            and any(isinstance(t, ast.Name) and t.id == name
                    for t in (n.targets if isinstance(n, ast.Assign) else [n.target]))
        ]  # fmt: skip
        if not assigns:
            return None
        last = _in_order(assigns)[-1]
        if isinstance(last, ast.AugAssign) and type(last.op) in _SWAP:
            start = text.span(last.target)[1]
            end = text.span(last.value)[0]
            gap = text.source[start:end]
            symbol = _SYMBOL[type(last.op)] + "="
            i = gap.find(symbol)
            if i < 0:
                return None
            return text.replace(start + i, start + i + len(symbol), _SWAP[type(last.op)] + "=")
        binop = _first_binop(last.value)
        if binop is None:
            return None
    start = text.span(binop.left)[1]
    end = text.span(binop.right)[0]
    gap = text.source[start:end]
    symbol = _SYMBOL[type(binop.op)]
    i = gap.find(symbol)
    if i < 0:
        return None
    return text.replace(start + i, start + i + len(symbol), _SWAP[type(binop.op)])


def _first_lt(fn: ast.FunctionDef) -> ast.Compare | None:
    compares = [
        n for n in ast.walk(fn)
        if isinstance(n, ast.Compare) and len(n.ops) == 1 and isinstance(n.ops[0], ast.Lt)
    ]  # fmt: skip
    return _in_order(compares)[0] if compares else None


def _mask_grow(text: _Text, fn: ast.FunctionDef, dtypes: Mapping[str, str]) -> str | None:
    cmp = _first_lt(fn)
    if cmp is None:
        return None
    start = text.span(cmp.left)[1]
    end = text.span(cmp.comparators[0])[0]
    i = text.source[start:end].find("<")
    return None if i < 0 else text.replace(start + i, start + i + 1, "<=")


def _mask_shrink(text: _Text, fn: ast.FunctionDef, dtypes: Mapping[str, str]) -> str | None:
    cmp = _first_lt(fn)
    if cmp is None:
        return None
    start, end = text.span(cmp.comparators[0])
    return text.replace(start, end, f"({text.source[start:end]} - 1)")


def _store_dtype(text: _Text, fn: ast.FunctionDef, dtypes: Mapping[str, str]) -> str | None:
    stores = _calls(fn, "store")
    if not stores:
        return None
    call = stores[0]
    value = _store_value(call)
    pointer = call.args[0] if call.args else next((k.value for k in call.keywords if k.arg == "pointer"), None)
    if value is None or pointer is None:
        return None
    dtype = dtypes.get(_base_name(pointer) or "", "float32")
    wrong = _WRONG_DTYPE.get(dtype, "tl.int8")
    if (
        isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) and value.func.attr == "to"
        and value.args
    ):  # fmt: skip
        start, end = text.span(value.args[0])
        return text.replace(start, end, wrong)
    start, end = text.span(value)
    return text.replace(start, end, f"({text.source[start:end]}).to({wrong})")


def _drop_other(text: _Text, fn: ast.FunctionDef, dtypes: Mapping[str, str]) -> str | None:
    for call in _calls(fn, "load"):
        elements = [*call.args, *call.keywords]
        elements = _in_order([e if isinstance(e, ast.keyword) else e for e in elements])
        for i, element in enumerate(elements):
            is_other = (isinstance(element, ast.keyword) and element.arg == "other") or (
                not isinstance(element, ast.keyword) and element in call.args and call.args.index(element) == 2
            )
            if not is_other or i == 0:
                continue
            prev_end = text.span(elements[i - 1])[1]
            end = text.span(element)[1]
            return text.replace(prev_end, end, "")
    return None


_IMPLS = {
    "op_swap": _op_swap,
    "mask_grow": _mask_grow,
    "mask_shrink": _mask_shrink,
    "store_dtype": _store_dtype,
    "drop_other": _drop_other,
}


def mutate(source: str, kernel: str, mutation: str, dtypes: Mapping[str, str] | None = None) -> str | None:
    """The source with `mutation` planted in `kernel`, or None when it does not apply."""
    tree = pyast.parse(source)
    fn = _kernel_node(tree, kernel)
    if fn is None:
        raise ValueError(f"no function {kernel} in the source")
    out = _IMPLS[mutation](_Text(source), fn, dtypes or {})
    if out is None or out == source:
        return None
    pyast.parse(out)  # a mutation must still be Python
    return out


def kernel_source_of_script(script: str) -> tuple[str, ast.Assign]:
    tree = pyast.parse(script)
    for node in tree.body:
        if (
            isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)
            and node.targets[0].id == "KERNEL_SOURCE"
        ):  # fmt: skip
            return ast.literal_eval(node.value), node
    raise ValueError("not an oracle script: no KERNEL_SOURCE")


def mutate_script(script: str, kernel: str, mutation: str, dtypes: Mapping[str, str] | None = None) -> str | None:
    """An oracle script with `mutation` planted in its embedded kernel source."""
    from tritonbisect.oracles.runtime import _literal

    source, node = kernel_source_of_script(script)
    mutated = mutate(source, kernel, mutation, dtypes)
    if mutated is None:
        return None
    lines = script.splitlines(keepends=True)
    body = _literal(mutated[1:] if mutated.startswith("\n") else mutated)
    return "".join(lines[: node.lineno - 1]) + f"KERNEL_SOURCE = {body}\n" + "".join(lines[node.end_lineno :])
