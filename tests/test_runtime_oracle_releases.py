"""The runtime oracle against real Triton releases (slow: venvs), under TRITON_INTERPRET=1 with
torch 2.13.0 on the CPU: the `repro.py` that this tool writes from the shared H100 traces is run
by the Python of a venv holding each release. A golden recorded at one release passes at every
other (these kernels did not change behaviour between them), and a planted bug is a mismatch
at each of them: the script bridges every API difference that a bisect over the range meets."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from oracle_support import cli, needs_traces, scenario
from real_triton import triton_release_python
from tritonbisect.oracles.selfcheck import (
    Job,
    JobResult,
    interpreter_env,
    plant_mutations,
    run_one,
)
from tritonbisect.traces.reader import load_trace

pytestmark = [pytest.mark.slow, needs_traces]

RELEASES = ("3.3.1", "3.6.0", "3.9.0")
SHARED = ("vadd", "softmax", "transpose")


def _run(python: str, script: Path, *args: str) -> JobResult:
    result = script.parent / f"result-{len(list(script.parent.glob('result-*')))}.json"
    job = Job(script.name, script, ["--vectors", "recorded", *args], result)
    return run_one(job, python=python, env=interpreter_env(), timeout=600)


@pytest.fixture(scope="module")
def oracles(tmp_path_factory) -> dict[str, tuple[Path, Path]]:
    """name -> (repro.py, the same oracle with a planted op_swap)."""
    root = tmp_path_factory.mktemp("runtime-release-oracles")
    out = {}
    for name in SHARED:
        kernel = load_trace(scenario(name) / "logs").kernels()[0]
        proc = cli("repro", str(scenario(name)), "--kernel", kernel, "--out", str(root / name))
        assert proc.returncode == 0, proc.stderr
        res = _run(sys.executable, root / name / "repro.py", "--record-golden", str(root / name / "golden.pt"))
        assert res.status == "pass", res.reason
        bug = plant_mutations(root / name, kernel, ["op_swap"])["op_swap"]
        assert bug is not None, f"op_swap does not apply to {kernel}"
        out[name] = (root / name / "repro.py", bug)
    return out


@pytest.mark.parametrize("release", RELEASES)
def test_goldens_pass_and_planted_bugs_mismatch_under_each_release(oracles, release: str) -> None:
    python = str(triton_release_python(release))
    for name, (script, bug) in oracles.items():
        golden = str(script.parent / "golden.pt")
        res = _run(python, script, "--golden", golden)
        assert res.status == "pass" and res.data["triton_version"] == release, (name, res.reason)
        res = _run(python, bug, "--golden", golden)
        assert res.status == "mismatch", (name, release, res.reason)
