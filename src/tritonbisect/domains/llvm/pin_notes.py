"""What the session keeps about the pins a culprit moves: `session.extra["pins"][phase]`
(the changes, and notes: replayed fork patches, A/B verdicts), which reports/pins.py words."""

from __future__ import annotations

import click

from tritonbisect.core.errors import InputError
from tritonbisect.core.history import History
from tritonbisect.domains.triton.bisector import pin_set_changes_at
from tritonbisect.domains.triton.pin_set import CORE, PinSetChange

PINS = "pins"


def record_pin_changes(session, phase: str, history: History, culprit: str) -> list[PinSetChange]:
    """Keep (session.extra["pins"], reports/pins.py) and say what the culprit does to each
    pinned LLVM and to the NVIDIA toolchain."""
    try:
        changes = pin_set_changes_at(history, culprit)
    except InputError:
        changes = []
    entry = session.extra.setdefault(PINS, {}).setdefault(phase, {})
    entry.update(commit=culprit, changes=[c.to_dict() for c in changes])
    session.save()
    for change in changes:
        if change.name != CORE:  # the core LLVM's own lines follow (bump, build number, file)
            click.echo(f"{culprit[:12]} {change.describe()}", err=True)
    return changes


def backend_hint(change: PinSetChange) -> str:
    """How to descend into a backend's LLVM the session was not given."""
    assert change.new is not None
    return (f"to bisect {change.new.repository} between the two {change.label} pins, give "
            f"--{change.name}-llvm-dir DIR (a checkout of {change.new.repository})")


def note_pins(session, phase: str, note: str) -> None:
    """A line the status, report and summary show with the phase (reports/pins.py)."""
    entry = session.extra.setdefault(PINS, {}).setdefault(phase, {})
    notes = entry.setdefault("notes", [])
    if note not in notes:
        notes.append(note)
    session.save()
