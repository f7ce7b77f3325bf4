"""The signature of a `tt.func` (or `func.func`, `llvm.func`) in an MLIR text.

Triton's printers write a kernel's arguments in several ways, and every one is read:

    %arg0: !tt.ptr<f32> {tt.divisibility = 16 : i32} loc("/k.py":21:0)     3.4 and older: a
                                                                          file location, no name
    %a_ptr: !tt.ptr<f16> {tt.divisibility = 16 : i32} loc("a_ptr"(#loc))  newer: a name location
    %s: f32 loc(#loc5)          with `#loc5 = loc("s"(#loc))` further down: an aliased location

    sig = read_signature(ttir, "add_kernel")       # None when the text has no such function
    [(a.var, a.type, a.name, a.divisible_16) for a in sig.args]
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

# The head of a function: `tt.func public @name(`; the symbol may be quoted.
FUNC_HEAD = re.compile(
    r"\b(?P<dialect>tt|func|llvm)\.func\s+(?:(?P<vis>public|private|nested)\s+)?"
    r"(?:(?:internal|external|linkonce|weak|linkonce_odr|weak_odr)\s+)?"
    r"@(?P<name>\"(?:[^\"\\]|\\.)*\"|[\w$.]+)\s*\("
)
_LOC_ALIAS = re.compile(r"^(?P<alias>#loc[\w$.-]*)\s*=\s*loc\((?P<body>.*)\)\s*$", re.MULTILINE)
_OPEN = {"<": ">", "(": ")", "[": "]", "{": "}"}


@dataclass(frozen=True)
class SignatureArg:
    var: str  # the SSA name without '%': arg0, a_ptr
    type: str  # the MLIR type text: !tt.ptr<f32>, i32, tensor<64xf16, #blocked>
    attrs: dict[str, str] = field(default_factory=dict)  # {"tt.divisibility": "16 : i32"}
    name: str | None = None  # the source parameter, where a name location gives it

    @property
    def divisible_16(self) -> bool:
        value = self.attrs.get("tt.divisibility", "").split(":")[0].strip()
        return value.isdigit() and int(value) % 16 == 0


@dataclass(frozen=True)
class Signature:
    function: str
    visibility: str  # public, private, or "" when not written
    args: list[SignatureArg]

    @property
    def named(self) -> bool:
        """Every argument's location names its source parameter (newer Tritons)."""
        return bool(self.args) and all(a.name is not None for a in self.args)


def _close(text: str, start: int) -> int:
    """The index just past the bracket that closes the one at `start` (quotes respected);
    len(text) when it is never closed."""
    stack = [_OPEN[text[start]]]
    i = start + 1
    while i < len(text) and stack:
        ch = text[i]
        if ch == '"':
            i += 1
            while i < len(text) and text[i] != '"':
                i += 2 if text[i] == "\\" else 1
        elif ch == ">" and text[i - 1] == "-":
            pass  # `->` in a function type
        elif ch in _OPEN:
            stack.append(_OPEN[ch])
        elif ch == stack[-1]:
            stack.pop()
        i += 1
    return i


def top_level(text: str, needle: str) -> list[int]:
    """Where `needle` starts in `text` outside brackets and quotes (`->` is not a bracket)."""
    found: list[int] = []
    depth, i = 0, 0
    while i < len(text):
        ch = text[i]
        if ch == '"':
            i += 1
            while i < len(text) and text[i] != '"':
                i += 2 if text[i] == "\\" else 1
        elif ch in _OPEN:
            depth += 1
        elif ch in ")]}" or (ch == ">" and text[i - 1] != "-"):
            depth -= 1
        elif depth == 0 and text.startswith(needle, i):
            found.append(i)
        i += 1
    return found


def split_top(text: str, sep: str = ",") -> list[str]:
    """`text` split on `sep` outside brackets and quotes (empty pieces dropped)."""
    parts, start = [], 0
    for at in top_level(text, sep):
        parts.append(text[start:at])
        start = at + len(sep)
    parts.append(text[start:])
    return [p.strip() for p in parts if p.strip()]


def _aliases(text: str) -> dict[str, str]:
    return {m.group("alias"): m.group("body").strip() for m in _LOC_ALIAS.finditer(text)}


def location_name(body: str, aliases: dict[str, str], depth: int = 0) -> str | None:
    """The name a location gives (`"a_ptr"(#loc)`, `"a_ptr"`, or an alias of one); None for a
    file location (`"k.py":21:0`), a call site, a fused location or an unknown alias."""
    body = body.strip()
    if body.startswith("#") and depth < 8:
        alias = aliases.get(body)
        return location_name(alias, aliases, depth + 1) if alias is not None else None
    m = re.match(r'"((?:[^"\\]|\\.)*)"\s*(.*)$', body, re.S)
    if not m:
        return None
    rest = m.group(2)
    if rest.startswith(":"):
        return None  # "file":line:col
    return m.group(1) if rest == "" or rest.startswith("(") else None


def _read_arg(part: str, aliases: dict[str, str]) -> SignatureArg | None:
    m = re.match(r"%([\w$.-]+)\s*:\s*", part)
    if not m:
        return None
    rest = part[m.end():]
    i = 0
    while i < len(rest):  # the type ends where its attributes or location begin
        if rest[i] in "<([":
            i = _close(rest, i)
            continue
        if rest[i] == "{" or rest.startswith("loc(", i):
            break
        i += 1
    type_text, rest = rest[:i].strip(), rest[i:].strip()
    attrs: dict[str, str] = {}
    if rest.startswith("{"):
        end = _close(rest, 0)
        for item in split_top(rest[1:end - 1]):
            key, _, value = item.partition("=")
            attrs[key.strip().strip('"')] = value.strip()
        rest = rest[end:].strip()
    name = None
    if rest.startswith("loc("):
        end = _close(rest, 3)
        name = location_name(rest[4:end - 1], aliases)
    return SignatureArg(var=m.group(1), type=type_text, attrs=attrs, name=name)


def read_signatures(text: str) -> list[Signature]:
    """Every function's signature in the text, in order (a function whose argument list
    cannot be read is left out)."""
    aliases = _aliases(text)
    out: list[Signature] = []
    for m in FUNC_HEAD.finditer(text):
        open_at = m.end() - 1
        end = _close(text, open_at)
        args = [_read_arg(p, aliases) for p in split_top(text[open_at + 1:end - 1])]
        if any(a is None for a in args):
            continue
        out.append(Signature(function=m.group("name").strip('"'), visibility=m.group("vis") or "",
                             args=[a for a in args if a is not None]))
    return out


def read_signature(text: str, function: str) -> Signature | None:
    return next((s for s in read_signatures(text) if s.function == function), None)


def kernel_function(text: str) -> str | None:
    """The kernel of an IR text: its first public function, else its first function."""
    sigs = [(m.group("vis"), m.group("name").strip('"')) for m in FUNC_HEAD.finditer(text)]
    return next((n for v, n in sigs if v == "public"), sigs[0][1] if sigs else None)
