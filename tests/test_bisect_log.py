"""`git bisect log` form, read and written (session/bisect_log.py), against real git."""

from __future__ import annotations

from pathlib import Path

import pytest

from engine_repo import git, linear
from tritonbisect.session.bisect_log import BisectLogError, parse, render


def real_log(repo: Path, *commands: list[str]) -> str:
    """Run `git bisect` commands in repo and return what `git bisect log` prints."""
    for args in commands:
        git(repo, "bisect", *args)
    text = git(repo, "bisect", "log")
    git(repo, "bisect", "reset")
    return text


def test_parse_a_real_log_started_with_revisions(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    shas = linear(repo, 16, culprit=9)
    text = real_log(
        repo,
        ["start", "main", "main~15"],  # names, not shas: they would move with HEAD
        ["bad", shas[12]],
        ["skip", shas[6]],
        ["good", shas[5]],
    )
    log = parse(text)
    assert [rev for _, rev in log.bad] == [shas[15]]  # the sha git noted, not "main"
    assert [rev for _, rev in log.good] == [shas[0]]
    assert [(v, rev) for _, v, rev in log.verdicts] == [("bad", shas[12]), ("skip", shas[6]), ("good", shas[5])]
    assert log.terms == ("good", "bad") and not log.first_parent


def test_parse_custom_terms_and_first_parent(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    shas = linear(repo, 10, culprit=4)
    text = real_log(
        repo,
        ["start", "--term-old=fast", "--term-new=slow", "--first-parent"],
        ["slow", shas[9]],
        ["fast", shas[0]],
        ["slow", shas[5]],
    )
    assert "git bisect slow" in text
    log = parse(text)
    assert log.first_parent and log.terms == ("fast", "slow")
    assert log.bad[0][1] == shas[9] and log.good[0][1] == shas[0]
    assert [(v, rev) for _, v, rev in log.verdicts] == [("bad", shas[5])]


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ("# nothing\n", "no `git bisect` verdict"),
        ("git bisect start -- src/\n", "limited to paths"),
        ("git bisect frobnicate abc\n", "unknown bisect command"),
        ("git bisect start\ngit bisect bad\n", "names no commit"),
        ("echo hello\n", "line 1 is not"),
    ],
)
def test_what_is_not_a_usable_log(text: str, needle: str) -> None:
    with pytest.raises(BisectLogError, match=needle):
        parse(text)


def test_rendered_log_replays_in_real_git_to_the_same_culprit(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    shas = linear(repo, 20, culprit=13)
    good, bad = shas[0], shas[19]
    records = [
        {"seq": 1, "role": "endpoint", "commit": good, "verdict": "good"},
        {"seq": 2, "role": "endpoint", "commit": bad, "verdict": "bad"},
        {"seq": 3, "role": "search", "commit": shas[10], "verdict": "good", "tests": [1]},
        {"seq": 4, "role": "search", "commit": shas[15], "verdict": "bad", "tests": [1]},
        {"seq": 5, "role": "search", "commit": shas[12], "verdict": "bad", "tests": [1]},  # a lie
        {"seq": 6, "role": "search", "commit": shas[12], "verdict": "good", "tests": [1]},
        {"seq": 7, "role": "search", "commit": shas[12], "verdict": "good", "tests": [1]},
        {"seq": 8, "role": "search", "commit": shas[11], "verdict": "skip", "tests": []},
        {"seq": 9, "role": "search", "commit": shas[14], "verdict": "good", "tests": [1]},  # wrong
        {"seq": 10, "role": "mark", "commit": shas[14], "verdict": "bad", "reason": "I ran it"},
        {"seq": 11, "role": "search", "commit": shas[13], "verdict": "bad", "tests": [1]},
    ]
    text = render(
        session_id="S", phase="main", repo=str(repo), good=good, bad=bad, records=records,
        subject=lambda c: f"c{shas.index(c)}", p_bad=lambda c: 0.9 if shas.index(c) >= 13 else 0.1,
        status="found", culprit=shas[13],
    )
    assert "# marked bad by hand (tests said: 1 good, 0 bad): I ran it" in text
    assert "# flaky: 2 good, 1 bad verdicts; P(bad) = 0.100" in text
    assert f"git bisect skip {shas[11]}" in text
    assert f"# first bad commit: [{shas[13]}] c13" in text
    path = tmp_path / "bisect.log"
    path.write_text(text)
    out = git(repo, "bisect", "replay", str(path))
    assert f"{shas[13]} is the first bad commit" in out
    git(repo, "bisect", "reset")
    # and it reads back as the verdicts it wrote
    log = parse(text)
    assert log.good[0][1] == good and log.bad[0][1] == bad
    assert (shas[12], "good") in {(rev, v) for _, v, rev in log.verdicts}
