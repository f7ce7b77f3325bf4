"""`tritonbisect run --repro`: the oracle of a real trace as the bisect test, end to end.

The repository stands in for Triton: from one commit on it ships a `sitecustomize.py` that
miscompiles float additions in Triton's interpreter (the planted regression). The oracle
records its golden at the good endpoint, then every step compares against it, so the bisect
must end at that commit with a `mismatch` outcome — not a generic failure.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from oracle_support import needs_torch_triton, needs_traces, scenario

MISCOMPILE = '''\
"""Planted regression: float adds in Triton's interpreter are off by one."""
import numpy as np
from triton.runtime import interpreter

interpreter.InterpreterBuilder.create_fadd = lambda self, lhs, rhs: self.binary_op(
    lhs, rhs, lambda a, b: np.add(a, b) + 1
)
'''


def _git(repo: Path, *args: str) -> str:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update(GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@x", GIT_COMMITTER_NAME="t",
               GIT_COMMITTER_EMAIL="t@x")
    return subprocess.run(["git", *args], cwd=repo, env=env, capture_output=True, text=True,
                          check=True).stdout.strip()


def _history(repo: Path, culprit: int, n: int = 7) -> list[str]:
    repo.mkdir()
    _git(repo, "init", "-q", "-b", "main")
    shas = []
    for i in range(n):
        (repo / "NOTES").write_text(f"change {i}\n")
        if i == culprit:
            (repo / "sitecustomize.py").write_text(MISCOMPILE)
        _git(repo, "add", "-A")
        _git(repo, "commit", "-q", "-m", f"change {i}")
        shas.append(_git(repo, "rev-parse", "HEAD"))
    return shas


@needs_traces
@needs_torch_triton
def test_run_with_repro_finds_the_miscompile_as_a_mismatch(tmp_path: Path) -> None:
    shas = _history(tmp_path / "repo", culprit=4)
    home = tmp_path / "home"
    proc = subprocess.run(
        [sys.executable, "-m", "tritonbisect.cli", "run", "--repo", str(tmp_path / "repo"),
         "--good", shas[0], "--bad", shas[-1], "--build", "true",
         "--repro", str(scenario("vadd")), "--kernel", "add_kernel",
         # "." is the worktree under test: its sitecustomize.py loads at interpreter start
         "--env", "PYTHONPATH=.", "--env", "TRITON_INTERPRET=1",
         "--workdir", str(home), "--json"],
        capture_output=True, text=True, timeout=600, check=False,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    assert result["status"] == "found" and result["culprit"] == shas[4]
    assert result["confidence"] == "high"

    journal = home / "sessions" / result["session"] / "journal.jsonl"
    records = [json.loads(line) for line in journal.read_text().splitlines()]
    by_commit = {(r["role"], r["commit"]): r for r in records}
    # the good endpoint recorded the golden and then passed against it
    assert by_commit[("endpoint", shas[0])]["kind"] == "pass"
    # every bad step is told apart as a mismatch, through the oracle's structured result
    bad_kinds = {r["kind"] for r in records if r["verdict"] == "bad"}
    assert bad_kinds == {"mismatch"}
