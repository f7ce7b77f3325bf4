"""MLIR text without what does not count as a difference between two compilers' IR.

Dropped: locations (`loc(...)`, `#locN = ...` lines) and blank lines. Renumbered in order of
appearance: SSA values (%v0, %v1, ...), block labels (^b0, ...) and symbols (@s0, ...), so a
printer that names values differently (`%42` vs `%mean_26`) or a frontend that mangles helper
names differently changes nothing.

Value and block names are scoped by region, as MLIR scopes them: a printer may reuse a name in
a sibling region (Triton 3.4's printer names the block arguments of two `tt.reduce` combiners
`%arg9` both times, and their results `%42`), and such a name is a new value there. Numbering
by first appearance alone would map the second region's values to the first's numbers and
shift every later value, so that two identical IRs from different printers compare unequal.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from tritonbisect.mlir.signature import FUNC_HEAD

_LOC_DEF = re.compile(r"^#loc[\w$.-]*\s*=.*$", re.MULTILINE)
_LOC_USE = re.compile(r"\s*loc\((?:[^()]|\([^()]*(?:\([^()]*\))*[^()]*\))*\)")
# an SSA value (MLIR suffix-ids: letters, digits, $._-; `%42#1` is a result of a multi-result op)
# or a block label
_NAME = re.compile(r"%[A-Za-z_$.-][\w$.-]*|%\d+(?:#\d+)?|\^[A-Za-z_][\w$.-]*|\^\d+")
_SYMBOL = re.compile(r'@"(?:[^"\\]|\\.)*"|@[A-Za-z_$][\w$.]*')


def drop_locations(ir: str) -> str:
    return _LOC_USE.sub("", _LOC_DEF.sub("", ir))


class _Scopes:
    """Names bound per region: a name is looked up from the innermost region out; one not
    bound in any enclosing region is a new value of the innermost one."""

    def __init__(self) -> None:
        self.reset()

    def reset(self) -> None:
        self.stack: list[dict[str, str]] = [{}]
        self.counts = {"%": 0, "^": 0}

    def rename(self, match: re.Match[str]) -> str:
        name = match.group(0)
        for scope in reversed(self.stack):
            if name in scope:
                return scope[name]
        sigil = name[0]
        new = f"{sigil}{'v' if sigil == '%' else 'b'}{self.counts[sigil]}"
        self.counts[sigil] += 1
        self.stack[-1][name] = new
        return new


def renumber_values(text: str) -> str:
    """SSA values and block labels renumbered in order of appearance, per function, scoped by
    region (a line ending in `{` opens a region, one starting with `}` closes it)."""
    scopes = _Scopes()
    rename: Callable[[re.Match[str]], str] = scopes.rename
    lines = []
    for line in text.splitlines():
        stripped = line.strip()
        if FUNC_HEAD.match(stripped):  # a function starts numbering afresh
            scopes.reset()
        elif stripped.startswith("}") and len(scopes.stack) > 1:
            scopes.stack.pop()
        lines.append(_NAME.sub(rename, line))
        if stripped.endswith("{"):
            scopes.stack.append({})
    return "\n".join(lines)


def normalise(ir: str) -> str:
    """IR without locations, with values, blocks and symbols renumbered (see the module doc)."""
    text = renumber_values(drop_locations(ir))
    symbols: dict[str, str] = {}
    text = _SYMBOL.sub(lambda m: symbols.setdefault(m.group(0), f"@s{len(symbols)}"), text)
    return "\n".join(line.rstrip() for line in text.splitlines() if line.strip()) + "\n"
