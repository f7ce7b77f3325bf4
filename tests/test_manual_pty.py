"""Judging by hand through a real pseudo-terminal (pexpect): the person is this test, which
looks at the checkout the tool says is ready and answers what it finds there."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from engine_repo import BUILD, env_for, journal, last_json, linear

pexpect = pytest.importorskip("pexpect")

READY = r"commit ([0-9a-f]{40}) is ready to judge"


def spawn(*args: str, cwd: Path, home: Path, **env: str):
    child = pexpect.spawn(
        sys.executable, ["-m", "tritonbisect.cli", *args], cwd=str(cwd),
        env=env_for(home, TERM="dumb", COLUMNS="200", **env), encoding="utf-8", timeout=60,
        dimensions=(50, 200),
    )
    return child


def judge_next(child) -> tuple[str, str, str]:
    """Wait for the next question; (commit, checkout, what the checkout holds)."""
    child.expect(READY)
    commit = child.match.group(1)
    child.expect(r"checkout: (\S+)")
    checkout = child.match.group(1)
    child.expect(r"venv:\s+([^\r\n]*)")
    venv = child.match.group(1)
    child.expect_exact("Your verdict?")
    state = (Path(checkout) / "out" / "state").read_text().strip()
    return commit, state, venv


def answer(state: str) -> str:
    return "good" if state == "ok" else "bad"


def finish(child) -> dict:
    """Answer truthfully until the session ends; its JSON result."""
    while child.expect([READY, pexpect.EOF]) == 0:
        child.expect(r"checkout: (\S+)")
        checkout = child.match.group(1)
        child.expect_exact("Your verdict?")
        child.sendline(answer((Path(checkout) / "out" / "state").read_text().strip()))
    child.close()
    assert child.exitstatus == 0, child.before
    text = child.before.replace("\r", "")
    return last_json(text[text.rindex("{\"culprit\""):])


def test_judging_by_hand_finds_the_culprit(tmp_path: Path) -> None:
    repo, home = tmp_path / "repo", tmp_path / "home"
    shas = linear(repo, 24, culprit=17)
    venv = tmp_path / "target-venv"
    child = spawn("run", "--repo", str(repo), "--good", shas[0], "--bad", "main", "--build", BUILD,
                  "--env", f"VIRTUAL_ENV={venv}", "--json", cwd=repo, home=home)
    commit, state, shown_venv = judge_next(child)
    assert state == ("ok" if shas.index(commit) < 17 else "bad")  # the checkout is that commit
    assert shown_venv == f". {venv}/bin/activate"  # the test environment's venv, to activate
    child.sendline(answer(state))
    out = finish(child)
    assert out["culprit"] == shas[17] and out["status"] == "found"
    recs = journal(home, out["session"])
    assert [r["role"] for r in recs[:2]] == ["endpoint", "endpoint"]
    assert all(r["kind"] == "manual" for r in recs)
    assert not recs[0]["tests"] and not recs[1]["tests"]  # your endpoints: not judged again
    assert {r["role"] for r in recs[2:]} == {"search", "confirm"}


def test_retry_skip_undo_quit_and_resume(tmp_path: Path) -> None:
    repo, home = tmp_path / "repo", tmp_path / "home"
    shas = linear(repo, 30, culprit=11)
    child = spawn("run", "--repo", str(repo), "--good", shas[0], "--bad", "main", "--build", BUILD,
                  "--json", cwd=repo, home=home)
    first, state, _ = judge_next(child)
    child.sendline("what")  # not an answer: the choices are explained, the question asked again
    child.expect_exact("retry: build and install it again")
    child.expect_exact("Your verdict?")
    child.sendline("r")
    child.expect_exact(f"building and installing {first[:12]} again")
    again, state, _ = judge_next(child)
    assert again == first
    child.sendline("skip")
    second, state, _ = judge_next(child)
    assert second != first
    child.sendline("bad" if state == "ok" else "good")  # a wrong answer...
    third, state, _ = judge_next(child)
    child.sendline("undo")  # ...taken back
    child.expect(rf"took back (good|bad) for {second[:12]}")
    child.expect_exact("Your verdict?")
    child.sendline(answer(state))
    fourth, state, _ = judge_next(child)
    child.sendline("q")
    child.expect(r"Resume with:\s+(tritonbisect resume \S+)")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 130
    sid = next((home / "sessions").iterdir()).name
    recs = journal(home, sid)
    assert [r["verdict"] for r in recs if r["commit"] == first and r["role"] == "search"] == ["skip"]
    undo = [r for r in recs if r["role"] == "undo"]
    assert len(undo) == 1 and undo[0]["commit"] == second
    assert fourth not in [r["commit"] for r in recs if r["role"] == "search"]  # quit: not judged
    # resume asks again where it stopped; the answer taken back no longer counts
    child = spawn("resume", sid, "--json", cwd=repo, home=home)
    out = finish(child)
    assert out["culprit"] == shas[11]
    assert journal(home, sid)[: len(recs)] == recs  # nothing rewritten


def test_undo_acts_on_the_running_search_at_once(tmp_path: Path) -> None:
    """g, b, a wrong b, undo, then true answers: the running search must drop the answer taken
    back at once (as a resumed one does) and name the true culprit."""
    repo, home = tmp_path / "repo", tmp_path / "home"
    shas = linear(repo, 200, culprit=137)
    child = spawn("run", "--repo", str(repo), "--good", shas[0], "--bad", "main", "--build", BUILD,
                  "--json", cwd=repo, home=home)
    for given in ("good", "bad"):  # the first two answers are the truth, whatever they are
        _commit, state, _ = judge_next(child)
        child.sendline(answer(state))
        del given
    wrong, state, _ = judge_next(child)
    child.sendline("bad" if state == "ok" else "good")  # a wrong answer...
    _next, state, _ = judge_next(child)
    child.sendline("u")  # ...taken back at the next question
    child.expect(rf"took back (good|bad) for {wrong[:12]}")
    child.expect_exact("Your verdict?")
    child.sendline(answer(state))
    out = finish(child)
    assert out["culprit"] == shas[137], out
    assert out["status"] == "found"


def test_undo_at_the_confirmation_searches_again_at_once(tmp_path: Path) -> None:
    repo, home = tmp_path / "repo", tmp_path / "home"
    shas = linear(repo, 40, culprit=22)
    child = spawn("run", "--repo", str(repo), "--good", shas[0], "--bad", "main", "--build", BUILD,
                  "--json", cwd=repo, home=home)
    last = None
    while True:  # the search, answered truthfully, up to the first confirmation
        child.expect(READY + r"( \(confirmation)?")
        commit, confirming = child.match.group(1), bool(child.match.group(2))
        child.expect(r"checkout: (\S+)")
        state = (Path(child.match.group(1)) / "out" / "state").read_text().strip()
        child.expect_exact("Your verdict?")
        if confirming:
            break
        last = commit
        child.sendline(answer(state))
    child.sendline("u")  # takes back the last search answer, which the culprit rests on
    child.expect(rf"took back (good|bad) for {last[:12]}")
    child.expect_exact("Your verdict?")
    child.sendline(answer(state))
    child.expect_exact("an answer was taken back: searching again")  # at once, not at a resume
    out = finish(child)
    assert out["culprit"] == shas[22]
    recs = journal(home, out["session"])
    undo = next(r for r in recs if r["role"] == "undo")
    assert last != shas[22]  # the parent's answer was taken back: it is asked again
    assert [r["commit"] for r in recs if r["role"] == "search" and r["seq"] > undo["seq"]][:1] == [last]
