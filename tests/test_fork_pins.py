"""LLVM pins into a fork, on small real git repositories (nothing built): the upstream base
and the patch stack of a fork commit, the range between two pins, and the stack replayed on
an upstream commit (applied, already there, or a conflict).

The real case (triton PRs #10714/#10719, #10738): cmake/llvm-info.json pins a commit of
triton-lang/llvm-project that is upstream plus a cherry-pick, or plus local reverts of
upstream changes that broke the AMD and NVIDIA backends; cmake/llvm-build-info.json names
the fork as "repository".
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tritonbisect.core.errors import InputError
from tritonbisect.core.history import History
from tritonbisect.domains.llvm.fork import fork_pin, fork_range, missing_pin_message
from tritonbisect.domains.llvm.patch_replay import replay


def git(repo: Path, *args: str) -> str:
    env = {"GIT_CONFIG_GLOBAL": "/dev/null", "GIT_CONFIG_NOSYSTEM": "1", "PATH": "/usr/bin:/bin",
           "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@t", "GIT_AUTHOR_DATE": "2026-01-01T00:00:00Z",
           "GIT_COMMITTER_DATE": "2026-01-01T00:00:00Z"}
    return subprocess.run(["git", *args], cwd=repo, env=env, check=True, capture_output=True,
                          text=True).stdout.strip()


def commit(repo: Path, subject: str, **files: str) -> str:
    for name, text in files.items():
        (repo / name).write_text(text)
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", subject)
    return git(repo, "rev-parse", "HEAD")


LINES = [f"line {i}\n" for i in range(30)]


def text(**changed: str) -> str:
    out = list(LINES)
    for key, value in changed.items():
        out[int(key[1:])] = value + "\n"
    return "".join(out)


@pytest.fixture
def repo(tmp_path):
    """upstream main: A, X (line 5 broken), B (line 20), C (line 25); the fork on B: revert X,
    and a cherry-pick of C."""
    r = tmp_path / "llvm"
    r.mkdir()
    git(r, "init", "-q", "-b", "main")
    shas = {"A": commit(r, "A", f=text())}
    shas["X"] = commit(r, "X breaks line 5", f=text(l5="broken"))
    shas["B"] = commit(r, "B", f=text(l5="broken", l20="b"))
    shas["C"] = commit(r, "C", f=text(l5="broken", l20="b", l25="c"))
    git(r, "checkout", "-q", "-b", "fork", shas["B"])
    shas["revert"] = commit(r, 'Revert "X breaks line 5"', f=text(l20="b"))
    shas["pick"] = commit(r, "C (cherry-picked)", f=text(l20="b", l25="c"))
    git(r, "checkout", "-q", "main")
    return r, shas


def test_a_fork_pin_is_its_upstream_base_and_its_own_commits(repo):
    r, s = repo
    h = History(r)
    assert fork_pin(h, s["B"]) is None  # upstream's
    found = fork_pin(h, s["pick"])
    assert (found.base, found.upstream) == (s["B"], "main")
    assert [p.commit for p in found.patches] == [s["revert"], s["pick"]]
    assert found.patches[0].subject == 'Revert "X breaks line 5"'


def test_the_range_between_two_pins_is_between_their_bases(repo):
    r, s = repo
    rng = fork_range(History(r), s["A"], s["pick"])
    assert (rng.good_base, rng.bad_base) == (s["A"], s["B"])
    assert rng.pins() == {s["A"]: s["A"], s["B"]: s["pick"]}
    assert [p.commit for p in rng.patches] == [s["revert"], s["pick"]]
    assert "replayed at every step" in rng.describe() and f"{s['revert'][:12]} Revert" in rng.describe()
    assert fork_range(History(r), s["A"], s["C"]) is None
    # the old pin's patch the new one dropped is replayed too, once
    git(r, "checkout", "-q", "-b", "fork2", s["C"])
    newer = commit(r, 'Revert "X breaks line 5" (again)', f=text(l20="b", l25="c"))
    both = fork_range(History(r), s["pick"], newer)
    assert [p.commit for p in both.patches] == [s["pick"], newer]  # the same revert only once
    with pytest.raises(InputError, match="is not an ancestor of the second"):
        fork_range(History(r), newer, s["pick"])


def test_replay_applies_leaves_out_what_is_there_and_refuses_a_conflict(repo, tmp_path):
    r, s = repo
    wt = tmp_path / "wt"
    git(r, "worktree", "add", "-q", "--detach", str(wt), s["A"])
    stack = [s["revert"], s["pick"]]
    before_x = replay(wt, s["A"], stack)  # X not there yet: its revert is; C is applied
    assert before_x.present == [s["revert"]] and before_x.applied == [s["pick"]]
    assert (wt / "f").read_text() == text(l25="c")
    after_x = replay(wt, s["B"], stack)
    assert after_x.applied == stack and (wt / "f").read_text() == text(l20="b", l25="c")
    assert git(wt, "rev-parse", "HEAD") == after_x.commit != s["B"]
    assert replay(wt, s["B"], stack).commit == after_x.commit  # the same replay, the same sha
    at_c = replay(wt, s["C"], stack)  # the cherry-pick is upstream now
    assert at_c.applied == [s["revert"]] and at_c.present == [s["pick"]]
    assert replay(wt, s["A"], []).commit == s["A"]  # nothing to replay: the commit itself
    # a patch that neither applies nor is there: the step cannot be built
    git(r, "checkout", "-q", "main")
    other = commit(r, "D rewrites line 5", f=text(l5="rewritten", l20="b", l25="c"))
    clash = replay(wt, other, stack)
    assert clash.commit is None and clash.conflict == s["revert"] and clash.files == ["f"]
    assert "does not apply" in clash.describe()
    assert git(wt, "status", "--porcelain") == ""  # left clean at the commit


def test_a_pin_the_checkout_lacks_says_what_to_fetch(tmp_path):
    msg = missing_pin_message(tmp_path, "4611156032e1ebac68b2b8f6107b1475a7c60800", "new LLVM pin of abc",
                              "triton-lang/llvm-project")
    assert msg == (f"LLVM commit 4611156032e1 (new LLVM pin of abc) is a commit of triton-lang/llvm-project, "
                   f"not in {tmp_path}; fetch it: git -C {tmp_path} fetch "
                   "https://github.com/triton-lang/llvm-project 4611156032e1ebac68b2b8f6107b1475a7c60800")
    upstream = missing_pin_message(tmp_path, "a" * 40, "good", None)
    assert "a" * 40 in upstream and f"git -C {tmp_path} fetch origin" in upstream
