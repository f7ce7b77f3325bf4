"""The runtime oracle against real Triton releases (slow: venvs), under TRITON_INTERPRET=1 with
torch 2.13.0 on the CPU: the `repro.py` that this tool writes from the shared H100 traces is run
by the Python of a venv holding each release. A golden recorded at one release passes at every
other (these kernels did not change behaviour between them), and a planted bug is a mismatch
at each of them: the script bridges every API difference that a bisect over the range meets."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from oracle_support import cli, needs_traces, scenario
from real_triton import triton_release_python
from tritonbisect.tritonparse.mutations import mutate_script
from tritonbisect.tritonparse.reader import load_trace
from tritonbisect.tritonparse.selfcheck import interpreter_env

pytestmark = [pytest.mark.slow, needs_traces]

RELEASES = ("3.3.1", "3.6.0", "3.9.0")
SHARED = ("vadd", "softmax", "transpose")


def _run(python: str, folder: Path, *args: str) -> dict:
    result = folder / f"result-{len(list(folder.glob('result-*')))}.json"
    proc = subprocess.run([python, str(folder / "repro.py"), "--result", str(result), "--vectors", "recorded",
                           *args], env=interpreter_env(), capture_output=True, text=True, timeout=600)
    assert result.is_file(), proc.stdout + proc.stderr
    return json.loads(result.read_text())


@pytest.fixture(scope="module")
def oracles(tmp_path_factory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("runtime-release-oracles")
    out = {}
    for name in SHARED:
        kernel = load_trace(scenario(name) / "logs").kernels()[0]
        proc = cli("repro", str(scenario(name)), "--kernel", kernel, "--out", str(root / name))
        assert proc.returncode == 0, proc.stderr
        data = _run(sys.executable, root / name, "--record-golden", str(root / name / "golden.pt"))
        assert data["status"] == "pass", data["reason"]
        bug = root / f"{name}-bug"
        bug.mkdir()
        for f in (root / name).iterdir():
            target = bug / f.name
            target.symlink_to(f) if f.name != "repro.py" else target.write_text(
                mutate_script(f.read_text(), kernel, "op_swap", {}) or "")
        out[name] = root / name
    return out


@pytest.mark.parametrize("release", RELEASES)
def test_goldens_pass_and_planted_bugs_mismatch_under_each_release(oracles, release: str) -> None:
    python = str(triton_release_python(release))
    for name, folder in oracles.items():
        data = _run(python, folder, "--golden", str(folder / "golden.pt"))
        assert data["status"] == "pass" and data["triton_version"] == release, (name, data["reason"])
        data = _run(python, folder.with_name(f"{name}-bug"), "--golden", str(folder / "golden.pt"))
        assert data["status"] == "mismatch", (name, release, data["reason"])
