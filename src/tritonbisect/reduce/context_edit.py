"""Edits of an oracle's context.json (pure: each returns a new dict)."""

from __future__ import annotations

import copy
from typing import Any


def drop_arg(context: dict[str, Any], name: str) -> dict[str, Any] | None:
    """Without argument `name` (and its storage when no other tensor lives there); None when
    it is part of a descriptor or tuple."""
    ctx = copy.deepcopy(context)
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
    ctx.get("kernel", {}).get("pinned_config", {}).pop(name, None)
    return ctx


def set_scalar(context: dict[str, Any], name: str, value: int) -> dict[str, Any]:
    ctx = copy.deepcopy(context)
    for spec in ctx.get("args", []):
        if spec.get("name") == name:
            spec["value"] = value
    pinned = ctx.get("kernel", {}).get("pinned_config", {})
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
