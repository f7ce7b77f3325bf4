"""Where a failing compile stopped: in an MLIR pass, or after the MLIR pipeline (LLVM's backend,
ptxas, the AMD linker), read from the compiler's own stage in the child's stack.

Pure (the child's stderr in, a dict out). Triton compiles in stages, one method of its backend
each (`make_ttir`, `make_ttgir`, `make_llir`, then `make_ptx` / `make_amdgcn` and `make_cubin` /
`make_hsaco`); the MLIR passes, which MLIR_ENABLE_DUMP shows, all run in the first three. A
crash prints the stack of the stage it died in (faulthandler: `line 419 in make_ptx`), an
exception its traceback (`line 419, in make_ptx`). A compile that dies in `make_ptx` ran every
MLIR pass: the last one dumped (LLVMDIScope, say) is not where it failed.
"""

from __future__ import annotations

import re
from typing import Any

_FRAME = re.compile(r"line \d+,? in (make_[a-z0-9_]+)")
# the stages after the MLIR pipeline, and where they run
AFTER_MLIR = {
    "make_ptx": "LLVM's backend (LLVM IR to PTX)",
    "make_amdgcn": "LLVM's backend (LLVM IR to AMDGCN)",
    "make_cubin": "ptxas (PTX to cubin)",
    "make_hsaco": "the AMD linker (AMDGCN to hsaco)",
}


def stage_of(stderr: str) -> str | None:
    """The compiler stage the child's stack names (the innermost `make_*` frame), or None."""
    found = _FRAME.findall(stderr)
    if not found:
        return None
    after = [s for s in found if s in AFTER_MLIR]
    return after[0] if after else found[-1]


def failure(stage: str | None, reason: str | None, last_pass: str | None) -> dict[str, Any]:
    """What to say of the culprit's failed compile: its stage, whether it was past the MLIR
    pipeline (then `last_pass` ran to its end and is not the place), and its message."""
    after = stage in AFTER_MLIR
    return {
        "stage": stage,
        "after_mlir": after,
        "where": AFTER_MLIR.get(stage or ""),
        "message": reason,
        "last_mlir_pass": last_pass,
    }


def failure_line(failed: dict[str, Any]) -> str:
    """One line: after the MLIR pipeline, where, and the compiler's message."""
    ran = f"; every MLIR pass ran, the last {failed['last_mlir_pass']}" if failed.get("last_mlir_pass") else ""
    return f"after the MLIR pipeline, in {failed['where']}, Triton's {failed['stage']} stage: {failed.get('message')}{ran}"
