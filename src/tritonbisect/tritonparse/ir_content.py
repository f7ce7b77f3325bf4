"""The IR a compilation event recorded (`file_content`): the kernel's TTIR and TTGIR text."""

from __future__ import annotations

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


def ttir_text(payload: dict) -> str | None:
    files = payload.get("file_content")
    if isinstance(files, dict):
        for name, text in files.items():
            if str(name).endswith(".ttir") and isinstance(text, str):
                return text
    return None
