"""What a session says about the LLVMs (and the NVIDIA toolchain) its culprits moved.

The domains keep, per phase, `session.extra["pins"][phase]`: the culprit's pin changes
(each with the line that describes it: which LLVM, its repository, old and new), the fork
patches a descent replayed at every step, and the verdicts of one-step A/B checks. This
module only words them, for `status`, `report` and the run's summary; `--json` carries them
as they are.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pragma: no cover
    from tritonbisect.session.session import Session

EXTRA = "pins"


def phase_pins(session: Session, phase: str) -> dict[str, Any] | None:
    entry = (session.extra.get(EXTRA) or {}).get(phase)
    return entry if isinstance(entry, dict) else None


def pin_lines(entry: Mapping[str, Any] | None) -> list[str]:
    """One line per change of the culprit's pins, then the phase's notes (replayed patches,
    A/B verdicts)."""
    if not entry:
        return []
    commit = str(entry.get("commit") or "")[:12]
    out = [f"{commit} {c.get('describe')}".strip() for c in entry.get("changes") or [] if c.get("describe")]
    out += [str(note) for note in entry.get("notes") or []]
    return out


def summary_lines(session: Session) -> list[str]:
    """Every phase's pin lines, for the summary a run prints at its end."""
    out: list[str] = []
    for name, entry in (session.extra.get(EXTRA) or {}).items():
        out += [f"{name}: {line}" for line in pin_lines(entry)]
    return out


def report_lines(session: Session) -> list[str]:
    """Markdown bullets of the report."""
    out: list[str] = []
    for name, entry in (session.extra.get(EXTRA) or {}).items():
        out += [f"- **Pins** (`{name}`): {line}" for line in pin_lines(entry)]
    return out
