"""The IR a compilation event recorded (`file_content`): the kernel's TTIR and TTGIR text."""

from __future__ import annotations

from typing import Any

from tritonbisect.core.errors import InputError

IR_STAGES = ("ttir", "ttgir")


def ir_texts(payload: dict) -> dict[str, str]:
    """The MLIR stages of a compilation event's `file_content` (stage -> text)."""
    files = payload.get("file_content")
    out: dict[str, str] = {}
    if isinstance(files, dict):
        for name, text in files.items():
            stage = str(name).rsplit(".", 1)[-1]
            if stage in IR_STAGES and isinstance(text, str) and stage not in out:
                out[stage] = text
    return out


def recorded_ir(comp: Any, kernel: str, stage: str) -> str:
    """The `stage` IR a compilation event (reader.Compilation) recorded; InputError naming the
    stages it does hold when that one is missing."""
    text = comp.ir.get(stage)
    if not text:
        have = sorted(comp.ir)
        instead = [f"--from {h}" for h in have if h in IR_STAGES] + ["--from source"]
        raise InputError(f"kernel '{kernel}' has no {stage} in its compilation event ({comp.file}:{comp.line}; "
                         f"IR stages recorded: {', '.join(have) or 'none'}); use {' or '.join(instead)}")
    return text
