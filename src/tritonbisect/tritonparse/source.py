"""Cut a kernel and everything it needs out of the Python source a trace captured.

tritonparse records either the whole file of the kernel (TRITON_FULL_PYTHON_SOURCE=1) or only
the kernel function. From it we keep the kernel, the `@triton.jit` helpers it calls (and the
helpers they call), the module-level constants and the imports those use — and nothing else,
so the oracle never imports the user's own modules. The autotuner and heuristics decorators
are dropped: the oracle pins the configuration the recorded launch used.
"""

from __future__ import annotations

import ast
import builtins
import symtable
import sys
import textwrap
from dataclasses import dataclass, field

from tritonbisect.errors import InputError

_ALWAYS_AVAILABLE = {"triton", "tl"}  # the prelude of the embedded source binds these
_ALLOWED_IMPORT_ROOTS = {"torch", "triton", "__future__"}
_DROPPED_DECORATORS = ("autotune", "heuristics")
_DROPPED_JIT_KEYWORDS = {"launch_metadata", "repr"}
PRELUDE = "import triton\nimport triton.language as tl\n"


@dataclass
class KernelSource:
    text: str  # the module source embedded in the oracle
    kernel: str
    params: list[str]
    constexpr_params: list[str]
    helpers: list[str] = field(default_factory=list)  # other functions embedded
    autotuned: bool = False
    dropped_decorators: list[str] = field(default_factory=list)
    full_file: bool = False
    origin: str = ""


def _stdlib_names() -> set[str]:
    names = getattr(sys, "stdlib_module_names", None)
    if names:
        return set(names)
    return {"math", "os", "sys", "functools", "itertools", "typing", "dataclasses", "enum", "operator"}


def _dotted(node: ast.AST) -> str:
    try:
        return ast.unparse(node)
    except Exception:  # pragma: no cover - unparse handles all expressions
        return ""


def _decorator_name(dec: ast.expr) -> str:
    return _dotted(dec.func if isinstance(dec, ast.Call) else dec)


def _names_loaded(node: ast.AST) -> set[str]:
    """Names read anywhere under node (module-scope expressions: decorators, defaults…)."""
    out: set[str] = set()
    for sub in ast.walk(node):
        if isinstance(sub, ast.Name) and isinstance(sub.ctx, ast.Load):
            out.add(sub.id)
    return out


def _bound_names(stmt: ast.stmt) -> set[str]:
    """Names a top-level statement binds in the module namespace."""
    out: set[str] = set()
    if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        out.add(stmt.name)
    elif isinstance(stmt, ast.Import):
        for alias in stmt.names:
            out.add(alias.asname or alias.name.split(".")[0])
    elif isinstance(stmt, ast.ImportFrom):
        for alias in stmt.names:
            if alias.name != "*":
                out.add(alias.asname or alias.name)
    elif isinstance(stmt, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
        targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
        for target in targets:
            for sub in ast.walk(target):
                if isinstance(sub, ast.Name):
                    out.add(sub.id)
    elif isinstance(stmt, (ast.If, ast.Try, ast.With)) or type(stmt).__name__ == "TryStar":
        for child in ast.iter_child_nodes(stmt):
            if isinstance(child, ast.stmt):
                out |= _bound_names(child)
            elif isinstance(child, ast.ExceptHandler):
                for inner in child.body:
                    out |= _bound_names(inner)
    return out


def _imports_in(stmt: ast.stmt) -> list[ast.Import | ast.ImportFrom]:
    return [sub for sub in ast.walk(stmt) if isinstance(sub, (ast.Import, ast.ImportFrom))]


def _function_globals(table: symtable.SymbolTable) -> set[str]:
    """Global names a function (and its lambdas/comprehensions) reads."""
    out: set[str] = set()
    for sym in table.get_symbols():
        if sym.is_global() or (sym.is_free() and not sym.is_local()):
            out.add(sym.get_name())
    for child in table.get_children():
        out |= _function_globals(child)
    return out


def _find_table(table: symtable.SymbolTable, name: str, lineno: int) -> symtable.SymbolTable | None:
    for child in table.get_children():
        if child.get_name() == name and child.get_lineno() == lineno:
            return child
        found = _find_table(child, name, lineno)
        if found is not None:
            return found
    return None


def _first_line(node: ast.stmt) -> int:
    decorators = getattr(node, "decorator_list", None) or []
    return min([node.lineno, *(d.lineno for d in decorators)])


class _Module:
    def __init__(self, code: str, origin: str) -> None:
        self.code = code
        self.origin = origin
        try:
            self.tree = ast.parse(code)
            self.symbols = symtable.symtable(code, origin or "<kernel>", "exec")
        except SyntaxError as exc:
            raise InputError(f"the kernel source captured in the trace does not parse ({origin}: {exc})") from None
        self.lines = code.splitlines(keepends=True)
        self.binders: dict[str, list[int]] = {}
        for i, stmt in enumerate(self.tree.body):
            for name in _bound_names(stmt):
                self.binders.setdefault(name, []).append(i)

    def segment(self, node: ast.stmt) -> str:
        return "".join(self.lines[_first_line(node) - 1 : node.end_lineno])

    def deps_of_function(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> set[str]:
        names: set[str] = set()
        table = _find_table(self.symbols, node.name, node.lineno)
        if table is not None:
            names |= _function_globals(table)
        else:  # pragma: no cover - symtable always has the function
            names |= _names_loaded(node)
        for dec in node.decorator_list:
            names |= _names_loaded(dec)
        all_args = [*node.args.posonlyargs, *node.args.args, *node.args.kwonlyargs]
        for arg in all_args:
            if arg.annotation is not None:
                names |= _names_loaded(arg.annotation)
        for default in [*node.args.defaults, *node.args.kw_defaults]:
            if default is not None:
                names |= _names_loaded(default)
        return names

    def deps_of_statement(self, stmt: ast.stmt) -> set[str]:
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
            return self.deps_of_function(stmt)
        if isinstance(stmt, (ast.Import, ast.ImportFrom)):
            return set()
        names = _names_loaded(stmt)
        return names - _bound_names(stmt)


def _find_kernel(module: _Module, kernel: str, start_line: int | None) -> ast.FunctionDef:
    candidates = [
        node
        for node in ast.walk(module.tree)
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == kernel
    ]
    if not candidates:
        raise InputError(f"the source captured in the trace ({module.origin}) has no function '{kernel}'")
    if start_line is not None:
        for node in candidates:
            if start_line in (node.lineno, *(d.lineno for d in node.decorator_list)):
                return node
    return candidates[-1]


def _rewrite_decorators(node: ast.FunctionDef) -> tuple[list[str], list[str], bool]:
    """(decorator source lines to keep, dropped decorator names, autotuned?)"""
    kept: list[str] = []
    dropped: list[str] = []
    autotuned = False
    for dec in node.decorator_list:
        name = _decorator_name(dec)
        short = name.rsplit(".", 1)[-1]
        if short in _DROPPED_DECORATORS:
            dropped.append(name)
            autotuned = autotuned or short == "autotune"
            continue
        if short == "jit" and isinstance(dec, ast.Call):
            dec = ast.Call(
                func=dec.func,
                args=dec.args,
                keywords=[k for k in dec.keywords if k.arg not in _DROPPED_JIT_KEYWORDS],
            )
            ast.fix_missing_locations(dec)
        kept.append("@" + _dotted(dec))
    return kept, dropped, autotuned


def extract_kernel_source(python_source: dict | None, kernel: str) -> KernelSource:
    """The standalone module source of `kernel` from a compilation's `python_source`."""
    if not python_source or not isinstance(python_source.get("code"), str):
        raise InputError(
            f"the trace holds no Python source for kernel '{kernel}' (was it compiled from IR?); "
            "the oracle needs the kernel's source"
        )
    full_file = "function_start_line" in python_source
    code = python_source["code"]
    file_path = str(python_source.get("file_path") or "<unknown file>")
    if full_file:
        start = python_source.get("function_start_line")
        end = python_source.get("function_end_line")
        origin = f"{file_path}:{start}-{end} (full file captured)"
    else:
        start = python_source.get("start_line")
        end = python_source.get("end_line")
        origin = f"{file_path}:{start}-{end} (function only)"
        code = textwrap.dedent(code)
        start = None
    module = _Module(code, file_path)
    node = _find_kernel(module, kernel, start if full_file else None)

    builtin_names = set(dir(builtins))
    included: set[int] = set()
    unresolved: set[str] = set()
    external: dict[str, str] = {}
    stdlib = _stdlib_names()
    kernel_top = next((i for i, s in enumerate(module.tree.body) if s is node), None)

    work = sorted(module.deps_of_function(node))
    seen: set[str] = set()
    while work:
        name = work.pop()
        if name in seen:
            continue
        seen.add(name)
        binders = [i for i in module.binders.get(name, []) if i != kernel_top]
        if not binders:
            if name not in builtin_names and name not in _ALWAYS_AVAILABLE:
                unresolved.add(name)
            continue
        for i in binders:
            if i in included:
                continue
            stmt = module.tree.body[i]
            for imp in _imports_in(stmt):
                if isinstance(imp, ast.ImportFrom) and imp.level:
                    external[name] = "." * imp.level + (imp.module or "")
                    continue
                roots = [imp.module.split(".")[0]] if isinstance(imp, ast.ImportFrom) and imp.module else [
                    a.name.split(".")[0] for a in getattr(imp, "names", [])
                ]
                for root in roots:
                    if root not in _ALLOWED_IMPORT_ROOTS and root not in stdlib:
                        external[name] = root
            included.add(i)
            work.extend(sorted(module.deps_of_statement(stmt) - seen))
    if external:
        detail = ", ".join(f"'{n}' from module '{m}'" for n, m in sorted(external.items()))
        raise InputError(
            f"kernel '{kernel}' needs {detail}; the oracle imports only the standard library, "
            "torch and triton"
        )
    if unresolved:
        hint = (
            " (the trace captured only the kernel function: capture with TRITON_FULL_PYTHON_SOURCE=1 "
            "so its helpers are recorded too)"
            if not full_file
            else ""
        )
        raise InputError(
            f"kernel '{kernel}' uses {', '.join(sorted(unresolved))}, which the source captured in "
            f"the trace does not define{hint}"
        )

    kept_decorators, dropped, autotuned = _rewrite_decorators(node)
    if not any(d.rsplit(".", 1)[-1].split("(")[0] == "jit" for d in kept_decorators):
        kept_decorators.insert(0, "@triton.jit")
    kernel_lines = module.lines[node.lineno - 1 : node.end_lineno]
    kernel_text = textwrap.dedent("".join(kernel_lines))
    kernel_text = "".join(d + "\n" for d in kept_decorators) + kernel_text

    future: list[str] = []
    parts: list[str] = []
    helpers: list[str] = []
    for i in sorted(included):
        stmt = module.tree.body[i]
        text = module.segment(stmt)
        if isinstance(stmt, ast.ImportFrom) and stmt.module == "__future__":
            future.append(text)
            continue
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            helpers.append(stmt.name)
            parts.append("\n\n" + text)
        else:
            parts.append(text)
    included_lines = {line.strip() for part in parts for line in part.splitlines()}
    prelude = "".join(line + "\n" for line in PRELUDE.splitlines() if line.strip() not in included_lines)
    body = "".join(future) + prelude + "".join(parts) + "\n\n" + kernel_text
    if not body.endswith("\n"):
        body += "\n"

    all_args = [*node.args.posonlyargs, *node.args.args, *node.args.kwonlyargs]
    params = [a.arg for a in all_args]
    constexpr = [a.arg for a in all_args if a.annotation is not None and "constexpr" in _dotted(a.annotation)]
    # make sure the result is valid Python
    try:
        ast.parse(body)
    except SyntaxError as exc:  # pragma: no cover - the parts parsed before
        raise InputError(f"could not cut kernel '{kernel}' out of its source: {exc}") from None
    return KernelSource(
        text=body,
        kernel=kernel,
        params=params,
        constexpr_params=constexpr,
        helpers=helpers,
        autotuned=autotuned,
        dropped_decorators=dropped,
        full_file=full_file,
        origin=origin,
    )
