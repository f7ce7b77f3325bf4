"""Edits of an oracle's context (pure: each returns a new dict): a runtime oracle's
context.json (arguments, storages, launch) or a compile oracle's compile_context.json (the
compile job's parameters and options)."""

from __future__ import annotations

import copy
from typing import Any


def _pinned(context: dict[str, Any]) -> dict[str, Any]:
    """A runtime oracle's record of the launch's configuration (empty for a compile oracle)."""
    kernel = context.get("kernel")
    pinned = kernel.get("pinned_config") if isinstance(kernel, dict) else None
    return pinned if isinstance(pinned, dict) else {}


def is_compile(context: dict[str, Any]) -> bool:
    return isinstance(context.get("job"), dict)


def params(context: dict[str, Any]) -> list[dict[str, Any]]:
    """The kernel's arguments: each a dict with name, kind and (for scalars) value."""
    if is_compile(context):
        return list(context["job"]["what"].get("params") or [])
    return list(context.get("args") or [])


def options(context: dict[str, Any]) -> dict[str, Any]:
    """The compile options (num_warps, num_stages, ...)."""
    found = context["job"].get("options") if is_compile(context) else context.get("compile")
    return dict(found or {})


def set_option(context: dict[str, Any], key: str, value: Any) -> dict[str, Any]:
    ctx = copy.deepcopy(context)
    if is_compile(ctx):
        ctx["job"].setdefault("options", {})[key] = value
    else:
        ctx.setdefault("compile", {})[key] = value
        _pinned(ctx).pop(key, None)
    return ctx


def drop_arg(context: dict[str, Any], name: str) -> dict[str, Any] | None:
    """Without argument `name` (and its storage when no other tensor lives there); None when
    it is part of a descriptor or tuple."""
    ctx = copy.deepcopy(context)
    if is_compile(ctx):
        what = ctx["job"]["what"]
        kept = [p for p in what.get("params") or [] if p.get("name") != name]
        if len(kept) == len(what.get("params") or []):
            return None
        what["params"] = kept
        return ctx
    args = ctx.get("args", [])
    spec = next((a for a in args if a.get("name") == name), None)
    if spec is None or spec.get("part_of") or spec.get("kind") in ("descriptor", "tuple"):
        return None
    args.remove(spec)
    if spec.get("kind") == "tensor":
        index = spec["storage"]
        storages = ctx.get("storages", [])
        if not any(a.get("kind") == "tensor" and a.get("storage") == index for a in args):
            del storages[index]
            for a in args:
                if a.get("kind") == "tensor" and a["storage"] > index:
                    a["storage"] -= 1
        else:
            storages[index]["tensors"] = [t for t in storages[index].get("tensors", []) if t != name]
    _pinned(ctx).pop(name, None)
    return ctx


def set_scalar(context: dict[str, Any], name: str, value: int) -> dict[str, Any]:
    ctx = copy.deepcopy(context)
    for spec in params(ctx):
        if spec.get("name") == name:
            spec["value"] = value
    pinned = _pinned(ctx)
    if name in pinned:
        pinned[name] = value
    return ctx


def elements(context: dict[str, Any]) -> int:
    total = 0
    for spec in context.get("args", []):
        if spec.get("kind") == "tensor":
            n = 1
            for s in spec.get("shape", []):
                n *= int(s)
            total += n
    return total


def scalar_values(context: dict[str, Any]) -> list[tuple[str, int]]:
    """(name, value) of every integer argument (constexprs included)."""
    out = []
    for spec in params(context):
        value = spec.get("value")
        if spec.get("kind") != "tensor" and isinstance(value, int) and not isinstance(value, bool):
            out.append((str(spec["name"]), value))
    return out
