"""A launch's recorded arguments in the one form the oracles rebuild, whichever tracer wrote them.

tritonparse up to 0.6 and `tritonbisect trace` record a constexpr as the plain value's record
(`{"type": "int", "value": 64}`) and a tuple as `{"type": "tuple", "repr": ..., "elements": [...]}`
(tritonbisect) or its repr alone (tritonparse 0.6). tritonparse 0.7 captures constexpr and tuple
arguments themselves; its records are read in every shape a record of a value can take:

- a constexpr wrapped, `{"type": "constexpr", "value": V}` (V a plain value, a value's record,
  or a dtype's text), or marked, `{"type": "int", "value": 64, "constexpr": true}`;
- a tuple's items under `elements`, `items`, `values` or `value`, each a value's record (or a plain
  value), nested tuples included.

What is not one of these is left as it was: the oracle then names the type it cannot rebuild.
"""

from __future__ import annotations

from typing import Any

_TUPLE_KEYS = ("elements", "items", "values", "value")
_MARKERS = ("constexpr", "is_constexpr")


def plain_record(value: Any) -> dict[str, Any]:
    """The record of a plain JSON value (a constexpr's or a tuple item's)."""
    if isinstance(value, dict) and isinstance(value.get("type"), str):
        return normalise_record(value)
    if value is None:
        return {"type": "NoneType"}
    if isinstance(value, bool):
        return {"type": "bool", "value": value}
    if isinstance(value, int):
        return {"type": "int", "value": value}
    if isinstance(value, float):
        return {"type": "float", "value": value}
    if isinstance(value, str):
        if value.startswith(("triton.language", "tl.", "torch.")) or value.startswith("dtype("):
            return {"type": "dtype", "repr": value}
        return {"type": "str", "value": value}
    if isinstance(value, list):
        return {"type": "tuple", "repr": repr(tuple(value)), "elements": [plain_record(v) for v in value]}
    return {"type": type(value).__name__, "repr": str(value)[:200]}


def normalise_record(record: Any) -> Any:
    """One argument record in the form the oracles read (see the module docstring)."""
    if not isinstance(record, dict):
        return record
    kind = record.get("type")
    if kind == "constexpr":
        inner = record.get("value", record.get("repr"))
        return plain_record(inner)
    if any(record.get(m) is True for m in _MARKERS):
        record = {k: v for k, v in record.items() if k not in _MARKERS}
    if kind == "tuple" and not isinstance(record.get("elements"), list):
        for key in _TUPLE_KEYS:
            items = record.get(key)
            if isinstance(items, list):
                out = {k: v for k, v in record.items() if k != key}
                out["elements"] = [plain_record(v) for v in items]
                out.setdefault("repr", repr(tuple(e.get("value") for e in out["elements"])))
                return out
    if kind == "tuple" and isinstance(record.get("elements"), list):
        return {**record, "elements": [plain_record(v) for v in record["elements"]]}
    return record


def normalise_args(args: dict[str, Any]) -> dict[str, Any]:
    return {name: normalise_record(record) for name, record in args.items()}
