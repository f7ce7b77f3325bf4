"""Each step says whose target environment it used and where that environment's torch comes
from: a venv the tool made (which sees no torch unless told) and a user's, used as it is."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tritonbisect.builds.recipes import StepContext
from tritonbisect.builds.venv_pool import EnvPool


def _ctx(tmp_path: Path, step: str) -> StepContext:
    worktree = tmp_path / "worktrees" / "repo" / "w0"
    worktree.mkdir(parents=True, exist_ok=True)
    return StepContext(worktree=worktree, log_dir=tmp_path / "steps" / step, worker=0,
                       workdir=tmp_path / "home")  # fmt: skip


def test_a_venv_the_tool_makes_says_it_has_no_torch(tmp_path, capfd):
    pool = EnvPool(None, None)
    env = pool.get(_ctx(tmp_path, "0001"))
    line = (tmp_path / "steps" / "0001" / "environment.txt").read_text()
    assert line.startswith(f"target environment {env.root}: made by tritonbisect from ")
    assert "no torch in it (to test with your torch, pass --venv DIR" in line
    assert "tritonbisect: note: target environment" in capfd.readouterr().err
    pool.get(_ctx(tmp_path, "0002"))  # every step's folder says it; stderr only once
    assert (tmp_path / "steps" / "0002" / "environment.txt").read_text() == line
    assert "note:" not in capfd.readouterr().err
    pool.close()


def test_a_users_venv_is_used_as_it_is_and_its_torch_named(tmp_path, capfd):
    venv = tmp_path / "mine"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    purelib = Path(subprocess.run([str(venv / "bin" / "python"), "-c",
                                   "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                                  capture_output=True, text=True, check=True).stdout.strip())  # fmt: skip
    (purelib / "torch").mkdir()
    (purelib / "torch" / "__init__.py").write_text("")
    (purelib / "torch-9.9.9.dist-info").mkdir()
    (purelib / "torch-9.9.9.dist-info" / "METADATA").write_text("Metadata-Version: 2.1\nName: torch\nVersion: 9.9.9\n")
    pool = EnvPool(str(venv), None)
    env = pool.get(_ctx(tmp_path, "0001"))
    assert env.root == venv and not env.owned
    line = (tmp_path / "steps" / "0001" / "environment.txt").read_text().strip()
    assert line == f"target environment {venv}: yours, used as it is; torch 9.9.9 from {purelib}"
    assert "note:" not in capfd.readouterr().err
    pool.close()
