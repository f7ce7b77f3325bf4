"""MLIR's per-pass IR dumps (MLIR_ENABLE_DUMP=1), and two compiles' pipelines aligned.

Triton (and MLIR's `-mlir-print-ir-before-all`) writes, before every pass,

    // -----// IR Dump Before TritonCombineOps (triton-combine) ('builtin.module' operation) //----- //
    <the IR the pass is about to run on>

(newer MLIR, e.g. in Triton 3.9: `IR Dump Before TritonGPUF32DotTC: tritongpu-F32DotTC{emu-tf32=true}
('builtin.module' operation)`, the pass's options in braces; both forms are read.)

`parse_dumps(text)` gives the passes in order, each with its input IR; the output of pass i
is the input of pass i+1 (the last pass's output is not dumped). `align(a, b)` pairs two
pipelines' passes: by pass argument in order, then a pass renamed together with its argument
for one backend (`allocate-shared-memory` -> `allocate-shared-memory-nv`) where it stands; a
pass found in both but at another place has moved (neither added nor removed).
"""

from __future__ import annotations

import difflib
import re
from collections import Counter
from dataclasses import dataclass, field

HEADER = re.compile(
    r"^// -----// IR Dump (?P<when>Before|After) (?P<name>[^\s(:]+)"
    r"(?: \((?P<arg>[^)]*)\)|: (?P<arg2>[^\s{(]+)(?P<opts>\{.*?\})?)?"
    r"(?: \('(?P<op>[^']+)' operation(?:: (?P<sym>@.*))?\))? //----- //\s*$",
    re.MULTILINE,
)
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


# a backend's variant of a pass: its argument with the backend's suffix
_BACKEND_SUFFIX = re.compile(r"-(?:nv|nvidia|nvgpu|amd|amdgpu|rocm|hip)$")


def base_key(key: str) -> str:
    """A pass argument without its backend suffix: `allocate-shared-memory-nv` -> `allocate-shared-memory`."""
    return _BACKEND_SUFFIX.sub("", key.lower())


@dataclass
class Alignment:
    pairs: list[tuple[int, int]]  # (index in a, index in b), in order
    added: list[str] = field(default_factory=list)  # labels only in b
    removed: list[str] = field(default_factory=list)  # labels only in a
    moved: list[str] = field(default_factory=list)  # in both, at another place (not paired)
    renamed: list[tuple[str, str]] = field(default_factory=list)  # (a's label, b's label), paired


def align(a: list[PassDump], b: list[PassDump], *, b_stopped: bool = False) -> Alignment:
    """Pair the passes of two pipelines (see the module docstring).

    `b_stopped`: b's compile failed, so a's passes after b's last one were not reached, not removed."""
    matcher = difflib.SequenceMatcher(None, [p.key for p in a], [p.key for p in b], autojunk=False)
    out = Alignment(pairs=[])
    only_a: list[PassDump] = []
    only_b: list[PassDump] = []
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            out.pairs.extend(zip(range(i1, i2), range(j1, j2), strict=True))
            continue
        if b_stopped and j1 == len(b):
            continue
        if tag == "replace":  # the same pass under a backend's new name, where it stands
            inner = difflib.SequenceMatcher(None, [base_key(p.key) for p in a[i1:i2]],
                                            [base_key(p.key) for p in b[j1:j2]], autojunk=False)
            paired_a: set[int] = set()
            paired_b: set[int] = set()
            for block in inner.get_matching_blocks():
                for k in range(block.size):
                    i, j = i1 + block.a + k, j1 + block.b + k
                    out.pairs.append((i, j))
                    out.renamed.append((a[i].label, b[j].label))
                    paired_a.add(i)
                    paired_b.add(j)
            only_a.extend(a[i] for i in range(i1, i2) if i not in paired_a)
            only_b.extend(b[j] for j in range(j1, j2) if j not in paired_b)
        else:
            only_a.extend(a[i1:i2])
            only_b.extend(b[j1:j2])
    out.pairs.sort()
    in_both = Counter(p.key for p in only_a) & Counter(p.key for p in only_b)
    for dumps, labels in ((only_a, out.removed), (only_b, out.added)):
        left = Counter(in_both)
        for p in dumps:
            if left[p.key] > 0:
                left[p.key] -= 1
                if dumps is only_a:
                    out.moved.append(p.label)
            else:
                labels.append(p.label)
    return out
