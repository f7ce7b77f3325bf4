"""--verify-revert: the culprit undone at the bad commit, and the culprit a revert leaves behind.

After a phase ends at a culprit, the bad commit is built with the culprit reverted
(`builds/revert_recipe.py`: in a worker's own worktree, through the phase's recipe and the
artifact cache, keyed by the reverted tree's own commit) and tested once more. The verdict:

    fixes        the test passes: the culprit is the cause of the failure at the bad commit
    still-fails  the revert applies but the test still fails: something else broke it too
    conflict     the revert does not apply at the bad commit (later commits edit the same lines)
    untestable   the reverted tree does not build, or the test cannot decide (flaky, no majority)

On "still-fails" the session bisects again over (culprit, bad] with the culprit reverted at
every step (a commit where it does not apply is skipped, as an unbuildable commit is), then
verifies that second culprit with both reverted, and so on: a chain of culprits, each with
its verdict, kept in session.json (`extra["revert"]`). The verify step is journaled (role
"revert") so that a resumed session does not run it again.

`after_phase` is the hook the session calls when a phase ends.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tritonbisect.core.outcome import Verdict
from tritonbisect.session.handle import SessionHandle
from tritonbisect.session.observer import Display
from tritonbisect.session.phases import (
    RESUMABLE,
    STATUS_FOUND,
    STATUS_RUNNING,
    PhaseSpec,
    PhaseState,
)

ROLE_REVERT = "revert"
EXTRA = "revert"  # session.extra["revert"] = {"chains": {root: [...]}, "root_of": {phase: root}}
FIXES, STILL_FAILS, CONFLICT, UNTESTABLE = "fixes", "still-fails", "conflict", "untestable"
# a chain longer than this is more likely a test that fails for its own reasons
MAX_CULPRITS = 5


def revert_state(session: SessionHandle) -> dict[str, Any]:
    state = session.extra.setdefault(EXTRA, {})
    state.setdefault("chains", {})
    state.setdefault("root_of", {})
    return state


def root_of(session: SessionHandle, phase_name: str) -> str:
    return str(revert_state(session)["root_of"].get(phase_name, phase_name))


def reverts_of(spec: PhaseSpec) -> tuple[str, dict[str, Any], list[str]]:
    """The inner recipe (name, config) and the culprits a phase's steps already revert."""
    if spec.recipe_name == "revert":
        inner = spec.recipe_config["inner"]
        return str(inner["name"]), dict(inner["config"]), list(spec.recipe_config.get("reverts") or [])
    return spec.recipe_name, dict(spec.recipe_config), []


def revert_config(inner_name: str, inner_config: Mapping[str, Any], reverts: list[str]) -> dict[str, Any]:
    return {"inner": {"name": inner_name, "config": dict(inner_config)}, "reverts": list(reverts)}


def verdict_of(rec: Mapping[str, Any]) -> tuple[str, list[str]]:
    """The revert verdict of a journaled verify step, and the files of a conflict."""
    revert = rec.get("revert_tree") or {}
    if revert.get("conflict"):
        return CONFLICT, list(revert["conflict"])
    verdict = rec.get("verdict")
    if verdict == Verdict.GOOD:
        return FIXES, []
    if verdict == Verdict.BAD:
        return STILL_FAILS, []
    return UNTESTABLE, []


def journaled(session: SessionHandle, phase: str, bad: str, reverts: list[str]) -> dict[str, Any] | None:
    for rec in reversed(session.records(phase)):
        if (rec.get("role") == ROLE_REVERT and rec.get("commit") == bad
                and rec.get("reverted") == reverts and rec.get("verdict") != Verdict.ABORT):
            return rec
    return None


def run_verify(session: SessionHandle, phase: PhaseState, reverts: list[str], ui: Display) -> dict[str, Any] | None:
    """Build and test the bad commit with `reverts` undone; the journaled record (None: the
    step aborted, which is said)."""
    import json
    from pathlib import Path

    from tritonbisect.builds.recipes import recipe_from_config
    from tritonbisect.builds.revert_recipe import REVERT_FILE
    from tritonbisect.core.history import History
    from tritonbisect.executors.runner import StepRequest
    from tritonbisect.session.worker_pool import phase_pool

    spec = phase.spec
    inner_name, inner_config, _ = reverts_of(spec)
    config = revert_config(inner_name, inner_config, reverts)
    recipe = recipe_from_config("revert", config)
    policy = session.settings.policy()
    history = History(spec.repo)
    steps = session.dir / "steps"
    n = len(list(steps.iterdir())) + 1 if steps.is_dir() else 1
    log_dir = steps / f"{n:04d}-{spec.name}-revert-{spec.bad[:12]}"
    baseline = None
    if policy.perf is not None:
        from tritonbisect.core.perf import baseline_of

        baseline = baseline_of(session.records(spec.name), spec.good)
    pool = phase_pool(session.settings, spec, history.repo_id(), recipe, policy, note=ui.note)
    request = StepRequest(commit=spec.bad, log_dir=log_dir, baseline=baseline)
    try:
        ui.step_started(spec.name, spec.bad, ROLE_REVERT, f"bad commit with {_names(reverts)} reverted")
        result = pool.submit(request).result()
    except BaseException:
        request.token.cancel()  # Ctrl-C: stop the build or test before the pool waits for it
        raise
    finally:
        pool.close()
    seq = max((int(r.get("seq", 0)) for r in session.records()), default=0) + 1
    rec: dict[str, Any] = {"seq": seq, "phase": spec.name, "role": ROLE_REVERT, "round": None}
    rec.update(result.to_record())
    rec["reverted"] = list(reverts)
    tree_file = Path(result.log_dir or log_dir) / REVERT_FILE
    try:
        rec["revert_tree"] = json.loads(tree_file.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        rec["revert_tree"] = None
    session.journal.append(rec)
    ui.step_finished(spec.name, rec, f"bad commit with {_names(reverts)} reverted", None)
    if rec.get("verdict") == Verdict.ABORT:
        ui.note(f"--verify-revert: the check could not run: {rec.get('reason')}")
        return None
    return rec


def _names(commits: list[str]) -> str:
    return ", ".join(c[:12] for c in commits)


def verify(session: SessionHandle, phase: PhaseState, ui: Display) -> dict[str, Any] | None:
    """The revert verdict of the phase's culprit (run once; a resume reads the journal)."""
    assert phase.culprit is not None
    _, _, earlier = reverts_of(phase.spec)
    reverts = [phase.culprit, *earlier]  # newest first: the later change is undone first
    rec = journaled(session, phase.spec.name, phase.spec.bad, reverts)
    if rec is None:
        ui.note(
            f"--verify-revert: building the bad commit {phase.spec.bad[:12]} with "
            f"{_names(reverts)} reverted (1 build) and testing it"
        )
        rec = run_verify(session, phase, reverts, ui)
        if rec is None:
            return None
    verdict, files = verdict_of(rec)
    entry: dict[str, Any] = {
        "culprit": phase.culprit,
        "phase": phase.spec.name,
        "confidence": phase.confidence,
        "revert": verdict,
        "reverted": reverts,
        "revert_commit": (rec.get("revert_tree") or {}).get("commit"),
        "reason": rec.get("reason"),
    }
    if files:
        entry["files"] = files
    return entry


def _next_phase(session: SessionHandle, phase: PhaseState, root: str) -> PhaseState:
    """The phase that bisects (culprit, bad] with the culprits found so far reverted (made
    once; a resume finds it by its root and its reverts)."""
    assert phase.culprit is not None
    inner_name, inner_config, earlier = reverts_of(phase.spec)
    reverts = [phase.culprit, *earlier]
    state = revert_state(session)
    for other in session.phases():
        if (state["root_of"].get(other.spec.name) == root and other.spec.recipe_name == "revert"
                and other.spec.recipe_config.get("reverts") == reverts):
            return other
    spec = PhaseSpec(
        name=f"{root}-after-{len(reverts)}",
        repo=phase.spec.repo,
        good=phase.culprit,
        bad=phase.spec.bad,
        recipe_name="revert",
        recipe_config=revert_config(inner_name, inner_config, reverts),
        first_parent=phase.spec.first_parent,
        prefer_cached=phase.spec.prefer_cached,
    )
    session.append_phase(spec)
    state["root_of"][spec.name] = root
    session.save()
    return session.phases()[-1]


def applies_to(session: SessionHandle, phase: PhaseState) -> bool:
    return (
        session.settings.follow_ups.verify_revert
        and phase.status == STATUS_FOUND
        and phase.culprit is not None
        # a list of releases or nightlies, not a range of commits: nothing to revert
        and not phase.spec.candidates
        and phase.spec.recipe_name not in ("wheel",)
    )


def after_phase(session: SessionHandle, phase: PhaseState, ui: Display) -> None:
    """Verify the phase's culprit by revert; while the revert applies and the case still
    fails, find the next culprit with the earlier ones reverted, and verify it."""
    from tritonbisect.session.phase_run import PhaseRun

    if not session.settings.follow_ups.verify_revert:
        return
    root = root_of(session, phase.spec.name)
    names = [p.spec.name for p in session.phases()]
    chain: list[dict[str, Any]] = revert_state(session)["chains"].setdefault(root, [])
    while applies_to(session, phase):
        entry = verify(session, phase, ui)
        if entry is None:
            break
        chain[:] = [e for e in chain if e["phase"] != entry["phase"]] + [entry]
        session.save()
        ui.note(revert_line(entry))
        if entry["revert"] != STILL_FAILS:
            break
        if len(chain) >= MAX_CULPRITS:
            ui.note(f"--verify-revert: {len(chain)} culprits found; not looking for more")
            break
        ui.note(
            f"looking for the next culprit: bisecting ({entry['culprit'][:12]}, {phase.spec.bad[:12]}] "
            f"with {_names(entry['reverted'])} reverted at every step"
        )
        phase = _next_phase(session, phase, root)
        if phase.status in RESUMABLE:
            phase.status = STATUS_RUNNING
            session.save()
            PhaseRun(session, phase, ui).run()
            session.save()
        if phase.status != STATUS_FOUND:
            revert_state(session)["chains"][root + ":search"] = {
                "phase": phase.spec.name, "status": phase.status, "reason": phase.reason,
            }
            session.save()
            break
    # the session's answer stays the first culprit: its phase is the current one again
    if root in names:
        session.current_phase = names.index(root)
        session.save()


def revert_line(entry: Mapping[str, Any]) -> str:
    """The one line a report or summary says about a culprit's revert."""
    culprit = str(entry["culprit"])[:12]
    verdict = entry["revert"]
    others = [c[:12] for c in entry.get("reverted", [])[1:]]
    also = f" (with {', '.join(others)} reverted too)" if others else ""
    cases = entry.get("cases") or {}
    if cases and verdict != CONFLICT:  # the culprit of several cases (session/revert_cases.py)
        return f"revert of {culprit} at the bad commit{also}: " + _cases_said(cases, entry.get("reason"))
    if verdict == FIXES:
        return f"revert of {culprit} at the bad commit{also}: fixes the test"
    if verdict == STILL_FAILS:
        return f"revert of {culprit} at the bad commit{also}: still fails (another commit broke it too)"
    if verdict == CONFLICT:
        files = ", ".join(entry.get("files") or [])
        return f"revert of {culprit} at the bad commit{also}: conflict in {files}"
    return f"revert of {culprit} at the bad commit{also}: untestable ({entry.get('reason')})"


def _cases_said(cases: Mapping[str, str], reason: Any) -> str:
    """What a culprit's revert did to each of its cases, in words."""
    def named(verdict: str) -> list[str]:
        return [n for n, v in cases.items() if v == verdict]

    parts = []
    if named(FIXES):
        parts.append(f"fixes {', '.join(named(FIXES))}")
    still = named(STILL_FAILS)
    if still:
        parts.append(f"{', '.join(still)} still fail{'s' if len(still) == 1 else ''} "
                     f"(another commit broke {'it' if len(still) == 1 else 'them'} too)")
    if named(UNTESTABLE):
        parts.append(f"untestable for {', '.join(named(UNTESTABLE))} ({reason})")
    return "; ".join(parts)


def revert_json(session: SessionHandle) -> dict[str, Any]:
    """`revert` (the first culprit's verdict) and `culprits` (the chain) for --json; empty
    when the session did not verify."""
    state = session.extra.get(EXTRA) or {}
    chains = state.get("chains") or {}
    result = session.result()
    chain = chains.get(result.phase)
    if not chain:
        return {}
    out: dict[str, Any] = {"revert": chain[0]["revert"], "culprits": chain}
    if chain[0].get("files"):
        out["revert_files"] = chain[0]["files"]
    search = chains.get(result.phase + ":search")
    if search:
        out["next_culprit_search"] = search
    return out


def summary_lines(session: SessionHandle) -> list[str]:
    """The lines `run` prints after the culprit: one per culprit of the session's answer."""
    data = revert_json(session)
    out = []
    chain = data.get("culprits") or []
    for i, entry in enumerate(chain):
        if i and not entry.get("cases"):  # the culprits of cases are listed with them already
            out.append(f"culprit {i + 1}: {entry['culprit']} (confidence {entry.get('confidence')})")
        elif i and entry.get("phase") != chain[0].get("phase"):  # a case's next culprit
            names = ", ".join(entry["cases"])
            out.append(f"next culprit of {names}: {entry['culprit']} (confidence {entry.get('confidence')})")
        out.append(revert_line(entry))
    search = data.get("next_culprit_search")
    if search:
        out.append(f"the search for the next culprit ended {search['status']}: {search.get('reason')}")
    return out


def report_lines(session: SessionHandle) -> list[str]:
    """Markdown lines of the report: one per culprit of every chain."""
    state = session.extra.get(EXTRA) or {}
    out: list[str] = []
    for root, chain in (state.get("chains") or {}).items():
        if root.endswith(":search") or not chain:
            continue
        for i, entry in enumerate(chain):
            label = "Revert check" if i == 0 else f"Culprit {i + 1}"
            line = revert_line(entry)
            if i:
                line = f"`{str(entry['culprit'])[:12]}`; {line}"
            out.append(f"- **{label}** (`{root}`): {line}")
        search = state["chains"].get(root + ":search")
        if search:
            out.append(f"- **Next culprit search** (`{search['phase']}`): {search['status']}"
                       + (f": {search['reason']}" if search.get("reason") else ""))
    return out
