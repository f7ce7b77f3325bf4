"""Is a candidate interesting? Under the good Triton it must run clean (its outputs become
the reference); under the bad one it must fail in the *same* way as the original: the same
outputs differing from the good Triton's, the same normalised error, the same signal."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

BROKEN = "broken"  # fails under the good Triton: not a reduction of the bug
PASSES = "pass"  # both Tritons agree: the difference is gone


@dataclass(frozen=True)
class Verdict:
    signature: str  # what the bad Triton did, normalised; BROKEN or PASSES otherwise
    reason: str
    seconds: float
    versions: tuple[str, str] = ("?", "?")  # the good and the bad Triton's __version__

    def shows(self, wanted: str) -> bool:
        return self.signature == wanted and wanted not in (BROKEN, PASSES)


def normalise_error(reason: str) -> str:
    """An error message without what reducing the kernel changes: source excerpts, line and
    column numbers, addresses, paths, numbers."""
    text = re.sub(r"^(the kernel does not compile|the launch failed|the embedded kernel source does not load): ", "", reason)
    if "^" in text:  # Triton's CompilationError: source excerpt, a caret line, then the message
        head = text.split(":", 1)[0]
        text = head + ": " + text.rsplit("^", 1)[1]
    text = re.sub(r"0x[0-9a-fA-F]+", "0x?", text)
    text = re.sub(r"(/[\w.\-\[\]]+)+", "<path>", text)
    text = re.sub(r"\b\d+\b", "N", text)
    return " ".join(text.split())[:300]


def _assertion(log: Path) -> str:
    try:
        lines = log.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return ""
    hits = [line for line in lines if "Assertion" in line or "assert" in line.lower() and "failed" in line.lower()]
    return normalise_error(hits[-1]) if hits else ""


def triton_version(result: Path) -> str:
    return str(_read(result).get("triton_version") or "?")


def _read(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def bad_signature(rc: int, signal: int | None, result: Path, log: Path) -> tuple[str, str]:
    """(signature, reason) of the bad Triton's run."""
    if signal is not None or rc < 0:
        text = _assertion(log)
        sig = f"crash: signal {signal if signal is not None else -rc}" + (f": {text}" if text else "")
        return sig, sig
    data = _read(result)
    status = str(data.get("status") or ("timeout" if rc == 124 else "no result"))
    reason = str(data.get("reason") or f"exit {rc}, no result written")
    if status == "pass":
        return PASSES, reason
    if status == "mismatch":
        names = sorted({str(r["name"]).split("#fresh")[0] for r in data.get("arguments") or []
                        if r.get("status") == "mismatch"})
        return "mismatch: " + ",".join(names), reason
    if status in ("compile_error", "runtime_error", "crash"):
        return f"{status}: {normalise_error(reason)}", reason
    if status == "out_of_resources":  # which limits, not by how much: a smaller kernel still past them counts
        limits = sorted({str(o.get("limit")) for o in data.get("over_limits") or [] if isinstance(o, dict)})
        return "out_of_resources: " + ", ".join(limits), reason
    if status in ("codegen", "perf"):  # a compile oracle's codegen check ("perf" in older oracles): which statistics moved, and which way
        moved = sorted(f"{d['metric']} {'up' if d.get('new', 0) > d.get('old', 0) else 'down'}"
                       for d in data.get("differences") or [] if d.get("over_threshold"))
        return "codegen: " + ", ".join(moved), reason
    return status, reason
