"""`wheels --narrow --triton-dir` prints the commit bisect with --prefer-pass filled in (slow:
a target venv and two scratch venvs). The wheels are the toy pass-pipeline Triton
(toyworld/pass_triton.py) at three commits, zipped as real wheels into a --find-links folder;
the Triton checkout is the toy's repository with the releases tagged.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from testing.toyworld.pass_triton import PLANTED_PASS, make_pass_triton

pytestmark = pytest.mark.slow


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()


def _wheel(repo: Path, commit: str, version: str, out: Path) -> None:
    names = subprocess.run(["git", "-C", str(repo), "ls-tree", "-r", "-z", "--name-only", commit, "python/triton"],
                           capture_output=True, check=True).stdout.decode().split("\0")
    files = {}
    for name in filter(None, names):
        blob = subprocess.run(["git", "-C", str(repo), "cat-file", "blob", f"{commit}:{name}"], capture_output=True,
                              check=True).stdout
        files[name.removeprefix("python/")] = blob
    info = f"triton-{version}.dist-info"
    files[f"{info}/METADATA"] = f"Metadata-Version: 2.1\nName: triton\nVersion: {version}\n".encode()
    files[f"{info}/WHEEL"] = b"Wheel-Version: 1.0\nGenerator: tests\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
    record = "".join(f"{p},sha256={_b64(d)},{len(d)}\n" for p, d in files.items()) + f"{info}/RECORD,,\n"
    out.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(out / f"triton-{version}-py3-none-any.whl", "w") as zf:
        for p, d in files.items():
            zf.writestr(zipfile.ZipInfo(p, date_time=(2025, 1, 1, 0, 0, 0)), d)
        zf.writestr(zipfile.ZipInfo(f"{info}/RECORD", date_time=(2025, 1, 1, 0, 0, 0)), record)


def test_wheels_narrow_names_the_pass_and_the_commit_bisect_to_run(tmp_path: Path) -> None:
    repo = tmp_path / "toy" / "repo"
    truth = make_pass_triton(repo, commits=48, culprit=29, touch_pass=(6, 17, 40))
    releases = {"3.4.0": 0, "3.5.0": 20, "3.6.0": 47}
    for version, i in releases.items():
        _wheel(repo, truth["order"][i], version, tmp_path / "wheels")
        subprocess.run(["git", "-C", str(repo), "tag", f"v{version}", truth["order"][i]], check=True)
    env = {k: v for k, v in os.environ.items() if k not in ("TRITONBISECT_RESULT", "TRITON_INTERPRET")}
    proc = subprocess.run([sys.executable, "-m", "tritonbisect.cli", "wheels", "--good", "3.4.0", "--bad", "3.6.0",
                           "--find-links", str(tmp_path / "wheels"), "--repro", truth["ttir"], "--oracle", "ir",
                           "--compile-target", "cuda:90", "--narrow", "--triton-dir", str(repo),
                           "--workdir", str(tmp_path / "home"), "--json"],
                          capture_output=True, text=True, env=env, timeout=900, cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-3000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out["first_bad"] == "3.6.0" and out["last_good"] == "3.5.0"
    assert out["narrow"]["first_difference"]["pass"].startswith(PLANTED_PASS)
    hint = out["prefer_pass"]
    assert hint["passes"] == [PLANTED_PASS]
    assert hint["files"] == ["include/triton/Dialect/TritonGPU/Transforms/Passes.td",
                             "lib/Dialect/TritonGPU/Transforms/Coalesce.cpp"]
    assert hint["commits"] == 2  # the culprit (29) and the filler 40 lie between 3.5.0 and 3.6.0
    command = out["commit_range"]["command"]
    assert command == (f"tritonbisect triton --triton-dir {repo} --good {truth['order'][20]} "
                       f"--bad {truth['order'][47]} --prefer-pass {PLANTED_PASS}")
    assert out["narrow"]["prefer_pass"] == hint
    # the session's versions, never the ladder's commits it searched
    assert out["narrow"]["versions"] == {"package": "triton", "culprit": "3.6.0", "parent": "3.5.0"}
    proc = subprocess.run([sys.executable, "-m", "tritonbisect.cli", "report", out["session"], "--workdir",
                           str(tmp_path / "home")], capture_output=True, text=True, env=env, timeout=120)
    assert "compiled with MLIR_ENABLE_DUMP=1 with triton 3.5.0 (pass" in proc.stdout
    assert out["narrow"]["culprit"][:7] not in proc.stdout and out["narrow"]["parent"][:7] not in proc.stdout
