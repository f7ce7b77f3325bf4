"""`tritonbisect hunt` with a test that reports cases: a red night whose bisect finds two
culprits files one issue per culprit, each listing its cases; a later red night knows both."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bisectors_world import run_cli
from engine_repo import git
from testing.toyworld.cases_repo import TEST_SCRIPT

BUILD = "rm -rf out; mkdir -p out; cp -r cases out/"


@pytest.fixture(autouse=True)
def _not_in_github(monkeypatch):
    monkeypatch.delenv("GITHUB_OUTPUT", raising=False)
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)


def _commit(repo: Path, n: int, **cases: str) -> list[str]:
    """`n` commits; from the first on, each case named is written as given ("ok"/"bad")."""
    shas = []
    for i in range(n):
        for name, text in cases.items():
            (repo / "cases" / name).write_text(text + "\n")
        (repo / "n").write_text(f"{len(git(repo, 'log', '--oneline', check=False).splitlines())}-{i}\n")
        git(repo, "add", "-A")
        git(repo, "commit", "-q", "-m", f"step {i}")
        shas.append(git(repo, "rev-parse", "HEAD").strip())
    return shas


def _night(capsys, repo: Path, home: Path, script: Path) -> tuple[int, dict]:
    (home / "out").mkdir(parents=True, exist_ok=True)
    code, out, err = run_cli([
        "hunt", "--state", str(home / "state.json"), "--workdir", str(home), "--repo", str(repo),
        "--build", BUILD, "--test", f"python {script}", "--issue-body", str(home / "out" / "issue.md"),
        "--github-output", str(home / "out" / "gh.txt"), "--json",
    ], capsys)
    lines = [line for line in out.splitlines() if line.startswith("{")]
    assert lines, err[-3000:]
    return code, json.loads(lines[-1])


def test_one_issue_per_culprit_listing_its_cases(tmp_path: Path, capsys) -> None:
    repo, home = tmp_path / "repo", tmp_path / "home"
    script = tmp_path / "cases_test.py"
    script.write_text(TEST_SCRIPT)
    (repo / "cases").mkdir(parents=True)
    git(repo, "init", "-q", "-b", "main")
    (repo / ".gitignore").write_text("out/\n")
    _commit(repo, 3, gemm="ok", softmax="ok", ln="ok", attn="ok")
    code, res = _night(capsys, repo, home, script)
    assert (code, res["status"]) == (0, "green")

    first = _commit(repo, 4, gemm="ok")
    first += _commit(repo, 1, softmax="bad", ln="bad")  # one culprit, two cases
    first += _commit(repo, 5, gemm="ok")
    first += _commit(repo, 1, attn="bad")
    first += _commit(repo, 2, gemm="ok")
    code, res = _night(capsys, repo, home, script)
    assert code == 5, res
    assert res["status"] == "new" and res["culprit"] == first[4]
    assert res["new"]["cases"] == ["ln", "softmax"]
    assert [(r["culprit"], r["cases"]) for r in res["also_new"]] == [(first[10], ["attn"])]
    issues = res["issues"]
    assert [i["key"] for i in issues] == [first[4][:12], first[10][:12]]
    bodies = [Path(i["body_file"]).read_text() for i in issues]
    assert "| **Cases** | 2: ln, softmax |" in bodies[0]
    assert "| **Cases** | 1: attn |" in bodies[1]
    assert Path(issues[1]["body_file"]).name == f"issue.new-{first[10][:12]}.md"
    outputs = (home / "out" / "gh.txt").read_text()
    assert f"{first[10][:12]} {issues[1]['body_file']} tritonbisect: regression at {first[10][:12]}" in outputs
    state = json.loads((home / "state.json").read_text())
    assert {r["key"]: r["cases"] for r in state["regressions"]} == {first[4]: ["ln", "softmax"], first[10]: ["attn"]}

    _commit(repo, 2, gemm="ok")  # still red: both regressions are known, nothing bisected
    code, res = _night(capsys, repo, home, script)
    assert (code, res["status"]) == (0, "known") and res["issues"] == []
    assert not Path(issues[1]["body_file"]).exists()  # never posted twice
