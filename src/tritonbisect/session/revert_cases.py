"""--verify-revert for a phase whose test reports cases: each distinct culprit reverted at the
bad commit (one build and one test per culprit, whatever the number of cases it broke), and
each case's verdict read from the revert of its own culprit:

    fixes        the case passes with its culprit reverted
    still-fails  the revert applies and the case still fails: another commit broke it too
    conflict     the culprit's revert does not apply at the bad commit (nothing is built)
    untestable   the reverted tree does not build, or its test did not judge the case

The revert step is journaled (role "revert", session/revert_check.py), so a resumed session
runs it once. The search for the second culprit behind a still-failing case is single-case
(session/revert_check.py does it for a test without cases): here those cases are named.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tritonbisect.core.outcome import Verdict
from tritonbisect.session.case_answer import cases_state
from tritonbisect.session.case_evidence import case_view
from tritonbisect.session.handle import SessionHandle
from tritonbisect.session.phases import PhaseState
from tritonbisect.session.revert_check import (
    CONFLICT,
    FIXES,
    STILL_FAILS,
    UNTESTABLE,
    applies_to,
    journaled,
    revert_line,
    revert_state,
    run_verify,
    verdict_of,
)


def has_cases(session: SessionHandle, phase: PhaseState) -> bool:
    """Whether the phase's answer is one per case (its test reports cases)."""
    state = cases_state(session, phase.spec.name)
    return bool(state and state.get("culprits"))


def case_verdict(rec: Mapping[str, Any], case: str) -> str:
    """One case's revert verdict from the journaled revert step of its culprit."""
    overall, _ = verdict_of(rec)
    if overall == CONFLICT:
        return CONFLICT
    verdict = case_view(dict(rec), case).get("verdict")
    if verdict == Verdict.GOOD:
        return FIXES
    if verdict == Verdict.BAD:
        return STILL_FAILS
    return UNTESTABLE


def _together(verdicts: list[str]) -> str:
    """A culprit's verdict over its cases: the revert fixes it when it fixes every one."""
    for verdict in (CONFLICT, STILL_FAILS, UNTESTABLE):
        if verdict in verdicts:
            return verdict
    return FIXES


def after_phase(session: SessionHandle, phase: PhaseState, ui: Any) -> None:
    """Revert each distinct culprit of the phase's cases at the bad commit; every case gets
    the verdict of its own culprit's revert (see the module docstring)."""
    if not applies_to(session, phase):
        return
    state = cases_state(session, phase.spec.name)
    if state is None:
        return
    cases: dict[str, dict[str, Any]] = state["cases"]
    spec = phase.spec
    entries: list[dict[str, Any]] = []
    for culprit in state.get("culprits") or []:
        names = [n for n, e in cases.items() if e.get("culprit") == culprit]
        rec = journaled(session, spec.name, spec.bad, [culprit])
        if rec is None:
            ui.note(f"--verify-revert: building the bad commit {spec.bad[:12]} with {culprit[:12]} reverted "
                    f"(1 build) and testing its {len(names)} case{'s' if len(names) != 1 else ''} there")
            rec = run_verify(session, phase, [culprit], ui)
            if rec is None:
                break
        per_case = {name: case_verdict(rec, name) for name in names}
        for name, verdict in per_case.items():
            cases[name]["revert"] = verdict
        _, files = verdict_of(rec)
        entry: dict[str, Any] = {
            "culprit": culprit,
            "phase": spec.name,
            "confidence": "low" if any(cases[n].get("confidence") == "low" for n in names) else "high",
            "revert": _together(list(per_case.values())),
            "reverted": [culprit],
            "revert_commit": (rec.get("revert_tree") or {}).get("commit"),
            "reason": rec.get("reason"),
            "cases": per_case,
        }
        if files:
            entry["files"] = files
        entries.append(entry)
        ui.note(revert_line(entry))
    revert_state(session)["chains"][spec.name] = entries
    session.save()
    still = [n for n, e in cases.items() if e.get("revert") == STILL_FAILS]
    if still:
        ui.note(f"--verify-revert: {', '.join(still[:8])}{' ...' if len(still) > 8 else ''} "
                f"still fail{'s' if len(still) == 1 else ''} with the culprit reverted; the search for a second "
                "culprit is single-case: bisect again with a test that reports only those cases")
