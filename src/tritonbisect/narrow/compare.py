"""Two compiles' pass pipelines side by side: where does the culprit's IR first part ways?

    result = compare_pipelines(parent_dumps, culprit_dumps, culprit_failed=True)
    result["first_difference"]["pass"]   # "TritonGPUCoalesce (tritongpu-coalesce)"
    result["last_agreeing"]              # the pass before it whose output still agrees
    result["running_pass"]               # the culprit's last dumped pass when its compile failed

Pipelines are aligned by pass argument in order (mlir.passes.align), so a pass the culprit
added, removed, moved or renamed for its backend shows as such. Outputs are compared normalised
(mlir.normalise): SSA value names, scoped by region, and locations do not count. The output of pass i is the input of pass i+1.
"""

from __future__ import annotations

import difflib
from typing import Any

from tritonbisect.mlir.normalise import normalise
from tritonbisect.mlir.passes import PassDump, align

MAX_DIFF_LINES = 80


def _diff(a: str, b: str, from_name: str, to_name: str) -> str:
    """A unified diff of the normalised texts (no locations; SSA values numbered %v0, %v1, ...)."""
    lines = list(difflib.unified_diff(normalise(a).splitlines(), normalise(b).splitlines(), from_name, to_name,
                                      lineterm="", n=2))
    if len(lines) > MAX_DIFF_LINES:
        lines = [*lines[:MAX_DIFF_LINES], f"... ({len(lines) - MAX_DIFF_LINES} more diff lines)"]
    return "\n".join(lines)


def _changers(dumps: list[PassDump], norm: list[str], start: int, stop: int) -> list[str]:
    """Labels of the passes in dumps[start:stop] whose output differs from their input."""
    return [dumps[k].label for k in range(start, stop) if k + 1 < len(dumps) and norm[k] != norm[k + 1]]


def _output(dumps: list[PassDump], i: int, final: str | None) -> str | None:
    return dumps[i + 1].ir if i + 1 < len(dumps) else final


def compare_pipelines(
    parent: list[PassDump],
    culprit: list[PassDump],
    *,
    culprit_failed: bool = False,
    parent_final: str | None = None,
    culprit_final: str | None = None,
) -> dict[str, Any]:
    """Where the culprit's pipeline first differs from the parent's (see the module docstring)."""
    alignment = align(parent, culprit, b_stopped=culprit_failed)
    pairs = alignment.pairs
    norm_p = [normalise(p.ir) for p in parent]
    norm_c = [normalise(p.ir) for p in culprit]
    first: dict[str, Any] | None = None
    last_agreeing: str | None = None
    for k, (i, j) in enumerate(pairs):
        if norm_p[i] != norm_c[j]:  # the input differs already: an unmatched pass, or a different input
            prev = pairs[k - 1] if k else (-1, -1)
            only_c = [p.label for p in culprit[prev[1] + 1:j]]
            only_p = [p.label for p in parent[prev[0] + 1:i]]
            if only_c or only_p:
                changed_c = _changers(culprit, norm_c, prev[1] + 1, j)
                changed_p = _changers(parent, norm_p, prev[0] + 1, i)
                what = (changed_c or changed_p or only_c or only_p)[0]
                note = (f"the IR differs after passes not in both pipelines, before {culprit[j].label}: "
                        f"the culprit runs {', '.join(only_c) or 'none'}, the parent {', '.join(only_p) or 'none'}; "
                        f"of those, {', '.join(changed_c) or 'none'} changed the culprit's IR"
                        + (f", {', '.join(changed_p)} the parent's" if changed_p else ""))
            elif k == 0:
                what = f"(the frontend, before {culprit[j].label})"
                note = ("the IR given to the first pass already differs: the Python → TTIR code generation or "
                        "triton.language changed (or, for an IR oracle, the replayed IR is read differently)")
            else:  # pragma: no cover - matched neighbours whose IR differs with nothing between them
                what, note = culprit[j].label, "its input differs from the previous pass's output"
            first = {
                "pass": what,
                "position": j,
                "note": note,
                "culprit_only": only_c,
                "parent_only": only_p,
                "input_diff": _diff(parent[i].ir, culprit[j].ir, f"parent: before {parent[i].name}",
                                    f"culprit: before {culprit[j].name}"),
            }
            break
        out_p = _output(parent, i, parent_final)
        out_c = _output(culprit, j, culprit_final)
        if out_p is None or out_c is None:
            continue  # the last pass: its output was not dumped
        if normalise(out_p) != normalise(out_c):
            first = {
                "pass": culprit[j].label,
                "position": j,
                "parent_position": i,
                "op": culprit[j].op,
                "note": "same input, different output",
                "output_diff": _diff(out_p, out_c, f"parent: after {parent[i].name}", f"culprit: after {culprit[j].name}"),
                "parent_diff": _diff(parent[i].ir, out_p, f"parent: before {parent[i].name}", f"parent: after {parent[i].name}"),
                "culprit_diff": _diff(culprit[j].ir, out_c, f"culprit: before {culprit[j].name}",
                                      f"culprit: after {culprit[j].name}"),
            }
            break
        last_agreeing = culprit[j].label
    running = culprit[-1].label if culprit_failed and culprit else None
    return {
        "passes": {"parent": len(parent), "culprit": len(culprit), "aligned": len(pairs)},
        "added": alignment.added,
        "removed": alignment.removed,
        "moved": alignment.moved,
        "renamed": [list(r) for r in alignment.renamed],
        "first_difference": first,
        "last_agreeing": last_agreeing,
        "running_pass": running,
    }


def after_the_dumps(parent: dict[str, Any], culprit: dict[str, Any]) -> dict[str, Any] | None:
    """Where the difference is when every dumped pass agrees: "ptxas" when both compiles'
    PTX is the same text and the machine code of their cubins (the .text sections: the SASS)
    differs. `parent`/`culprit`: a compile's artifacts ({"ptx": path, "cubin": path, ...});
    None when it cannot tell (no PTX or cubin, an unreadable ELF, or nothing differs)."""
    from pathlib import Path

    try:
        ptx = [Path(side["ptx"]).read_text(encoding="utf-8", errors="replace") for side in (parent, culprit)]
        sass = [sass_sections(Path(side["cubin"]).read_bytes()) for side in (parent, culprit)]
    except (KeyError, OSError, TypeError, ValueError):
        return None
    if ptx[0] == ptx[1] and sass[0] != sass[1]:
        kernels = sorted(set(sass[0]) | set(sass[1]))
        return {"where": "ptxas", "sections": kernels,
                "note": "the PTX is identical and only the SASS differs: ptxas (the NVIDIA toolchain) changed "
                        "the code, not Triton or LLVM"}
    return None


def sass_sections(elf: bytes) -> dict[str, bytes]:
    """The machine code of a cubin: its `.text.<kernel>` sections (a 64-bit little-endian ELF,
    as ptxas writes). The rest of a cubin (.nv.info, notes, the ELF header) carries the
    toolchain's version and may differ where the code does not. ValueError: not such an ELF."""
    import struct

    if len(elf) < 64 or elf[:4] != b"\x7fELF" or elf[4] != 2 or elf[5] != 1:
        raise ValueError("not a 64-bit little-endian ELF")
    (shoff,) = struct.unpack_from("<Q", elf, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", elf, 0x3A)
    if shentsize < 64 or shoff + shnum * shentsize > len(elf) or shstrndx >= shnum:
        raise ValueError("a truncated ELF section table")
    heads = [struct.unpack_from("<IIQQQQ", elf, shoff + k * shentsize) for k in range(shnum)]
    names_at = heads[shstrndx][4]
    out: dict[str, bytes] = {}
    for name, kind, _flags, _addr, offset, size in heads:
        end = elf.find(b"\0", names_at + name)
        label = elf[names_at + name:end].decode("ascii", errors="replace") if end >= 0 else ""
        if label.startswith(".text") and kind != 8 and offset + size <= len(elf):  # 8: SHT_NOBITS
            out[label] = elf[offset:offset + size]
    return out
