"""Read the Triton kernels out of an Inductor output code module (`output_code.py`), never running it.

Inductor's wrapper module binds each kernel with `name = async_compile.triton('fn', '''source''',
device_str=...)`; the source carries the kernel's `@triton_heuristics.<kind>(...)` decorator, whose
keyword arguments (size_hints, triton_meta, inductor_meta, configs, num_warps, ...) are literals read
here with a restricted evaluator (`DeviceProperties(...)` becomes a dict, `set()` a list, anything
else that is not a literal its source text). The module's `call()` launches them with
`name.run(arg, ..., stream=...)`; its arguments are resolved against the buffers the wrapper
allocates (`empty_strided_cuda`, `reinterpret_tensor`, reuse) and the inputs its own benchmark
harness makes (`get_args()`: `rand_strided(shape, stride, device=..., dtype=...)`). With
TORCHINDUCTOR_BENCHMARK_KERNEL=1 each kernel's source has a harness of its own, preferred.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from typing import Any

from tritonbisect.core import pyast
from tritonbisect.core.errors import InputError

MARKER = "async_compile.triton("
_ALLOC_CALLS = {"empty_strided", "empty_strided_cuda", "empty_strided_xpu", "empty_strided_cpu", "empty_strided_mtia",
                "empty_strided_cpu_pinned", "empty_strided_p2p"}


@dataclass(frozen=True)
class Tensor:
    """A tensor argument: a view (shape, stride, offset in elements) of one buffer."""

    buffer: str
    dtype: str  # "float32", …
    shape: tuple[int, ...]
    stride: tuple[int, ...]
    offset: int = 0


@dataclass(frozen=True)
class Unknown:
    why: str


Value = Tensor | int | float | bool | Unknown


@dataclass
class CallSite:
    kernel: str
    line: int
    args: list[Value]
    origin: str  # "module call()" | "kernel harness"


@dataclass
class InductorKernel:
    name: str  # Inductor's name for it: the variable the module binds (inductor_meta kernel_name)
    function: str  # the @triton.jit function in its source
    source: str
    line: int  # line of the async_compile.triton call in the module
    heuristic: str  # the triton_heuristics decorator: pointwise, reduction, template, user_autotune, …
    decorator: dict[str, Any]
    params: list[str]
    def_line: int  # line of the decorated function in `source` (its first decorator)
    end_line: int
    device_str: str | None = None
    broken: str | None = None  # why the source cannot be used (it does not parse)

    @property
    def triton_meta(self) -> dict[str, Any]:
        meta = self.decorator.get("triton_meta")
        return meta if isinstance(meta, dict) else {}

    @property
    def inductor_meta(self) -> dict[str, Any]:
        meta = self.decorator.get("inductor_meta")
        return meta if isinstance(meta, dict) else {}

    @property
    def signature(self) -> dict[str, str]:
        sig = self.triton_meta.get("signature")
        return {str(k): str(v) for k, v in sig.items()} if isinstance(sig, dict) else {}

    @property
    def constants(self) -> dict[str, Any]:
        consts = self.triton_meta.get("constants")
        return {str(k): v for k, v in consts.items()} if isinstance(consts, dict) else {}

    def tuned_params(self) -> list[str]:
        """Constexpr parameters the autotuner sets (XBLOCK, R0_BLOCK, a user kernel's BLOCK):
        typed constexpr and not among triton_meta's constants."""
        sig = self.signature
        return [p for p in self.params if sig.get(p) == "constexpr" and p not in self.constants]


@dataclass
class InductorModule:
    path: str
    kernels: list[InductorKernel]
    calls: list[CallSite]
    notes: list[str] = field(default_factory=list)

    def kernel(self, name: str) -> InductorKernel | None:
        return next((k for k in self.kernels if k.name == name), None)


def looks_like_output_code(text: str) -> bool:
    return MARKER in text and ("triton_heuristics" in text or "import triton" in text)


# --- restricted literal evaluation ------------------------------------------------------


def literal(node: ast.AST) -> Any:
    """A literal's value: constants, containers, negative numbers, `set()`, `X(...)` calls as a
    dict of their keywords (`__call__` names the callee), dotted names as their text."""
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, (ast.List, ast.Tuple, ast.Set)):
        return [literal(e) for e in node.elts]
    if isinstance(node, ast.Dict):
        out = {}
        for k, v in zip(node.keys, node.values, strict=True):
            if k is None:
                continue
            key = literal(k)
            out[repr(tuple(key)) if isinstance(key, list) else key] = literal(v)
        return out
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub) and isinstance(node.operand, ast.Constant):
        value = node.operand.value
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return -value
    if isinstance(node, ast.Call):
        callee = ast.unparse(node.func)
        if callee == "set" and not node.args and not node.keywords:
            return []
        out = {"__call__": callee}
        out.update({k.arg: literal(k.value) for k in node.keywords if k.arg})
        if node.args:
            out["__args__"] = [literal(a) for a in node.args]
        return out
    return ast.unparse(node)


def _dtype(node: ast.AST) -> str | None:
    text = ast.unparse(node)
    if text.startswith("torch."):
        return text[len("torch."):]
    return None


def _int_tuple(node: ast.AST, env: dict[str, Value]) -> tuple[int, ...] | None:
    if not isinstance(node, (ast.Tuple, ast.List)):
        return None
    out = []
    for e in node.elts:
        v = _eval(e, env)
        if not isinstance(v, int) or isinstance(v, bool):
            return None
        out.append(v)
    return tuple(out)


_BINOPS = {ast.Add: lambda a, b: a + b, ast.Sub: lambda a, b: a - b, ast.Mult: lambda a, b: a * b,
           ast.FloorDiv: lambda a, b: a // b if b else None, ast.Mod: lambda a, b: a % b if b else None}


def _eval(node: ast.AST, env: dict[str, Value]) -> Value:
    """A run argument or an allocation operand, against what the wrapper bound so far."""
    if isinstance(node, ast.Constant) and isinstance(node.value, (int, float, bool)):
        return node.value
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        inner = _eval(node.operand, env)
        return -inner if isinstance(inner, (int, float)) and not isinstance(inner, bool) else Unknown(ast.unparse(node))
    if isinstance(node, ast.Name):
        return env.get(node.id, Unknown(f"{node.id} is not bound to a value the reader can follow"))
    if isinstance(node, ast.BinOp) and type(node.op) in _BINOPS:
        a, b = _eval(node.left, env), _eval(node.right, env)
        if isinstance(a, int) and isinstance(b, int) and not isinstance(a, bool) and not isinstance(b, bool):
            result = _BINOPS[type(node.op)](a, b)
            if result is not None:
                return result
        return Unknown(ast.unparse(node))
    if isinstance(node, ast.Call):
        return _eval_call(node, env)
    return Unknown(ast.unparse(node)[:80])


def _eval_call(node: ast.Call, env: dict[str, Value]) -> Value:
    callee = ast.unparse(node.func).rsplit(".", 1)[-1]
    kwargs = {k.arg: k.value for k in node.keywords if k.arg}
    if callee == "reinterpret_tensor" and len(node.args) >= 4:
        base = _eval(node.args[0], env)
        shape, stride = _int_tuple(node.args[1], env), _int_tuple(node.args[2], env)
        offset = _eval(node.args[3], env)
        if isinstance(base, Tensor) and shape is not None and stride is not None and isinstance(offset, int):
            return Tensor(base.buffer, base.dtype, shape, stride, base.offset + offset)
        return Unknown(ast.unparse(node)[:80])
    if callee in _ALLOC_CALLS or callee == "rand_strided":
        shape = _int_tuple(node.args[0], env) if node.args else None
        stride = _int_tuple(node.args[1], env) if len(node.args) > 1 else None
        dtype_node = kwargs.get("dtype") or (node.args[2] if len(node.args) > 2 else None)
        dtype = _dtype(dtype_node) if dtype_node is not None else ("float32" if callee == "rand_strided" else None)
        if shape is None or stride is None or dtype is None:
            return Unknown(ast.unparse(node)[:80])
        return Tensor("", dtype, shape, stride)
    return Unknown(ast.unparse(node)[:80])


# --- the kernels ------------------------------------------------------------------------


def _kernel_from(assign: ast.Assign, call: ast.Call, module_path: str) -> InductorKernel | None:
    if len(call.args) < 2 or not isinstance(call.args[1], ast.Constant) or not isinstance(call.args[1].value, str):
        return None
    target = assign.targets[0]
    if not isinstance(target, ast.Name):
        return None
    source = call.args[1].value
    fn_name = call.args[0].value if isinstance(call.args[0], ast.Constant) else None
    try:
        tree = pyast.parse(source)
    except SyntaxError as exc:
        return InductorKernel(name=target.id, function=str(fn_name or target.id), source=source, line=assign.lineno,
                              heuristic="", decorator={}, params=[], def_line=0, end_line=0,
                              broken=f"its source does not parse ({exc.msg}, line {exc.lineno} of the kernel)")
    funcs = [n for n in tree.body if isinstance(n, ast.FunctionDef) and any(
        "jit" in ast.unparse(d) for d in n.decorator_list)]
    node = next((n for n in funcs if n.name == fn_name), funcs[-1] if funcs else None)
    if node is None:
        return None
    heuristic, decorator = "", {}
    for dec in node.decorator_list:
        text = ast.unparse(dec.func if isinstance(dec, ast.Call) else dec)
        if text.startswith("triton_heuristics."):
            heuristic = text.split(".", 1)[1]
            if isinstance(dec, ast.Call):
                decorator = {k.arg: literal(k.value) for k in dec.keywords if k.arg}
    params = [a.arg for a in [*node.args.posonlyargs, *node.args.args, *node.args.kwonlyargs]]
    device = next((k.value.value for k in call.keywords
                   if k.arg == "device_str" and isinstance(k.value, ast.Constant)), None)
    first = min([node.lineno, *(d.lineno for d in node.decorator_list)])
    return InductorKernel(name=target.id, function=node.name, source=source, line=assign.lineno,
                          heuristic=heuristic, decorator=decorator, params=params, def_line=first,
                          end_line=node.end_lineno or node.lineno, device_str=str(device) if device else None)


def _is_triton_call(node: ast.AST) -> bool:
    return (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "triton"
            and ast.unparse(node.func.value) == "async_compile")


def _flatten(body: list[ast.stmt]) -> list[ast.stmt]:
    """Statements in execution order, `with`/`if`/`try` bodies inlined (the wrapper's own blocks)."""
    out: list[ast.stmt] = []
    for stmt in body:
        if isinstance(stmt, (ast.With, ast.If)):
            out.append(stmt)
            out.extend(_flatten(stmt.body))
            if isinstance(stmt, ast.If):
                out.extend(_flatten(stmt.orelse))
        elif isinstance(stmt, ast.Try):
            out.extend(_flatten(stmt.body))
        else:
            out.append(stmt)
    return out


def _harness_inputs(func: ast.FunctionDef) -> list[Value] | None:
    """The values `get_args()` returns (rand_strided tensors, ints), each tensor its own buffer."""
    env: dict[str, Value] = {}
    for stmt in _flatten(func.body):
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
            value = _eval(stmt.value, env)
            if isinstance(value, Tensor):
                value = Tensor(f"input {stmt.targets[0].id}", value.dtype, value.shape, value.stride)
            env[stmt.targets[0].id] = value
        elif isinstance(stmt, ast.Return) and isinstance(stmt.value, (ast.Tuple, ast.List)):
            return [_eval(e, env) for e in stmt.value.elts]
    return None


def _run_calls(func: ast.FunctionDef, env: dict[str, Value], kernels: set[str], origin: str,
               star_args: list[Value] | None = None) -> list[CallSite]:
    """The kernels' `.run(...)` calls in `func`, with their arguments as the wrapper bound them."""
    out: list[CallSite] = []
    for stmt in _flatten(func.body):
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1:
            target = stmt.targets[0]
            if isinstance(target, ast.Name):
                value = _eval(stmt.value, env)
                if isinstance(value, Tensor) and not value.buffer:
                    value = Tensor(target.id, value.dtype, value.shape, value.stride)
                env[target.id] = value
            elif isinstance(target, (ast.Tuple, ast.List)) and ast.unparse(stmt.value) == "args":
                for i, elt in enumerate(target.elts):
                    if isinstance(elt, ast.Name):
                        env[elt.id] = env.get(f"__input_{i}", Unknown(f"input {i} of call() has no harness value"))
        elif isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call):
            call = stmt.value
            if ast.unparse(call.func).endswith("assert_size_stride") and len(call.args) >= 3:
                name = ast.unparse(call.args[0])
                shape, stride = _int_tuple(call.args[1], env), _int_tuple(call.args[2], env)
                current = env.get(name)
                if isinstance(current, Unknown) and shape is not None and stride is not None:
                    env[name] = Tensor(f"input {name}", "", shape, stride)
                continue
            if not (isinstance(call.func, ast.Attribute) and call.func.attr == "run"
                    and isinstance(call.func.value, ast.Name) and call.func.value.id in kernels):
                continue
            args: list[Value] = []
            for a in call.args:
                if isinstance(a, ast.Starred):
                    args.extend(star_args if star_args is not None else [Unknown("*args")])
                else:
                    args.append(_eval(a, env))
            out.append(CallSite(call.func.value.id, stmt.lineno, args, origin))
    return out


def _functions(tree: ast.Module) -> dict[str, ast.FunctionDef]:
    found: dict[str, ast.FunctionDef] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef) and node.name not in found:
            found[node.name] = node
    return found


def read_output_code(text: str, path: str) -> InductorModule:
    """The kernels of an Inductor output code module and their launches; InputError when it
    does not parse or holds no Triton kernel."""
    try:
        tree = pyast.parse(text)
    except SyntaxError as exc:
        raise InputError(f"{path}: not Python ({exc.msg}, line {exc.lineno}); expected Inductor's output code") from None
    kernels: list[InductorKernel] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and _is_triton_call(node.value):
            assert isinstance(node.value, ast.Call)
            kernel = _kernel_from(node, node.value, path)
            if kernel is not None:
                kernels.append(kernel)
    if not kernels:
        raise InputError(f"{path}: no Triton kernel (async_compile.triton(...)) in this output code")
    kernels.sort(key=lambda k: k.line)
    names = {k.name for k in kernels}
    module = InductorModule(path=path, kernels=kernels, calls=[])
    # each kernel's own harness (TORCHINDUCTOR_BENCHMARK_KERNEL=1) gives its exact arguments
    harnessed: set[str] = set()
    for kernel in kernels:
        if kernel.broken:
            continue
        ktree = pyast.parse(kernel.source)
        funcs = _functions(ktree)
        if "get_args" in funcs and "call" in funcs:
            inputs = _harness_inputs(funcs["get_args"])
            if inputs is not None:
                sites = _run_calls(funcs["call"], {}, {kernel.function, kernel.name}, "kernel harness", inputs)
                for site in sites:
                    site.kernel = kernel.name
                    site.line = kernel.line
                module.calls.extend(sites)
                harnessed.add(kernel.name)
    funcs = _functions(tree)
    wrapper = funcs.get("call")
    if wrapper is None:
        module.notes.append("no call() in this module: the kernels' launches are unknown")
        return module
    env: dict[str, Value] = {}
    inputs = _harness_inputs(funcs["get_args"]) if "get_args" in funcs else None
    if inputs is None and "benchmark_compiled_module" in funcs:  # older Inductor: inputs made there
        inputs = _harness_inputs(funcs["benchmark_compiled_module"])
    if inputs is None:
        module.notes.append("no get_args() harness: input dtypes come from the kernels' signatures")
    for i, value in enumerate(inputs or []):
        env[f"__input_{i}"] = value
    for site in _run_calls(wrapper, env, names, "module call()"):
        if site.kernel not in harnessed:
            module.calls.append(site)
    module.calls.sort(key=lambda c: (c.origin != "module call()", c.line))
    return module
