"""The journal as one phase sees it: that phase's records in order, and the numbering of new
ones (a record's `seq` is unique across the whole session, its phases included)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from tritonbisect.session.evidence import Evidence, evidence_of
from tritonbisect.session.journal import Journal
from tritonbisect.session.step_record import StepRecord

if TYPE_CHECKING:  # pragma: no cover
    from tritonbisect.executors.runner import StepResult


class PhaseJournal:
    """Appends a phase's records durably and keeps them for the decisions that follow."""

    def __init__(self, journal: Journal, phase: str, all_records: Sequence[dict[str, Any]]) -> None:
        self.journal = journal
        self.phase = phase
        self.records: list[dict[str, Any]] = [r for r in all_records if r.get("phase") == phase]
        self._seq = max((int(r.get("seq", 0)) for r in all_records), default=0)

    def next_seq(self) -> int:
        self._seq += 1
        return self._seq

    def append(self, rec: dict[str, Any]) -> dict[str, Any]:
        """Write `rec` (fsynced) and keep it; returns it."""
        self.journal.append(rec)
        self.records.append(rec)
        return rec

    def step(self, result: StepResult, role: str, round_: int | None, extra: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """The record of a finished step (a runner's StepResult), appended."""
        rec: dict[str, Any] = {"seq": self.next_seq(), "phase": self.phase, "role": role, "round": round_}
        rec.update(result.to_record())
        if extra:
            rec.update(extra)
        return self.append(rec)

    def steps(self) -> list[StepRecord]:
        """The phase's records, typed."""
        return [StepRecord.of(r) for r in self.records]

    def evidence(self) -> Evidence:
        return evidence_of(self.records)

    def __len__(self) -> int:
        return len(self.records)
