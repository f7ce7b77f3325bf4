"""The report's section "Where in the compiler": a narrowing result (narrow/narrowing.py) as Markdown.

Pure rendering of the dict stored in session.json ("extra" -> "narrow"); the bisect core does
not import the narrow package.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def _fence(text: str) -> list[str]:
    return ["```diff", text or "(no textual difference)", "```"]


def where_lines(data: Mapping[str, Any] | None, level: str = "###") -> list[str]:
    """Markdown lines of the section, or [] when the session was not narrowed."""
    if not data:
        return []
    out = ["", f"{level} Where in the compiler", ""]
    compiles = data.get("compiles") or {}
    p, c = compiles.get("parent") or {}, compiles.get("culprit") or {}
    passes = data.get("passes") or {}
    versions = data.get("versions")
    if versions:  # `wheels`: the published versions
        out.append(f"Kernel `{data.get('kernel')}` compiled with MLIR_ENABLE_DUMP=1 with {versions.get('package')} "
                   f"{versions.get('parent')} ({p.get('status')}, {passes.get('parent')} passes) and "
                   f"{versions.get('culprit')} ({c.get('status')}, {passes.get('culprit')} passes), from the "
                   f"published wheels, in {data.get('seconds')}s.")
    else:
        out.append(f"Kernel `{data.get('kernel')}` compiled with MLIR_ENABLE_DUMP=1 at the parent "
                   f"`{str(data.get('parent'))[:12]}` ({p.get('status')}, {passes.get('parent')} passes) and the "
                   f"culprit `{str(data.get('culprit'))[:12]}` ({c.get('status')}, {passes.get('culprit')} passes), "
                   f"from cached builds ({data.get('builds', 0)} built) in {data.get('seconds')}s.")
    out.append("")
    first = data.get("first_difference")
    later = data.get("after_dumps")
    if first:
        out.append(f"- **First pass whose output differs:** `{first['pass']}` ({first.get('note')})")
    elif later:  # every pass agrees and so does the PTX: ptxas
        out.append(f"- **Where:** {later['where']} ({later.get('note')})")
    else:
        out.append("- **First pass whose output differs:** none: every dumped pass agrees (SSA names and locations "
                   "aside); the difference is after the last dumped pass (LLVM, ptxas) or outside the compiler")
    if data.get("last_agreeing"):
        out.append(f"- **Last pass where they agree:** `{data['last_agreeing']}`")
    if data.get("running_pass"):
        out.append(f"- **Running when the culprit's compile failed:** `{data['running_pass']}` ({c.get('reason')})")
    failed = data.get("failed") or {}
    if failed.get("after_mlir"):  # every MLIR pass ran: it failed in LLVM's backend, ptxas or a linker
        out.append(f"- **Where the culprit's compile failed:** after the MLIR pipeline, in {failed.get('where')}, "
                   f"Triton's `{failed.get('stage')}` stage: {failed.get('message')}; every MLIR pass ran, the last "
                   f"`{failed.get('last_mlir_pass')}`")
    if data.get("added"):
        out.append(f"- **Passes only in the culprit's pipeline:** {', '.join(f'`{x}`' for x in data['added'])}")
    if data.get("removed"):
        out.append(f"- **Passes only in the parent's pipeline:** {', '.join(f'`{x}`' for x in data['removed'])}")
    if data.get("moved"):
        out.append(f"- **Passes run at another place:** {', '.join(f'`{x}`' for x in data['moved'])}")
    if data.get("renamed"):
        out.append(f"- **Passes renamed:** {', '.join(f'`{a}` → `{b}`' for a, b in data['renamed'])}")
    for stat in data.get("codegen") or []:  # a codegen regression: the pass behind each changed statistic
        where = f"first differs after `{stat['pass']}`" if stat.get("pass") else "no dumped pass"
        out.append(f"- **{stat['text']}:** {where} ({stat.get('note')})")
    if first:
        for key, title in (("output_diff", "Output of the pass, parent → culprit"),
                           ("parent_diff", "What the pass did at the parent"),
                           ("culprit_diff", "What the pass did at the culprit"),
                           ("input_diff", "Input of the pass, parent → culprit")):
            if first.get(key) is not None:
                out += ["", f"<details><summary>{title}</summary>", "", *_fence(first[key]), "", "</details>"]
    return out


def time_line(result: Mapping[str, Any]) -> str:
    """One line of a `narrow --time` result: the part that grew most, with both times."""
    grew = result.get("grew_most")
    n = result.get("samples") or {}
    fastest = f"fastest of {n.get('parent')} and {n.get('culprit')} compiles"
    if not grew:
        return f"no part of the compile grew ({fastest})"
    share = result.get("share")
    of = f", {share:.0%} of the timed growth" if share is not None else ""
    only = " (only in the culprit's compile)" if grew.get("only") == "culprit" else ""
    return (f"{grew['text']}: {grew['parent']:.3f} s → {grew['culprit']:.3f} s "
            f"(+{grew['change']:.3f} s{of}; {fastest}){only}")


def _seconds(side: Mapping[str, Any], key: str) -> str:
    value = side.get(key)
    return "?" if value is None else f"{value:.3f} s"


def time_lines(data: Mapping[str, Any] | None, level: str = "###") -> list[str]:
    """Markdown lines of the section "Where the compile time grew", or [] when the session's
    culprit was not timed (`narrow --time`)."""
    if not data:
        return []
    compile_ = data.get("compile") or {}
    p, c = compile_.get("parent") or {}, compile_.get("culprit") or {}
    versions = data.get("versions")
    if versions:
        sides = f"{versions.get('package')} {versions.get('parent')} and {versions.get('culprit')}"
    else:
        sides = f"the parent `{str(data.get('parent'))[:12]}` and the culprit `{str(data.get('culprit'))[:12]}`"
    n = data.get("samples") or {}
    out = ["", f"{level} Where the compile time grew", "",
           f"Kernel `{data.get('kernel')}` compiled {n.get('parent')} times with {sides}, each in a fresh process "
           "with MLIR_ENABLE_TIMING=1 and LLVM_ENABLE_TIMING=1; the fastest compile of each side counts.", "",
           f"- **Grew most:** {time_line(data)}",
           f"- **Compile:** {_seconds(p, 'seconds')} → {_seconds(c, 'seconds')} wall, "
           f"{_seconds(p, 'cpu_seconds')} → {_seconds(c, 'cpu_seconds')} of CPU"]
    parts = list(data.get("parts") or [])
    if parts:
        out += ["", "| part of the compile | parent (s) | culprit (s) | change (s) |", "| --- | --- | --- | --- |"]
        out += [f"| {x['text']} | {x['parent']:.3f} | {x['culprit']:.3f} | {x['change']:+.3f} |" for x in parts]
    return out
