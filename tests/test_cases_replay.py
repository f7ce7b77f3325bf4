"""A real whole-program trace replayed per kernel as the test of a toy "Triton" history in which
two kernels break at two different commits: one session names each kernel's own culprit.

The program is the shared H100 traces (Triton 3.6) of vadd (two compilations of add_kernel),
softmax and matmul, read as one trace folder (one file per process, as a multi-process
capture leaves them); `tritonbisect repro TRACE --launches all` writes the replay oracle,
which reports one case per kernel. The toy history's build puts patch.py on PYTHONPATH as
sitecustomize: from commit 3 on, the interpreter computes exp as exp2 (softmax_kernel is
wrong, the others do not call exp); from commit 6 on, tl.dot is off by half (matmul_kernel).
It runs on the CPU under TRITON_INTERPRET=1 with the Triton installed here.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from engine_repo import git
from oracle_support import cli, needs_torch_triton, scenario
from tritonbisect.oracles.selfcheck import interpreter_env

pytestmark = [pytest.mark.slow, needs_torch_triton]

EXP_AS_EXP2 = """    interpreter.InterpreterBuilder.create_exp = lambda self, arg: self.unary_op(arg, np.exp2)
"""
DOT_OFF = """    _dot = interpreter.InterpreterBuilder.create_dot

    def _dot_off(self, *args):
        out = _dot(self, *args)
        out.data = out.data * 1.5
        return out

    interpreter.InterpreterBuilder.create_dot = _dot_off
"""
HEAD = """import os
if os.environ.get("TRITON_INTERPRET") == "1":
    import numpy as np
    from triton.runtime import interpreter
"""


def _program(root: Path) -> Path:
    """One trace folder holding the vadd, softmax and matmul processes' traces and blobs."""
    logs = root / "program" / "logs"
    (logs / "saved_tensors").mkdir(parents=True)
    for name in ("vadd", "softmax", "matmul"):
        src = scenario(name) / "logs"
        for trace in src.glob("*.ndjson*"):
            shutil.copy(trace, logs / trace.name)
        shutil.copytree(src / "saved_tensors", logs / "saved_tensors", dirs_exist_ok=True)
    return logs


def _history(repo: Path, n: int, *, exp_from: int, dot_from: int) -> list[str]:
    repo.mkdir(parents=True)
    git(repo, "init", "-q", "-b", "main")
    (repo / ".gitignore").write_text("build/\n")
    shas = []
    for k in range(n):
        plant = (EXP_AS_EXP2 if k >= exp_from else "") + (DOT_OFF if k >= dot_from else "")
        (repo / "patch.py").write_text(HEAD + plant if plant else "")
        (repo / "n.txt").write_text(f"{k}\n")
        git(repo, "add", "-A")
        git(repo, "commit", "-q", "-m", f"commit {k}")
        shas.append(git(repo, "rev-parse", "HEAD").strip())
    return shas


def test_each_kernel_of_a_real_trace_gets_its_own_culprit(tmp_path: Path) -> None:
    logs = _program(tmp_path)
    oracle = tmp_path / "oracle"
    proc = cli("repro", str(logs), "--launches", "all", "--out", str(oracle), timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert "4 launches of 4 kernels" in proc.stdout
    # the golden, recorded at a good Triton: the one installed here, as the toy history's first commit has it
    golden = tmp_path / "golden.pt"
    rec = subprocess.run([sys.executable, str(oracle / "replay.py"), "--record-golden", str(golden)],
                         env=interpreter_env(), capture_output=True, text=True, timeout=600)
    assert rec.returncode == 0 and golden.is_file(), rec.stdout + rec.stderr

    shas = _history(tmp_path / "triton", 9, exp_from=3, dot_from=6)
    home = tmp_path / "home"
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}  # the session's --env gives it
    run = subprocess.run(
        [sys.executable, "-m", "tritonbisect.cli", "run", "--repo", str(tmp_path / "triton"), "--good", shas[0],
         "--bad", shas[-1], "--build", "mkdir -p build && cp patch.py build/sitecustomize.py", "--artifact", "build",
         "--test", f"{sys.executable} {oracle / 'replay.py'} --golden {golden}", "--env", "PYTHONPATH=build",
         "--env", "TRITON_INTERPRET=1", "--workdir", str(home), "--json"],
        capture_output=True, text=True, env=env, cwd=tmp_path, timeout=1500)
    assert run.returncode == 0, run.stderr[-4000:]
    out = json.loads(run.stdout.strip().splitlines()[-1])
    cases = out["cases"]
    assert (cases["softmax_kernel"]["culprit"], cases["softmax_kernel"]["confidence"]) == (shas[3], "high")
    assert (cases["matmul_kernel"]["culprit"], cases["matmul_kernel"]["confidence"]) == (shas[6], "high")
    assert out["cases_not_regressed"] == ["add_kernel"]
    assert out["culprit"] == shas[3]  # the earliest of them
    recs = [json.loads(line) for line in (Path(out["session_dir"]) / "journal.jsonl").read_text().splitlines()]
    built = [r["commit"] for r in recs if (r.get("build") or {}).get("performed")]
    assert len(built) == len(set(built))  # each commit built once for both kernels
    bad = next(r for r in recs if r["role"] == "endpoint" and r["commit"] == shas[-1])
    assert bad["cases"]["softmax_kernel"] == {"kind": "mismatch", "verdict": "bad"}
    assert bad["cases"]["add_kernel"] == {"kind": "pass", "verdict": "good"}
