"""The type of an operation's one result, read from its line, and an `arith.constant` of it.

The pretty form says the result type in different places, and these are read:

    %0 = arith.addf %a, %b : tensor<64xf32, #blocked>            the type after ` : `
    %1 = tt.splat %p : !tt.ptr<f32> -> tensor<64x!tt.ptr<f32>>     after the last `->`
    %2 = "tt.reduce"(%x) <{axis = 0 : i32}> ({ ... }) : (tensor<64xf32>) -> f32   (the closing line)
    %3 = arith.sitofp %n : i32 to f32                             after ` to `
    %4 = arith.cmpf olt, %a, %b : tensor<64xf32>                  the operands' shape, of i1
    %5 = tt.load %ptrs : tensor<64x!tt.ptr<f32>>                  the pointee
    %6 = arith.select %c, %a, %b : tensor<64xi1>, tensor<64xf32>   the last type
    %7 = scf.for ... -> (tensor<64xf32>) : i32 {                   the one type after `->`

A type no constant can have (a pointer, a shared-memory descriptor) gives None, and so does a
line read wrongly: the good Triton's parser rejects a constant of the wrong type, so a guess
costs one rejected candidate, never a wrong reduction. Pure text.
"""

from __future__ import annotations

import re

from tritonbisect.mlir.signature import split_top, top_level

_LOC_TAIL = re.compile(r"\s+loc\(.*$")
_INT = re.compile(r"^i(\d+)$")
_FLOAT = re.compile(r"^(?:f16|bf16|f32|f64|tf32|f8E\w+|f6E\w+|f4E\w+)$")
_TENSOR = re.compile(r"^tensor<(?P<dims>(?:[0-9]+x)*)(?P<elem>[^,>][^,]*?|!tt\.ptr<.*>)(?P<enc>,\s*#.*)?>$")


def types_of(line: str) -> str | None:
    """What follows the first top-level ` : ` of an operation's line (its location dropped)."""
    text = _LOC_TAIL.sub("", line.strip())
    at = top_level(text, " : ")
    return text[at[0] + 3:].strip() if at else None


def _after_arrow(text: str) -> str | None:
    at = top_level(text, "->")
    if not at:
        return None
    out = text[at[-1] + 2:].strip().rstrip("{").strip()
    if out.startswith("("):
        inner = split_top(out[1:out.rfind(")")])
        return inner[0] if len(inner) == 1 else None
    return out


def element(type_text: str) -> tuple[list[str], str, str]:
    """(dims, element type, encoding) of a ranked tensor; ([], the type, "") of a scalar."""
    m = _TENSOR.match(type_text.strip())
    if not m:
        return [], type_text.strip(), ""
    return [d for d in m.group("dims").split("x") if d], m.group("elem").strip(), m.group("enc") or ""


def with_element(type_text: str, elem: str) -> str:
    dims, _, enc = element(type_text)
    return f"tensor<{'x'.join([*dims, elem])}{enc}>" if dims else elem


def result_type(name: str, head: str, tail: str = "") -> str | None:
    """The type of the one result of operation `name`; `head` is its first line, `tail` the
    line closing its last region (for an operation with regions)."""
    if head.rstrip().endswith("{"):  # regions: the type is in the header (pretty) or after them (generic)
        closing = tail.strip()
        if closing.startswith("})"):
            return _after_arrow(_LOC_TAIL.sub("", closing.lstrip("})")))
        return _after_arrow(_LOC_TAIL.sub("", head.strip()))
    types = types_of(head)
    if types is None:
        return None
    if name in ("arith.cmpf", "arith.cmpi"):
        return with_element(split_top(types)[0], "i1")
    if name == "tt.load":
        dims, elem, _ = element(split_top(types)[0])
        inner = re.match(r"^!tt\.ptr<(.*?)(?:,\s*\d+)?>$", elem)
        return with_element(split_top(types)[0], inner.group(1)) if inner else None
    if top_level(types, "->"):
        return _after_arrow(types)
    if top_level(types, " to "):
        return types[top_level(types, " to ")[-1] + 4:].strip()
    parts = split_top(types)
    if not parts:
        return None
    return parts[-1] if name == "arith.select" else parts[0]


def constant(type_text: str, one: bool = False) -> str | None:
    """`arith.constant ... : T` of zero (or one) in type T; None when T holds no constant."""
    dims, elem, _ = element(type_text)
    if elem == "i1":
        value = "true" if one else "false"
    elif _INT.match(elem) or elem == "index":
        value = "1" if one else "0"
    elif _FLOAT.match(elem):
        value = "1.000000e+00" if one else "0.000000e+00"
    else:
        return None
    if not dims and elem == "i1":
        return f"arith.constant {value}"  # MLIR writes a boolean with no type after it
    return f"arith.constant {f'dense<{value}>' if dims else value} : {type_text.strip()}"
