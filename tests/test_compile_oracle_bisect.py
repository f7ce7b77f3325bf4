"""`tritonbisect run --repro TRACE --oracle compile`: a CPU-only bisect of a compiler crash and
of a codegen regression, end to end on a real trace with the real Triton of this Python.

The repository stands in for Triton: from one commit on it ships a `sitecustomize.py` (loaded
through `--env PYTHONPATH=.`, the worktree under test) that changes the compiler: it aborts in
the llir stage, or it caps registers so ptxas spills. The bisect must end at that commit, with
the outcome kind the oracle reported (crash; perf for a codegen check).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from compile_support import PLANTS, maxnreg_plant, needs_triton
from oracle_support import needs_traces, scenario

pytestmark = [needs_triton, needs_traces]


def _git(repo: Path, *args: str) -> str:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update(GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@x", GIT_COMMITTER_NAME="t", GIT_COMMITTER_EMAIL="t@x")
    return subprocess.run(["git", *args], cwd=repo, env=env, capture_output=True, text=True, check=True).stdout.strip()


def _history(repo: Path, culprit: int, planted: str, n: int = 7) -> list[str]:
    repo.mkdir()
    _git(repo, "init", "-q", "-b", "main")
    shas = []
    for i in range(n):
        (repo / "NOTES").write_text(f"change {i}\n")
        if i == culprit:
            (repo / "sitecustomize.py").write_text(planted)
        _git(repo, "add", "-A")
        _git(repo, "commit", "-q", "-m", f"change {i}")
        shas.append(_git(repo, "rev-parse", "HEAD"))
    return shas


def _bisect(tmp_path: Path, shas: list[str], kernel_trace: str, kernel: str, *extra: str) -> tuple[dict, list[dict]]:
    home = tmp_path / "home"
    env = {k: v for k, v in os.environ.items() if k not in ("TRITONBISECT_RESULT", "TRITON_INTERPRET")}
    proc = subprocess.run(
        [sys.executable, "-m", "tritonbisect.cli", "run", "--repo", str(tmp_path / "repo"),
         "--good", shas[0], "--bad", shas[-1], "--build", "true",
         "--repro", str(scenario(kernel_trace)), "--kernel", kernel, "--oracle", "compile", *extra,
         "--env", "PYTHONPATH=.", "--workdir", str(home), "--json"],
        capture_output=True, text=True, timeout=600, check=False, env=env,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-3000:]
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    journal = home / "sessions" / result["session"] / "journal.jsonl"
    return result, [json.loads(line) for line in journal.read_text().splitlines()]


def test_a_compiler_abort_is_bisected_on_the_cpu_as_a_crash(tmp_path: Path) -> None:
    shas = _history(tmp_path / "repo", culprit=4, planted=PLANTS["abort"])
    result, records = _bisect(tmp_path, shas, "vadd", "add_kernel")
    assert result["status"] == "found" and result["culprit"] == shas[4] and result["confidence"] == "high"
    bad = [r for r in records if r["verdict"] == "bad"]
    assert bad and {r["kind"] for r in bad} == {"crash"}
    assert all("SIGABRT" in r["reason"] for r in bad)
    assert {r["kind"] for r in records if r["verdict"] == "good"} == {"pass"}


def test_a_codegen_regression_is_bisected_with_check_codegen(tmp_path: Path) -> None:
    shas = _history(tmp_path / "repo", culprit=2, planted=maxnreg_plant(24))
    result, records = _bisect(tmp_path, shas, "transpose", "transpose_scale_kernel",
                              "--check", "codegen", "--codegen-threshold", "spills=0")
    assert result["status"] == "found" and result["culprit"] == shas[2]
    bad = [r for r in records if r["verdict"] == "bad"]
    assert bad and {r["kind"] for r in bad} == {"codegen"}
    assert all("spills 0 → " in r["reason"] for r in bad)
