"""--verify-revert for a phase whose test reports cases: each distinct culprit reverted at the
bad commit (one build and one test per culprit, whatever the number of cases it broke), and
each case's verdict read from the revert of its own culprit:

    fixes        the case passes with its culprit reverted
    still-fails  the revert applies and the case still fails: another commit broke it too
    conflict     the culprit's revert does not apply at the bad commit (nothing is built)
    untestable   the reverted tree does not build, or its test did not judge the case

The revert step is journaled (role "revert", session/revert_check.py), so a resumed session
runs it once. The cases a culprit's revert leaves failing are bisected again, per culprit:
over (culprit, bad] with the culprit reverted at every step, searching those cases only
(`PhaseSpec.only_cases`), in a phase named `<root>-after-<n>`; each second culprit is
confirmed and verified in turn (with both reverted), up to MAX_CULPRITS a case. Each case
keeps its chain in its entry (`"culprits"`: one per culprit found for it, first first), and
the root phase's revert chain lists every culprit of the tree, follow-ups after the root's.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tritonbisect.core.outcome import Verdict
from tritonbisect.session.case_answer import cases_state
from tritonbisect.session.case_evidence import case_view
from tritonbisect.session.handle import SessionHandle
from tritonbisect.session.observer import Display
from tritonbisect.session.phases import RESUMABLE, STATUS_RUNNING, PhaseSpec, PhaseState
from tritonbisect.session.revert_check import (
    CONFLICT,
    FIXES,
    MAX_CULPRITS,
    STILL_FAILS,
    UNTESTABLE,
    applies_to,
    journaled,
    revert_config,
    revert_line,
    revert_state,
    reverts_of,
    root_of,
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


def after_phase(session: SessionHandle, phase: PhaseState, ui: Display) -> None:
    """Verify the culprits of the cases of `phase`'s root phase, and search again for the
    cases a revert leaves failing (see the module docstring). Idempotent: verify steps are
    read from the journal and follow-up phases found again, so a resume that ends in a
    follow-up walks the whole tree once more and runs only what is missing."""
    names = [p.spec.name for p in session.phases()]
    root = root_of(session, phase.spec.name)
    start = next((p for p in session.phases() if p.spec.name == root), phase)
    _verify_tree(session, start, root, ui)
    state = revert_state(session)
    state["chains"][root] = [e for name in _tree(session, root) for e in (state.get("cases_chains") or {}).get(name, [])]
    _case_chains(session, root)
    session.save()
    if root in names:  # the session's answer stays the root's: its phase is the current one again
        session.current_phase = names.index(root)
        session.save()


def is_follow_up(session: SessionHandle, phase: PhaseState) -> bool:
    """Whether `phase` searches again for cases a revert did not fix."""
    return phase.spec.only_cases is not None and root_of(session, phase.spec.name) != phase.spec.name


def _verify_tree(session: SessionHandle, phase: PhaseState, root: str, ui: Display) -> None:
    """Verify each culprit of `phase`'s cases; search again for the cases still failing."""
    if not applies_to(session, phase):
        return
    state = cases_state(session, phase.spec.name)
    if state is None:
        return
    cases: dict[str, dict[str, Any]] = state["cases"]
    spec = phase.spec
    _, _, earlier = reverts_of(spec)
    entries: list[dict[str, Any]] = []
    for culprit in state.get("culprits") or []:
        names = [n for n, e in cases.items() if e.get("culprit") == culprit]
        reverts = [culprit, *earlier]  # newest first: the later change is undone first
        rec = journaled(session, spec.name, spec.bad, reverts)
        if rec is None:
            ui.note(f"--verify-revert: building the bad commit {spec.bad[:12]} with {_short(reverts)} reverted "
                    f"(1 build) and testing its {len(names)} case{'s' if len(names) != 1 else ''} there")
            rec = run_verify(session, phase, reverts, ui)
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
            "reverted": reverts,
            "revert_commit": (rec.get("revert_tree") or {}).get("commit"),
            "reason": rec.get("reason"),
            "cases": per_case,
        }
        if files:
            entry["files"] = files
        entries.append(entry)
        ui.note(revert_line(entry))
    revert_state(session).setdefault("cases_chains", {})[spec.name] = entries
    session.save()
    for entry in entries:
        still = [n for n, v in entry["cases"].items() if v == STILL_FAILS]
        if not still:
            continue
        if len(entry["reverted"]) >= MAX_CULPRITS:
            ui.note(f"--verify-revert: {len(entry['reverted'])} culprits found for {', '.join(still[:8])}; "
                    "not looking for more")
            continue
        ui.note(f"looking for the next culprit of {', '.join(still[:8])}{' ...' if len(still) > 8 else ''}: "
                f"bisecting ({entry['culprit'][:12]}, {spec.bad[:12]}] with {_short(entry['reverted'])} "
                "reverted at every step")
        follow = _next_phase(session, phase, root, entry["culprit"], still)
        if follow.status in RESUMABLE:
            from tritonbisect.session.phase_run import PhaseRun

            follow.status = STATUS_RUNNING
            session.save()
            PhaseRun(session, follow, ui).run()
            session.save()
        _verify_tree(session, follow, root, ui)


def _next_phase(session: SessionHandle, phase: PhaseState, root: str, culprit: str, cases: list[str]) -> PhaseState:
    """The phase over (culprit, bad] with `culprit` (and the culprits before it) reverted,
    searching `cases` only: made once, found again by a resume."""
    inner_name, inner_config, earlier = reverts_of(phase.spec)
    reverts = [culprit, *earlier]
    state = revert_state(session)
    for other in session.phases():
        if (state["root_of"].get(other.spec.name) == root and other.spec.recipe_name == "revert"
                and other.spec.recipe_config.get("reverts") == reverts
                and other.spec.bad == phase.spec.bad and set(other.spec.only_cases or ()) == set(cases)):
            return other
    spec = PhaseSpec(
        name=f"{root}-after-{len(reverts)}",
        repo=phase.spec.repo,
        good=culprit,
        bad=phase.spec.bad,
        recipe_name="revert",
        recipe_config=revert_config(inner_name, inner_config, reverts),
        first_parent=phase.spec.first_parent,
        prefer_cached=phase.spec.prefer_cached,
        only_cases=list(cases),
    )
    session.append_phase(spec)
    state["root_of"][spec.name] = root
    state.setdefault("follow_ups", {}).setdefault(phase.spec.name, {})[culprit] = spec.name
    session.save()
    return session.phases()[-1]


def _tree(session: SessionHandle, root: str) -> list[str]:
    """The root phase and its follow-ups, in the order they were made."""
    state = revert_state(session)
    return [p.spec.name for p in session.phases()
            if p.spec.name == root or state["root_of"].get(p.spec.name) == root]


def _case_chains(session: SessionHandle, root: str) -> None:
    """Each case of the root phase: its culprits, first first (`"culprits"` in its entry),
    following the follow-up phase of each culprit whose revert left it failing."""
    state = revert_state(session)
    follow_ups = state.get("follow_ups") or {}
    by_name = {p.spec.name: p for p in session.phases()}
    top = cases_state(session, root)
    if top is None:
        return
    for case, entry in (top.get("cases") or {}).items():
        chain: list[dict[str, Any]] = []
        phase_name: str | None = root
        while phase_name is not None and len(chain) < MAX_CULPRITS:
            own = ((cases_state(session, phase_name) or {}).get("cases") or {}).get(case) or {}
            culprit = own.get("culprit")
            if not culprit:
                if phase_name != root and phase_name in by_name:
                    entry["next_culprit_search"] = {"phase": phase_name, "status": own.get("status")
                                                    or by_name[phase_name].status,
                                                    "reason": own.get("reason") or by_name[phase_name].reason}
                break
            chain.append({"culprit": culprit, "phase": phase_name, "confidence": own.get("confidence"),
                          "revert": own.get("revert")})
            phase_name = (follow_ups.get(phase_name) or {}).get(culprit) if own.get("revert") == STILL_FAILS else None
        if chain:
            entry["culprits"] = chain


def _short(commits: list[str]) -> str:
    return ", ".join(c[:12] for c in commits)
