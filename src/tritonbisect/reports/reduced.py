"""The report's section "Reduced kernel": a reduction stored in session.json ("extra" ->
"reduce", by `reduce --session` or `--reduce`) as Markdown. Pure rendering."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from tritonbisect.core.words import counted
from tritonbisect.oracles.kinds import OracleKind


def reduced_lines(data: Mapping[str, Any] | None, level: str = "###",
                  scrub: Callable[[str], str] = str) -> list[str]:
    """Markdown lines of the section, or [] when the session's oracle was not reduced;
    `scrub` hides the user's paths as the rest of the report does."""
    if not data:
        return []
    before, after = data.get("before") or {}, data.get("after") or {}
    out = ["", f"{level} Reduced kernel", ""]
    if "ir_ops" in before:
        sizes = (f"{before.get('ir_ops')} → {after.get('ir_ops')} IR operations, {before.get('kernel_lines')} → "
                 f"{after.get('kernel_lines')} lines")
    else:
        sizes = (f"{before.get('kernel_lines')} → {after.get('kernel_lines')} kernel lines, {before.get('elements')} → "
                 f"{after.get('elements')} tensor elements")
    out.append(f"Reduced with the parent `{str(data.get('parent'))[:12]}` (good, Triton {data.get('good_triton')}) "
               f"and the culprit `{str(data.get('culprit'))[:12]}` (bad, Triton {data.get('bad_triton')}) from cached "
               f"builds ({data.get('builds', 0)} built): {sizes}, "
               f"{counted(data.get('tests'), 'candidate')} in {data.get('seconds')}s; it still shows `{data.get('signature')}`.")
    out.append("")
    out.append(f"- **Reduced oracle:** `{scrub(str(data.get('oracle')))}` (and `issue.py` beside it)")
    out.append("")
    fence = "mlir" if data.get("kind") == OracleKind.IR else "python"
    out.extend([f"```{fence}", str(data.get("kernel_source") or "").rstrip(), "```"])
    return out
