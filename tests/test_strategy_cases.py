"""The search over cases as the bisect loop's strategy (session/strategy_cases.py), fed from a real
journal file: the next commits for every open case, a case whose verdicts contradict the
history (re-tested, then skipped for that case only), and the answer."""

from __future__ import annotations

from concurrent.futures import Future
from pathlib import Path

from phase_parts import Notes, phase_context
from tritonbisect.builds.recipes import TestSpec as Spec
from tritonbisect.domains.command.recipe import CommandRecipe
from tritonbisect.executors.runner import StepRequest
from tritonbisect.search.classic import Found
from tritonbisect.session.builds_at_hand import BuildsAtHand
from tritonbisect.session.phase_context import PhaseContext
from tritonbisect.session.phase_journal import PhaseJournal
from tritonbisect.session.step_queue import InFlight
from tritonbisect.session.strategy import CasesFound
from tritonbisect.session.strategy_cases import CasesSearch

# (good, bad]: c000 is the good endpoint (hex: session.json holds commit ids)
COMMITS = [f"c{i:03d}" for i in range(1, 17)]


def _context(tmp_path: Path) -> PhaseContext:
    ctx = phase_context(tmp_path, COMMITS)
    ctx.settings.executor.jobs = 2
    return ctx


def _search(ctx: PhaseContext, cases: list[str]) -> tuple[CasesSearch, Notes]:
    builds = BuildsAtHand(ctx, CommandRecipe("make", Spec("true")))
    assert isinstance(ctx.ui, Notes)
    return CasesSearch(ctx, builds, cases=cases), ctx.ui


def _step(journal: PhaseJournal, commit: str, role: str, **verdicts: str) -> None:
    journal.append({"seq": journal.next_seq(), "phase": "main", "role": role, "commit": commit,
                    "verdict": "bad", "kind": "mismatch", "tests": [{"kind": "mismatch"}],
                    "cases": {c: {"kind": "pass" if v == "good" else "mismatch", "verdict": v} for c, v in verdicts.items()}})


def _truth(commit: str, culprits: dict[str, int]) -> dict[str, str]:
    i = int(commit[1:])
    return {case: "bad" if i >= at else "good" for case, at in culprits.items()}


def test_the_strategy_finds_every_case_with_two_workers(tmp_path: Path) -> None:
    culprits = {"a": 3, "b": 11, "c": 11}
    ctx = _context(tmp_path)
    journal = ctx.journal
    _step(journal, "c000", "endpoint", a="good", b="good", c="good")
    _step(journal, COMMITS[-1], "endpoint", a="bad", b="bad", c="bad")
    search, _ = _search(ctx, list(culprits))
    for _ in range(40):
        plan = search.plan(free=2, flying=frozenset(), live=0, cached=frozenset())
        if plan.answer is not None:
            break
        assert len(set(plan.test)) == len(plan.test) <= 2 and plan.test
        assert set(search.open_cases()) <= set(culprits)
        for commit in plan.test:
            _step(journal, commit, "search", **_truth(commit, culprits))
    assert isinstance(plan.answer, CasesFound)
    assert plan.answer.answers == {case: Found(f"c{at:03d}") for case, at in culprits.items()}
    assert search.open_cases() == ()
    # the builds kept for the confirmation: each culprit and its parent
    assert search.keep() == () or set(search.keep()) <= {"c002", "c003", "c010", "c011"}


def test_a_contradicting_case_is_retested_then_skipped_for_that_case_only(tmp_path: Path) -> None:
    ctx = _context(tmp_path)
    journal = ctx.journal
    _step(journal, "c000", "endpoint", flaky="good", steady="good")
    _step(journal, COMMITS[-1], "endpoint", flaky="bad", steady="bad")
    # flaky says c04 bad but c08 (above it) good: a contradiction of its history (as a resumed
    # session reads it from the journal)
    _step(journal, "c004", "search", flaky="bad", steady="good")
    _step(journal, "c008", "search", flaky="good", steady="good")
    search, ui = _search(ctx, ["flaky", "steady"])
    plan = search.plan(free=2, flying=frozenset(), live=0, cached=frozenset())
    assert set(plan.test[:2]) == {"c004", "c008"}  # re-tested once: one test serves both cases
    assert any("case flaky contradict the history" in n for n in ui.notes)
    _step(journal, "c004", "search", flaky="bad", steady="good")
    _step(journal, "c008", "search", flaky="good", steady="good")
    plan = search.plan(free=2, flying=frozenset(), live=0, cached=frozenset())
    assert plan.again and "c004" not in plan.test and "c008" not in plan.test
    assert any("keeps contradicting the history of case flaky" in n for n in ui.notes)
    eff = search.effective()
    assert "skip" in (eff["flaky"].get("c004"), eff["flaky"].get("c008"))
    assert eff["steady"]["c004"] == "good" and eff["steady"]["c008"] == "good"  # untouched
    search.corrected()  # a person's correction: the search forgets what it set aside
    assert search.effective()["flaky"]["c004"] == "bad"


def test_a_running_step_no_case_needs_is_stopped(tmp_path: Path) -> None:
    ctx = _context(tmp_path)
    journal = ctx.journal
    _step(journal, "c000", "endpoint", a="good", b="good")
    _step(journal, COMMITS[-1], "endpoint", a="bad", b="bad")
    _step(journal, "c008", "search", a="bad", b="bad")
    search, _ = _search(ctx, ["a", "b"])
    search.plan(free=1, flying=frozenset(), live=0, cached=frozenset())
    running = [InFlight(c, "search", 2, StepRequest(c, tmp_path / c), Future()) for c in ("c012", "c004")]
    assert [s.commit for s in search.useless(running)] == ["c012"]  # above a bad commit in both cases
