"""Correcting a session: a person's mark of a commit, or taking a journal record back.

Both append a record (session/evidence.py says how it takes effect); nothing already in the
journal is rewritten. The phase the correction touches is reopened (its result no longer
follows from its verdicts), later phases that grew out of that result are superseded, and
`tritonbisect resume` continues from the corrected state.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from tritonbisect.core.errors import InputError
from tritonbisect.session.evidence import (
    KIND_MANUAL,
    ROLE_MARK,
    ROLE_UNDO,
    evidence_of,
    undone_seqs,
)
from tritonbisect.session.phases import STATUS_SUPERSEDED

if TYPE_CHECKING:  # pragma: no cover
    from tritonbisect.session.session import Session

MARK_VERDICTS = ("good", "bad", "skip")


@dataclass
class Located:
    """A commit found in one phase of a session."""

    index: int  # of the phase in session.phases()
    phase: Any  # PhaseState
    sha: str
    cands: Any  # search.Candidates of the phase


def phase_candidates(phase: Any) -> Any:
    """The search.Candidates of a phase (as the phase itself computes them)."""
    from tritonbisect.core.history import History
    from tritonbisect.search.classic import Candidates
    from tritonbisect.session.phase_run import candidates_of

    spec = phase.spec
    if spec.candidates:
        return Candidates.linear(spec.candidates)
    return candidates_of(History(spec.repo), spec.good, spec.bad, first_parent=spec.first_parent)


def locate(session: Session, rev: str, phase_name: str | None = None) -> Located:
    """The phase whose range holds `rev` (the latest such phase, or the one named)."""
    from tritonbisect.core.history import History

    phases = session.phases()
    if phase_name is not None:
        names = [p.spec.name for p in phases]
        if phase_name not in names:
            raise InputError(f"session {session.id} has no phase {phase_name!r} (it has {', '.join(names)})")
    resolved_any = False
    for index in range(len(phases) - 1, -1, -1):
        phase = phases[index]
        if phase_name is not None and phase.spec.name != phase_name:
            continue
        if phase.status == STATUS_SUPERSEDED:
            continue
        try:
            sha = History(phase.spec.repo).resolve(rev)
        except Exception:  # noqa: BLE001 - another phase's repository may know it
            continue
        resolved_any = True
        if sha in (phase.spec.good, phase.spec.bad):
            which = "good" if sha == phase.spec.good else "bad"
            raise InputError(
                f"{sha[:12]} is the {which} endpoint of phase {phase.spec.name}: a different "
                "range needs a new session (tritonbisect run --good ... --bad ...)"
            )
        cands = phase_candidates(phase)
        if sha in set(cands.order):
            return Located(index, phase, sha, cands)
    if not resolved_any:
        raise InputError(f"unknown commit {rev!r} in the repositories of session {session.id}")
    raise InputError(
        f"{rev} is not between the good and the bad commit of "
        + (f"phase {phase_name}" if phase_name else f"any phase of session {session.id}")
    )


def _reopen(session: Session, where: Located, why: str) -> None:
    """The phase's result no longer stands: back to pending; later phases are superseded."""
    from tritonbisect.session.phases import STATUS_PENDING

    phases = session.phases()
    phase = where.phase
    phase.status = STATUS_PENDING
    phase.culprit = None
    phase.candidates = []
    phase.confidence = None
    phase.reason = why
    for later in phases[where.index + 1 :]:
        if later.status != STATUS_SUPERSEDED:
            later.status = STATUS_SUPERSEDED
            later.reason = f"superseded: {why}"
    session.current_phase = where.index
    session.extra.get("posterior", {}).pop(phase.spec.name, None)
    session.save()


def _next_seq(records: Sequence[Mapping[str, Any]]) -> int:
    return max((int(r.get("seq") or 0) for r in records), default=0) + 1


def mark(session: Session, rev: str, verdict: str, why: str | None = None,
         phase_name: str | None = None) -> dict[str, Any]:
    """Record a person's verdict of a commit (a new journal record) and reopen its phase."""
    from tritonbisect.core.clock import now_iso
    from tritonbisect.search import bayes

    if verdict not in MARK_VERDICTS:
        raise InputError(f"a mark is one of {', '.join(MARK_VERDICTS)}, not {verdict!r}")
    with session.locked():
        where = locate(session, rev, phase_name)
        records = session.records()
        mine = [r for r in records if r.get("phase") == where.phase.spec.name]
        ev = evidence_of(mine)
        marks = {**ev.marks, where.sha: verdict}
        try:
            bayes.posterior(where.cands, {}, marks=marks)
        except ValueError:
            others = ", ".join(f"{c[:12]} {v}" for c, v in ev.marks.items() if v != "skip")
            raise InputError(
                f"marking {where.sha[:12]} {verdict} contradicts the other marks ({others}): "
                "a good commit cannot descend from a bad one; undo one of them first"
            ) from None
        was = ev.verdict(where.sha)
        rec = {
            "seq": _next_seq(records), "phase": where.phase.spec.name, "role": ROLE_MARK,
            "commit": where.sha, "verdict": verdict, "kind": KIND_MANUAL,
            "reason": why or f"marked {verdict} by hand", "was": was,
            "finished": now_iso("milliseconds"), "tests": [], "build": None,
        }
        session.journal.append(rec)
        _reopen(session, where, f"reopened: {where.sha[:12]} marked {verdict}"
                + (f" (was {was})" if was and was != verdict else ""))
    return rec


def undo(session: Session, seq: int | None = None, why: str | None = None) -> tuple[dict[str, Any], dict[str, Any]]:
    """Take back journal record `seq` (default: the latest verdict still in force, given by
    hand or by a test) with a new record; returns (the undo record, the record undone)."""
    from tritonbisect.session.manual import undo_record

    with session.locked():
        records = session.records()
        undone = undone_seqs(records)
        if seq is None:
            target = next(
                (r for r in reversed(records)
                 if r.get("verdict") in MARK_VERDICTS and int(r.get("seq") or 0) not in undone
                 and r.get("role") != ROLE_UNDO),
                None,
            )
            if target is None:
                raise InputError(f"session {session.id} has no verdict to undo")
        else:
            target = next((r for r in records if int(r.get("seq") or -1) == seq), None)
            if target is None:
                raise InputError(f"session {session.id} has no journal record #{seq}")
            if seq in undone:
                raise InputError(f"record #{seq} is already undone")
        phase_name = str(target.get("phase"))
        phases = session.phases()
        index = next((i for i, p in enumerate(phases) if p.spec.name == phase_name), None)
        if index is None:
            raise InputError(f"record #{target.get('seq')} belongs to no phase of session {session.id}")
        rec = undo_record(_next_seq(records), phase_name, target,
                          why or f"undid #{target.get('seq')} by hand")
        session.journal.append(rec)
        phase = phases[index]
        what = f"#{target.get('seq')} ({str(target.get('commit') or '')[:12]} {target.get('verdict')})"
        if phase.status != STATUS_SUPERSEDED:
            where = Located(index, phase, str(target.get("commit") or ""), None)
            _reopen(session, where, f"reopened: undid {what}")
    return rec, target
