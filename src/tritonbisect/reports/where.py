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
