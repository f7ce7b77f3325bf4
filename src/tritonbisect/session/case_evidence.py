"""What a phase's journal says about each case of a test that reports several (one per kernel,
say): a record as one case sees it, each case's evidence, and which cases the endpoints show
regressed.

Pure (journal records in, plain data out). A step's record holds its overall kind and verdict
and, when the test reported cases, `"cases": {name: {"kind", "verdict"}}` (executors/runner.py).
As one case sees a step:

  - the test reported the case: its own kind and verdict;
  - no test ran (the build failed, or the step never got that far): the step's own verdict,
    a skip under the default policy (a build failure is a skip for every case);
  - the test ran and did not report the case: skip (it said nothing about that case).

A person's marks and undos are not steps: they apply to every case as they stand.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from tritonbisect.core.outcome import Verdict
from tritonbisect.session.evidence import (
    CORRECTION_ROLES,
    Evidence,
    evidence_of,
    undone_seqs,
)
from tritonbisect.session.journal import ROLE_ENDPOINT
from tritonbisect.session.step_record import OBSERVED_ROLES


def reported(rec: Mapping[str, Any]) -> dict[str, Mapping[str, str]]:
    """The cases a step's record holds (empty: none reported)."""
    cases = rec.get("cases")
    return dict(cases) if isinstance(cases, Mapping) else {}


def case_view(rec: Mapping[str, Any], name: str) -> dict[str, Any]:
    """The record as the case `name` sees it (see the module docstring)."""
    if rec.get("role") in CORRECTION_ROLES or rec.get("verdict") == Verdict.ABORT:
        return dict(rec)  # a mark, an undo, an aborted step: the same for every case
    out = dict(rec)
    own = reported(rec).get(name)
    if own is not None:
        out["kind"], out["verdict"] = own.get("kind"), own.get("verdict")
    elif rec.get("tests"):
        out["kind"], out["verdict"] = "missing", Verdict.SKIP.value
    return out


def case_records(records: Iterable[Mapping[str, Any]], name: str) -> list[dict[str, Any]]:
    return [case_view(rec, name) for rec in records]


def case_evidence(records: Iterable[Mapping[str, Any]], name: str) -> Evidence:
    """The Evidence of one case (session/evidence.py), corrections applied."""
    return evidence_of(case_records(records, name))


def case_tests(records: Sequence[Mapping[str, Any]], name: str) -> int:
    """Steps whose test gave the case a verdict, good or bad (after corrections)."""
    undone = undone_seqs(records)
    return sum(
        1 for rec in records
        if rec.get("role") in OBSERVED_ROLES and int(rec.get("seq") or 0) not in undone
        and (reported(rec).get(name) or {}).get("verdict") in (Verdict.GOOD, Verdict.BAD)
    )


@dataclass
class CaseSplit:
    """The cases of a phase, as its endpoints judge them."""

    regressed: list[str] = field(default_factory=list)  # good at the good commit, bad at the bad one
    left_out: dict[str, str] = field(default_factory=dict)  # bad-endpoint failures the good one cannot bracket: why
    not_regressed: list[str] = field(default_factory=list)  # not bad at the bad commit


def endpoint_cases(records: Sequence[Mapping[str, Any]], bad: str) -> list[str]:
    """The cases the bad endpoint's steps reported, in the order the test gave them."""
    names: dict[str, None] = {}
    for rec in records:
        if rec.get("role") == ROLE_ENDPOINT and rec.get("commit") == bad:
            names.update(dict.fromkeys(reported(rec)))
    return list(names)


def split_cases(records: Sequence[Mapping[str, Any]], good: str, bad: str,
                only: Collection[str] | None = None) -> CaseSplit | None:
    """Which cases regressed between the endpoints; None when the bad endpoint reported no
    case (the phase then has one answer, as every test without cases). `only`: the cases
    the phase searches (the others are not its business); None: all."""
    names = endpoint_cases(records, bad)
    if not names:
        return None
    if only is not None:
        names = [n for n in names if n in only]
    ends = [r for r in records if r.get("role") == ROLE_ENDPOINT or r.get("role") in ("mark", "undo")]
    split = CaseSplit()
    for name in names:
        ev = case_evidence(ends, name)
        if ev.verdict(bad) != Verdict.BAD:
            split.not_regressed.append(name)
            continue
        at_good = ev.verdict(good)
        if at_good == Verdict.GOOD:
            split.regressed.append(name)
        else:
            split.left_out[name] = _why(ends, name, good, at_good)
    return split


def _why(records: Sequence[Mapping[str, Any]], name: str, good: str, verdict: str | None) -> str:
    """Why a case the bad endpoint fails is left out, in words."""
    kinds = [case_view(r, name).get("kind") for r in records
             if r.get("commit") == good and r.get("role") == ROLE_ENDPOINT and r.get("verdict") != Verdict.ABORT]
    kind = next((k for k in reversed(kinds) if k), None)
    if verdict is None or kind is None:
        return "not tested at the good commit"
    if kind == "missing":
        return "not reported at the good commit"
    if verdict == Verdict.BAD:
        return f"already {kind} at the good commit"
    return f"skipped at the good commit ({kind})"


def case_verdicts(records: Sequence[Mapping[str, Any]], names: Iterable[str], in_set: Iterable[str]) -> dict[str, dict[str, str]]:
    """One verdict per commit of the set for each case: a person's mark, else the latest test
    verdict (as evidence.classic_verdicts for one answer)."""
    keep = set(in_set)
    out: dict[str, dict[str, str]] = {}
    for name in names:
        ev = case_evidence(records, name)
        out[name] = {c: v for c, v in ev.latest.items() if c in keep}
    return out
