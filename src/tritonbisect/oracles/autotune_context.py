"""What the autotuning decorators of a kernel do around its launch, read from their source.

The oracle drops `@triton.autotune`, `@triton.heuristics` and Inductor's `@triton_heuristics.*`
decorators and pins the configuration the recorded launch used, so their config lists need not
be evaluated at all (comprehensions, module globals, prune_configs_by…). What still matters is
their effect on the arguments before the launch: `reset_to_zero` zeroes tensors before every
launch, so the oracle zeroes them too. `restore_value` only undoes the benchmark runs, so the
pinned launch sees the recorded pre-state anyway. Hooks (`pre_hook`, `post_hook`, a Config's
`pre_hook`) are arbitrary code: not run, and named in one note line each. The tracer records the
arguments at the launch, after any pre_hook ran, so the recorded vector holds their effect.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field

AUTOTUNE_NAMES = {"autotune"}
HEURISTICS_NAMES = {"heuristics"}
# Inductor's runtime decorators: each is an autotuner over configs Inductor chose
INDUCTOR_MODULE = "triton_heuristics"


@dataclass
class AutotuneContext:
    reset_to_zero: list[str] = field(default_factory=list)
    restore_value: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # what the oracle does not replay

    def to_json(self) -> dict:
        return {"reset_to_zero": self.reset_to_zero, "restore_value": self.restore_value, "notes": self.notes}


def resets_before(launch: object, launches: list) -> bool:
    """Whether the autotuner zeroed `reset_to_zero` right before this launch.

    Triton's Autotuner and Inductor's CachingAutotuner reset around each benchmark run and once
    after benchmarking, before the launch with the chosen config; a launch that reuses a cached
    config (or a single-config autotuner) gets no reset.
    """
    if getattr(launch, "autotune_benchmark", False):
        return True
    index = next((i for i, other in enumerate(launches) if other is launch), None)
    if not index:  # not found, or the first launch
        return False
    return bool(getattr(launches[index - 1], "autotune_benchmark", False))


def decorator_name(dec: ast.expr) -> str:
    target = dec.func if isinstance(dec, ast.Call) else dec
    try:
        return ast.unparse(target)
    except Exception:  # pragma: no cover - unparse handles every expression
        return ""


def is_inductor_decorator(name: str) -> bool:
    return INDUCTOR_MODULE in name.split(".")[:-1]


def is_tuning_decorator(name: str) -> bool:
    """Decorators the oracle drops: autotuners and heuristics, Triton's or Inductor's."""
    short = name.rsplit(".", 1)[-1]
    return short in AUTOTUNE_NAMES or short in HEURISTICS_NAMES or is_inductor_decorator(name)


def _module_value(name: str, tree: ast.Module | None) -> ast.expr | None:
    """The expression a module-level `name = ...` assigns (the last one), if any."""
    if tree is None:
        return None
    found = None
    for stmt in tree.body:
        if isinstance(stmt, ast.Assign) and any(isinstance(t, ast.Name) and t.id == name for t in stmt.targets) or isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name) and stmt.target.id == name:
            found = stmt.value
    return found


def _names_list(node: ast.expr | None, tree: ast.Module | None, depth: int = 0) -> list[str] | None:
    """A list of argument names: a literal, a module constant, or a string; None if unknown."""
    if node is None or depth > 4:
        return None
    if isinstance(node, ast.Name):
        return _names_list(_module_value(node.id, tree), tree, depth + 1)
    if isinstance(node, ast.Constant) and node.value is None:
        return []
    try:
        value = ast.literal_eval(node)
    except (ValueError, SyntaxError, TypeError):
        return None
    if isinstance(value, str):
        return [value]
    if isinstance(value, (list, tuple, set)) and all(isinstance(v, str) for v in value):
        return list(value)
    return None


def _dict_entry(node: ast.expr, key: str) -> ast.expr | None:
    if isinstance(node, ast.Dict):
        for k, v in zip(node.keys, node.values, strict=True):
            if isinstance(k, ast.Constant) and k.value == key:
                return v
    return None


def _keyword(call: ast.Call, name: str) -> ast.expr | None:
    return next((k.value for k in call.keywords if k.arg == name), None)


def _read_names(ctx: AutotuneContext, what: str, node: ast.expr | None, tree: ast.Module | None,
                out: list[str], params: list[str]) -> None:
    if node is None:
        return
    names = _names_list(node, tree)
    if names is None:
        ctx.notes.append(f"{what}={ast.unparse(node)[:60]} could not be read from the source: not applied")
        return
    unknown = [n for n in names if n not in params]
    if unknown:
        ctx.notes.append(f"{what} names {', '.join(unknown)}, which are not parameters of the kernel: ignored")
    out.extend(n for n in names if n in params and n not in out)


def _hook(call: ast.Call, name: str) -> str | None:
    value = _keyword(call, name)
    if value is None or isinstance(value, ast.Constant) and value.value is None:
        return None
    return ast.unparse(value)[:60]


def read_autotune_context(decorators: list[ast.expr], params: list[str],
                          tree: ast.Module | None = None) -> AutotuneContext:
    """The reset/restore lists and unreplayable hooks of a kernel's tuning decorators."""
    ctx = AutotuneContext()
    for dec in decorators:
        if not isinstance(dec, ast.Call):
            continue
        name = decorator_name(dec)
        short = name.rsplit(".", 1)[-1]
        if short in AUTOTUNE_NAMES:
            _read_names(ctx, "reset_to_zero", _keyword(dec, "reset_to_zero"), tree, ctx.reset_to_zero, params)
            _read_names(ctx, "restore_value", _keyword(dec, "restore_value"), tree, ctx.restore_value, params)
            pre, post = (_hook(dec, h) for h in ("pre_hook", "post_hook"))
            if pre is not None:
                ctx.notes.append(f"autotune pre_hook={pre} is code the oracle does not run: the recorded arguments "
                                 "already hold what it did before the launch (fresh input vectors do not)")
                if ctx.reset_to_zero:  # Triton's Autotuner: a user pre_hook takes the place of the reset
                    ctx.notes.append(f"reset_to_zero ({', '.join(ctx.reset_to_zero)}) not applied: the autotuner "
                                     "runs the user's pre_hook instead of its reset")
                    ctx.reset_to_zero.clear()
            if post is not None:
                ctx.notes.append(f"autotune post_hook={post} runs after the launch and is not replayed: outputs "
                                 "are compared before it, as the trace recorded them")
            configs = _keyword(dec, "configs") or (dec.args[0] if dec.args else None)
            if configs is not None and any(k.arg == "pre_hook" for sub in ast.walk(configs)
                                           if isinstance(sub, ast.Call) for k in sub.keywords):
                ctx.notes.append("a triton.Config pre_hook is code the oracle does not run: the recorded arguments "
                                 "already hold what it did before the launch (fresh input vectors do not)")
        elif is_inductor_decorator(name):
            meta = _keyword(dec, "triton_meta")
            if meta is not None:
                _read_names(ctx, "reset_to_zero", _dict_entry(meta, "reset_to_zero"), tree, ctx.reset_to_zero, params)
                _read_names(ctx, "restore_value", _dict_entry(meta, "restore_value"), tree, ctx.restore_value, params)
    return ctx
