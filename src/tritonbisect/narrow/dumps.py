"""MLIR's per-pass IR dumps (MLIR_ENABLE_DUMP=1), parsed and normalised.

Triton (and MLIR's `-mlir-print-ir-before-all`) writes, before every pass,

    // -----// IR Dump Before TritonCombineOps (triton-combine) ('builtin.module' operation) //----- //
    <the IR the pass is about to run on>

(newer MLIR, e.g. in Triton 3.9: `IR Dump Before TritonGPUF32DotTC: tritongpu-F32DotTC{emu-tf32=true}
('builtin.module' operation)`, the pass's options in braces; both forms are read.)

`parse_dumps(text)` gives the passes in order, each with its input IR; the output of pass i
is the input of pass i+1 (the last pass's output is not dumped). `normalise(ir)` drops what
does not count as a difference: locations (`loc(...)`, `#locN = ...` lines), SSA value
names and symbol names (renumbered in order of appearance: a frontend that mangles helper
names differently, `@zeros__…` vs `@"triton.language.standard.zeros__…"`, changes no pass's
work) and blank lines.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

HEADER = re.compile(
    r"^// -----// IR Dump (?P<when>Before|After) (?P<name>[^\s(:]+)"
    r"(?: \((?P<arg>[^)]*)\)|: (?P<arg2>[^\s{(]+)(?P<opts>\{.*?\})?)?"
    r"(?: \('(?P<op>[^']+)' operation(?:: (?P<sym>@.*))?\))? //----- //\s*$",
    re.MULTILINE,
)
_LOC_DEF = re.compile(r"^#loc\d*\s*=.*$", re.MULTILINE)
_LOC_USE = re.compile(r"\s*loc\((?:[^()]|\([^()]*(?:\([^()]*\))*[^()]*\))*\)")
_SSA = re.compile(r"%[A-Za-z_$.-][\w$.-]*|%\d+(?:#\d+)?")  # MLIR suffix-id: letters, digits, $._-
_FUNC = re.compile(r"^\s*(?:tt|func|llvm)\.func\b")
_SYMBOL = re.compile(r'@"(?:[^"\\]|\\.)*"|@[A-Za-z_$][\w$.]*')
_BLOCK = re.compile(r"\^bb\d+|\^[A-Za-z_]\w*")
# the lines of the dumps end where other output starts (a traceback, a crash report)
_NOT_IR = re.compile(r"^(?:Traceback \(most recent call last\)|Fatal Python error|PLEASE submit|Stack dump:)")


@dataclass
class PassDump:
    index: int  # position in the whole compile (every pipeline, in order)
    name: str  # TritonGPUCoalesce
    arg: str  # tritongpu-coalesce
    op: str  # builtin.module, tt.func
    ir: str  # the IR before the pass
    options: str = ""  # {emu-tf32=true}: the pass's options, where the dump names them

    @property
    def key(self) -> str:
        """What aligns two pipelines: the pass argument (stable where the class was renamed,
        Canonicalizer -> CanonicalizerPass), else the name."""
        return self.arg or self.name

    @property
    def label(self) -> str:
        return f"{self.name} ({self.arg})" if self.arg else self.name


def parse_dumps(text: str) -> list[PassDump]:
    """Every 'IR Dump Before' of a compile's stderr, in order."""
    heads = list(HEADER.finditer(text))
    out: list[PassDump] = []
    for i, m in enumerate(heads):
        end = heads[i + 1].start() if i + 1 < len(heads) else len(text)
        body = text[m.end():end].strip("\n")
        if i + 1 == len(heads):  # the last dump: cut where the compiler's other output starts
            lines = body.splitlines()
            for j, line in enumerate(lines):
                if _NOT_IR.match(line):
                    body = "\n".join(lines[:j]).rstrip("\n")
                    break
        if m.group("when") != "Before":
            continue
        out.append(PassDump(index=len(out), name=m.group("name"), arg=m.group("arg") or m.group("arg2") or "",
                            op=m.group("op") or "", ir=body, options=m.group("opts") or ""))
    return out


def normalise(ir: str) -> str:
    """IR without locations, with SSA values and blocks renumbered in order of appearance."""
    text = _LOC_DEF.sub("", ir)
    text = _LOC_USE.sub("", text)
    names: dict[str, str] = {}
    lines = []
    for line in text.splitlines():
        if _FUNC.match(line):  # SSA names are scoped per function: number each one from %v0
            names = {}
        lines.append(_SSA.sub(lambda m, names=names: names.setdefault(m.group(0), f"%v{len(names)}"), line))
    text = "\n".join(lines)
    symbols: dict[str, str] = {}
    text = _SYMBOL.sub(lambda m: symbols.setdefault(m.group(0), f"@s{len(symbols)}"), text)
    blocks: dict[str, str] = {}
    text = _BLOCK.sub(lambda m: blocks.setdefault(m.group(0), f"^b{len(blocks)}"), text)
    return "\n".join(line.rstrip() for line in text.splitlines() if line.strip()) + "\n"
