"""Source-level candidates: smaller versions of the kernel and its `@triton.jit` helpers,
made through Python's AST, biggest steps first. Each is a whole new Candidate; which ones
still show the failure is for the runner to say."""

from __future__ import annotations

import ast
import copy
from collections.abc import Callable, Iterator
from typing import Any

from tritonbisect.core import pyast
from tritonbisect.reduce import source_constants
from tritonbisect.reduce.context_edit import (
    drop_arg,
    options,
    scalar_values,
    set_option,
    set_scalar,
)
from tritonbisect.reduce.oracle_io import Candidate

Edit = Callable[[ast.Module], bool]  # mutates a fresh tree; False: nothing to do


def _is_jit(node: ast.AST) -> bool:
    return isinstance(node, ast.FunctionDef) and any("jit" in ast.unparse(d) for d in node.decorator_list)


def jit_functions(tree: ast.Module) -> list[ast.FunctionDef]:
    return [n for n in tree.body if isinstance(n, ast.FunctionDef) and _is_jit(n)]


def kernel_lines(source: str) -> int:
    """Non-blank lines of the @triton.jit functions (decorators included)."""
    try:
        tree = pyast.parse(source)
    except SyntaxError:
        return 0
    lines = source.splitlines()
    count = 0
    for fn in jit_functions(tree):
        start = min([d.lineno for d in fn.decorator_list] + [fn.lineno])
        count += sum(1 for line in lines[start - 1:fn.end_lineno] if line.strip())
    return count


def tree_size(source: str) -> int:
    """Nodes of the source's syntax tree (its length when it does not parse)."""
    try:
        return sum(1 for _ in ast.walk(pyast.parse(source)))
    except SyntaxError:
        return len(source)


def _bodies(fn: ast.FunctionDef) -> Iterator[list[ast.stmt]]:
    """Every statement list inside fn, outermost first."""
    stack: list[list[ast.stmt]] = [fn.body]
    while stack:
        body = stack.pop(0)
        yield body
        for st in body:
            for field in ("body", "orelse", "finalbody"):
                inner = getattr(st, field, None)
                if isinstance(inner, list) and inner and isinstance(inner[0], ast.stmt):
                    stack.append(inner)


def _apply(source: str, edit: Edit) -> str | None:
    tree = pyast.parse(source)
    if not edit(tree):
        return None
    try:
        text = ast.unparse(ast.fix_missing_locations(tree)) + "\n"
        pyast.parse(text)
    except (SyntaxError, ValueError, RecursionError):
        return None
    return None if text == source else text


def _remove_chunk(f: int, b: int, start: int, size: int) -> Edit:
    def edit(tree: ast.Module) -> bool:
        body = list(_bodies(jit_functions(tree)[f]))[b]
        if start >= len(body):
            return False
        del body[start:start + size]
        if not body:
            body.append(ast.Pass())
        return True
    return edit


def _expr_sites(tree: ast.Module) -> list[ast.expr]:
    return [n for fn in jit_functions(tree) for n in ast.walk(fn) if isinstance(n, ast.expr)]


def _operands(node: ast.expr) -> list[ast.expr]:
    if isinstance(node, ast.BinOp):
        return [node.left, node.right]
    if isinstance(node, ast.UnaryOp):
        return [node.operand]
    if isinstance(node, ast.IfExp):
        return [node.body, node.orelse]
    if isinstance(node, ast.Call):
        return [a for a in node.args if not isinstance(a, ast.Starred)]
    return []


class _Replace(ast.NodeTransformer):
    def __init__(self, target: ast.expr, by: ast.expr) -> None:
        self.target, self.by = target, by

    def visit(self, node: ast.AST) -> Any:
        if node is self.target:
            return self.by
        return super().visit(node)


def _replace_expr(site: int, which: int) -> Edit:
    def edit(tree: ast.Module) -> bool:
        sites = _expr_sites(tree)
        if site >= len(sites):
            return False
        node = sites[site]
        ops = _operands(node)
        if which >= len(ops):
            return False
        for fn in jit_functions(tree):
            _Replace(node, ops[which]).visit(fn)
        return True
    return edit


def _replace_by(site: int, text: str) -> Edit:
    def edit(tree: ast.Module) -> bool:
        sites = _expr_sites(tree)
        if site >= len(sites):
            return False
        by = ast.parse(text, mode="eval").body
        for fn in jit_functions(tree):
            _Replace(sites[site], by).visit(fn)
        return True
    return edit


def _constants(tree: ast.Module, context: dict[str, Any]) -> dict[int, list[str]]:
    """Site index -> the constants of its type to try in its place (source_constants.py)."""
    known = source_constants.param_kinds(context)
    has_tl = any(isinstance(n, ast.Name) and n.id == "tl" for n in ast.walk(tree))
    out: dict[int, list[str]] = {}
    base = 0
    for fn in jit_functions(tree):
        kinds = source_constants.Kinds(fn, known)
        parents = source_constants.parents(fn)
        exprs = [n for n in ast.walk(fn) if isinstance(n, ast.expr)]
        for k, node in enumerate(exprs):
            found = source_constants.replacements(kinds, node, parents, zeros_like=has_tl)
            if found:
                out[base + k] = found
        base += len(exprs)
    return out


def _drop_keyword(site: int, which: int) -> Edit:
    def edit(tree: ast.Module) -> bool:
        sites = _expr_sites(tree)
        if site >= len(sites) or not isinstance(sites[site], ast.Call):
            return False
        call = sites[site]
        assert isinstance(call, ast.Call)
        if which >= len(call.keywords):
            return False
        del call.keywords[which]
        return True
    return edit


class _Substitute(ast.NodeTransformer):
    def __init__(self, values: dict[str, ast.expr]) -> None:
        self.values = values

    def visit_Name(self, node: ast.Name) -> Any:
        return copy.deepcopy(self.values[node.id]) if node.id in self.values else node


def _inline(site: int) -> Edit:
    """A call of a one-`return` helper becomes the helper's expression."""
    def edit(tree: ast.Module) -> bool:
        sites = _expr_sites(tree)
        if site >= len(sites):
            return False
        call = sites[site]
        if not isinstance(call, ast.Call) or not isinstance(call.func, ast.Name) or call.keywords:
            return False
        helpers = {fn.name: fn for fn in jit_functions(tree)}
        fn = helpers.get(call.func.id)
        if fn is None or len(fn.body) != 1 or not isinstance(fn.body[0], ast.Return) or fn.body[0].value is None:
            return False
        params = [a.arg for a in fn.args.args]
        if len(params) != len(call.args):
            return False
        body = _Substitute(dict(zip(params, call.args, strict=True))).visit(copy.deepcopy(fn.body[0].value))
        for f in jit_functions(tree):
            _Replace(call, body).visit(f)
        return True
    return edit


def _used_names(node: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)} | {
        n.attr for n in ast.walk(node) if isinstance(n, ast.Attribute)}


def _remove_top(index: int) -> Edit:
    def edit(tree: ast.Module) -> bool:
        if index >= len(tree.body):
            return False
        del tree.body[index]
        return True
    return edit


def candidates(cand: Candidate, kernel: str) -> Iterator[Candidate]:
    """Smaller candidates than `cand`, biggest steps first."""
    source, context = cand.source, cand.context
    tree = pyast.parse(source)
    fns = jit_functions(tree)
    kernel_fn = next((f for f in fns if f.name == kernel), None)
    if kernel_fn is None:
        return

    def make(edit: Edit, ctx: dict[str, Any] | None = None) -> Candidate | None:
        text = _apply(source, edit)
        return None if text is None else Candidate(text, context if ctx is None else ctx)

    # unused top-level code (helpers nobody calls, constants, imports)
    for i, node in reversed(list(enumerate(tree.body))):
        if node is kernel_fn:
            continue
        if isinstance(node, ast.FunctionDef | ast.ClassDef):
            names = {node.name}
        elif isinstance(node, ast.Import | ast.ImportFrom):
            names = {(a.asname or a.name).split(".")[0] for a in node.names}
        elif isinstance(node, ast.Assign):
            names = {t.id for t in node.targets if isinstance(t, ast.Name)}
        else:
            names = set()
        rest = set().union(*(_used_names(n) for n in tree.body if n is not node))
        if names and names & rest:
            continue
        if (c := make(_remove_top(i))) is not None:
            yield c
    # kernel parameters the body never reads
    used = set().union(*(_used_names(st) for st in kernel_fn.body)) if kernel_fn.body else set()
    for param in [a.arg for a in kernel_fn.args.args]:
        if param in used:
            continue
        ctx = drop_arg(context, param)
        if ctx is None:
            continue

        def drop(tree: ast.Module, param: str = param) -> bool:
            fn = next(f for f in jit_functions(tree) if f.name == kernel)
            fn.args.args = [a for a in fn.args.args if a.arg != param]
            return True
        if (c := make(drop, ctx)) is not None:
            yield c
    # statements: halves, quarters, ... then one at a time, last first
    for f, fn in enumerate(fns):
        for b, body in enumerate(_bodies(fn)):
            size = max(1, len(body) // 2)
            while True:
                for start in reversed(range(0, len(body), size)):
                    if (c := make(_remove_chunk(f, b, start, size))) is not None:
                        yield c
                if size == 1:
                    break
                size = max(1, size // 2)
    # expressions: helper calls inlined, an expression replaced by one of its operands or by
    # a constant of its type, keyword arguments (masks, `other=`) dropped
    sites = _expr_sites(tree)
    constants = _constants(tree, context)
    for s, expr in enumerate(sites):
        if isinstance(expr, ast.Call) and (c := make(_inline(s))) is not None:
            yield c
        for w in range(len(_operands(expr))):
            if (c := make(_replace_expr(s, w))) is not None:
                yield c
        for text in constants.get(s, []):
            if (c := make(_replace_by(s, text))) is not None:
                yield c
        if isinstance(expr, ast.Call):
            for k in range(len(expr.keywords)):
                if (c := make(_drop_keyword(s, k))) is not None:
                    yield c
    # constexpr block sizes and the launch configuration, lowered
    constexprs = {a.arg for a in kernel_fn.args.args if a.annotation is not None and "constexpr" in ast.unparse(a.annotation)}
    for name, value in scalar_values(context):
        if name in constexprs and value > 1:
            for lower in sorted({1, value // 2}):
                yield Candidate(source, set_scalar(context, name, lower))
    for key in ("num_warps", "num_stages"):
        option = options(context).get(key)
        if isinstance(option, int) and option > 1:
            yield Candidate(source, set_option(context, key, 1))
