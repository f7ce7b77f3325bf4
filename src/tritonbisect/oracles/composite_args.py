"""Kernel arguments made of tensors: host-side TensorDescriptors and tuples.

Both tracers record a `triton.tools.tensor_descriptor.TensorDescriptor` argument as its base
tensor (a full tensor record: blob, statistics, data_ptr) with the descriptor's shape, strides,
block shape and padding; `tritonbisect trace` records a tuple as the records of its elements,
tritonparse 0.6 only as its repr. The oracle flattens them: each tensor inside becomes a tensor
spec of its own, named `desc.base` or `tup[i]` and marked `part_of`, so storages, blobs, fresh
input vectors, guard bytes and the comparison after the launch treat it like any tensor
argument; a `descriptor` or `tuple` spec after them says how the argument is put back together.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tritonbisect.core.errors import InputError

# (spec name, the record of that tensor, the record of it after the launch or None) -> tensor spec
TensorSpec = Callable[[str, dict[str, Any], Any], dict[str, Any]]
# (spec name, the record of that scalar) -> scalar spec
ScalarSpec = Callable[[str, dict[str, Any]], dict[str, Any]]

DESCRIPTOR_TYPES = {"TensorDescriptor"}


def _ints(value: Any, what: str, name: str, kernel: str) -> list[int]:
    if not isinstance(value, list) or not value or not all(isinstance(v, int) for v in value):
        raise InputError(f"argument '{name}' of {kernel} is a TensorDescriptor whose {what} the trace does not "
                         f"record ({value!r}), so the oracle cannot rebuild it")
    return list(value)


def descriptor_specs(name: str, info: dict[str, Any], after: Any, kernel: str,
                     tensor_spec: TensorSpec) -> list[dict[str, Any]]:
    """The base tensor's spec, then the descriptor's."""
    base = info.get("base")
    if not isinstance(base, dict) or base.get("type") != "tensor":
        raise InputError(f"argument '{name}' of {kernel} is a TensorDescriptor whose base tensor the trace does "
                         "not record, so the oracle cannot rebuild it")
    shape = _ints(info.get("shape"), "shape", name, kernel)
    strides = _ints(info.get("strides"), "strides", name, kernel)
    block = _ints(info.get("block_shape"), "block shape", name, kernel)
    if not len(shape) == len(strides) == len(block):
        raise InputError(f"argument '{name}' of {kernel}: TensorDescriptor shape {shape}, strides {strides} and "
                         f"block shape {block} differ in rank")
    padding = info.get("padding") or "zero"
    if padding not in ("zero", "nan"):
        raise InputError(f"argument '{name}' of {kernel}: TensorDescriptor padding {padding!r} is unknown")
    base_after = after.get("base") if isinstance(after, dict) else None
    part = {**tensor_spec(f"{name}.base", base, base_after), "part_of": name}
    spec = {"name": name, "kind": "descriptor", "base": part["name"], "shape": shape, "strides": strides,
            "block_shape": block, "padding": padding}
    if info.get("round_f32_to_tf32"):  # Triton >= 3.5
        spec["round_f32_to_tf32"] = True
    return [part, spec]


def tuple_specs(name: str, info: dict[str, Any], after: Any, kernel: str, tensor_spec: TensorSpec,
                scalar_spec: ScalarSpec) -> list[dict[str, Any]]:
    """The elements' specs (tensors, scalars, descriptors), then the tuple's."""
    elements = info.get("elements")
    if not isinstance(elements, list):
        shown = " ".join(str(info.get("repr") or "").split())[:40]
        raise InputError(f"argument '{name}' of {kernel} is a tuple whose elements the trace does not record (only "
                         f"its repr, {shown}...; tritonparse 0.6 records no more): trace the program with "
                         "`tritonbisect trace`")
    after_elements = after.get("elements") if isinstance(after, dict) else None
    specs: list[dict[str, Any]] = []
    names: list[str] = []
    for i, element in enumerate(elements):
        part = f"{name}[{i}]"
        element_after = after_elements[i] if isinstance(after_elements, list) and i < len(after_elements) else None
        if not isinstance(element, dict):
            raise InputError(f"element {i} of tuple argument '{name}' of {kernel} is not a recorded argument")
        kind = element.get("type")
        if kind == "tensor":
            built = [tensor_spec(part, element, element_after)]
        elif kind in DESCRIPTOR_TYPES:
            built = descriptor_specs(part, element, element_after, kernel, tensor_spec)
        elif kind == "tuple":
            built = tuple_specs(part, element, element_after, kernel, tensor_spec, scalar_spec)
        else:
            built = [scalar_spec(part, element)]
        for spec in built:
            spec.setdefault("part_of", name)
        built[-1]["part_of"] = name
        specs.extend(built)
        names.append(part)
    return [*specs, {"name": name, "kind": "tuple", "elements": names}]
