"""What a phase's journal says about each commit: verdicts, repeats, a person's corrections.

Pure (journal records in, plain data out). The journal is append-only, so a correction is a
new record and this module is where it takes effect:

    {"role": "mark", "commit": C, "verdict": "good"|"bad"|"skip", "reason": why, ...}
        a person's verdict (`tritonbisect mark`, or an answer given by hand). It beats every
        test verdict of C, earlier or later; the latest mark of C wins.
    {"role": "undo", "undoes": SEQ, "reason": why}
        record SEQ no longer counts (a test run, a mark or an undo: undoing an undo restores).

Test verdicts come from the endpoint, search and confirmation steps. Each step is one
observation: with `--repeat N` a step's verdict is the majority of its runs.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from tritonbisect.core.outcome import Kind, Verdict
from tritonbisect.session.step_record import (
    ROLE_ENDPOINT,
    ROLE_MARK,
    ROLE_SEARCH,
    ROLE_UNDO,
    StepRecord,
)

# Not steps: a person's corrections.
CORRECTION_ROLES = (ROLE_MARK, ROLE_UNDO)
VERDICTS = (Verdict.GOOD, Verdict.BAD, Verdict.SKIP)  # "abort" says nothing of the commit
# The kind of a verdict given by a person rather than a test.
KIND_MANUAL = Kind.MANUAL


@dataclass
class Evidence:
    """The verdicts of one phase, after corrections."""

    counts: dict[str, tuple[int, int]] = field(default_factory=dict)  # commit -> (good, bad)
    skipped: set[str] = field(default_factory=set)  # a step said skip (e.g. does not build)
    marks: dict[str, str] = field(default_factory=dict)  # a person's verdicts, sticky
    latest: dict[str, str] = field(default_factory=dict)  # last test verdict, marks applied
    flaky_runs: bool = False  # a step's repeated runs disagreed (kind "flaky")
    undone: set[int] = field(default_factory=set)  # seqs that no longer count
    search_tests: int = 0  # search-role steps with a verdict (the test budget counts them)

    @property
    def disagreeing(self) -> list[str]:
        """Commits that were tested both good and bad (a flaky test, or a wrong range)."""
        return [c for c, (g, b) in self.counts.items() if g and b and c not in self.marks]

    @property
    def flakiness_seen(self) -> bool:
        return self.flaky_runs or bool(self.disagreeing)

    def verdict(self, commit: str) -> str | None:
        """One verdict per commit: the mark, else the majority of its test verdicts (ties go to
        the latest), else skip when it was only ever skipped."""
        if commit in self.marks:
            return self.marks[commit]
        g, b = self.counts.get(commit, (0, 0))
        if g != b:
            return (Verdict.GOOD if g > b else Verdict.BAD).value
        if g:
            return self.latest.get(commit)
        return Verdict.SKIP.value if commit in self.skipped else None


def _steps(records: Iterable[Mapping[str, Any] | StepRecord]) -> list[StepRecord]:
    return [r if isinstance(r, StepRecord) else StepRecord.of(r) for r in records]


def undone_seqs(records: Iterable[Mapping[str, Any] | StepRecord]) -> set[int]:
    """The seqs that undo records cancel, in journal order (undoing an undo restores)."""
    by_seq = {s.seq: s for s in _steps(records) if s.seq is not None}
    undone: set[int] = set()
    for seq in sorted(by_seq):
        step = by_seq[seq]
        if step.role != ROLE_UNDO or seq in undone or step.undoes is None or step.undoes in undone:
            continue
        undone.add(step.undoes)
        inner = by_seq.get(step.undoes)
        if inner is not None and inner.role == ROLE_UNDO and inner.undoes is not None:
            undone.discard(inner.undoes)  # undoing an undo brings its target back
    return undone


def evidence_of(records: Iterable[Mapping[str, Any] | StepRecord]) -> Evidence:
    """The Evidence of one phase's records (in journal order)."""
    steps = _steps(records)
    ev = Evidence(undone=undone_seqs(steps))
    counts: dict[str, list[int]] = {}
    for step in steps:
        if step.seq is not None and step.seq in ev.undone:
            continue
        verdict = step.verdict
        if not step.commit or verdict not in VERDICTS or verdict is None:
            continue
        commit = str(step.commit)
        if step.role == ROLE_MARK:
            ev.marks[commit] = verdict.value
            continue
        if not step.observed:
            continue
        if step.role == ROLE_ENDPOINT and step.perf.get("verify") and step.perf_undecided:
            # the A/B of the endpoints could not tell at its bound: the bad endpoint stays
            # bad, as the person said (session/endpoints.py)
            verdict = Verdict.BAD
        if verdict == Verdict.SKIP:
            ev.skipped.add(commit)
        else:
            pair = counts.setdefault(commit, [0, 0])
            pair[0 if verdict == Verdict.GOOD else 1] += 1
            if step.role == ROLE_SEARCH and step.tests:
                ev.search_tests += 1  # tests we ran (not verdicts replayed from a log)
        ev.latest[commit] = verdict.value
        if step.kind == Kind.FLAKY and not step.perf_undecided:
            # a perf step that could not tell at its bound is a skip, not runs that disagreed
            ev.flaky_runs = True
    ev.counts = {c: (g, b) for c, (g, b) in counts.items()}
    ev.latest.update(ev.marks)
    return ev


def classic_verdicts(ev: Evidence, in_set: Iterable[str]) -> dict[str, str]:
    """One verdict per commit of the set, for the classic search: marks first, else the
    latest test verdict (a re-test after a contradiction replaces the earlier one)."""
    keep = set(in_set)
    return {c: v for c, v in ev.latest.items() if c in keep}


def testable_skips(ev: Evidence) -> set[str]:
    """Skipped commits that never gave a good or bad verdict and are not marked."""
    return {c for c in ev.skipped if c not in ev.counts and c not in ev.marks}


def candidate_states(records: Iterable[Mapping[str, Any] | StepRecord], candidates: Iterable[str]) -> dict[str, str]:
    """What is known of each candidate of an inconclusive answer, in words: "does not build",
    "skipped (<kind>)", "marked bad", "tested bad", "tested good 1, bad 2", or "never tested"."""
    steps = _steps(records)
    ev = evidence_of(steps)
    skip_kind: dict[str, str] = {}
    for step in steps:
        if step.verdict == Verdict.SKIP and step.observed and step.commit:
            skip_kind[step.commit] = str(step.raw.get("kind") or "skip")
    out: dict[str, str] = {}
    for commit in candidates:
        if commit in ev.marks:
            out[commit] = f"marked {ev.marks[commit]}"
        elif commit in ev.counts:
            g, b = ev.counts[commit]
            out[commit] = f"tested {'good' if g else 'bad'}" if not (g and b) else f"tested good {g}, bad {b}"
        elif commit in skip_kind:
            kind = skip_kind[commit]
            out[commit] = "does not build" if kind == "build_failed" else f"skipped ({kind})"
        else:
            out[commit] = "never tested"
    return out


def candidates_summary(states: Mapping[str, str]) -> str:
    """`3 do not build, 1 tested bad, 2 never tested` for the states of `candidate_states`."""
    counts: dict[str, int] = {}
    for state in states.values():
        key = state.split(" (")[0] if state.startswith("skipped") else state
        counts[key] = counts.get(key, 0) + 1
    parts = []
    for state, n in counts.items():
        if state == "does not build":
            parts.append(f"{n} {'does' if n == 1 else 'do'} not build")
        elif state == "never tested":
            parts.append(f"{n} never tested")
        else:
            parts.append(f"{n} {state}")
    return ", ".join(parts)
