"""The IR oracle against real Triton releases from the package index (slow: venvs).

The H100 trace's IR was recorded by Triton 3.6.0. Its TTGIR uses the `ttg` dialect prefix
that Triton 3.3 introduced (`#ttg.blocked`, `ttg.num-warps`); 3.2.0 and 3.0.0 know it as
`triton_gpu` and cannot parse it: `unreadable_ir` (exit 5), a skip, never a compile error.
The recorded TTIR still compiles with 3.6.0 itself, and its TTGIR is the recorded one.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from compile_support import run_oracle
from oracle_support import cli, needs_traces, scenario
from real_triton import triton_release_python
from tritonbisect.core.outcome import Kind, Policy, Verdict, classify_test
from tritonbisect.traces.reader import load_trace

pytestmark = [pytest.mark.slow, needs_traces]


@pytest.fixture(scope="module")
def oracles(tmp_path_factory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("ir-release-oracles")
    out = {}
    for stage in ("ttir", "ttgir"):
        proc = cli("repro", str(scenario("vadd")), "--kernel", "add_kernel", "--from", stage, "--out",
                   str(root / stage))
        assert proc.returncode == 0, proc.stderr
        out[stage] = root / stage
    return out


def _normalised(text: str) -> list[str]:
    return [line.split(" loc(")[0].rstrip() for line in text.splitlines() if line.strip() and not line.startswith("#loc")]


def test_recorded_ttir_compiles_with_the_release_that_recorded_it(oracles, tmp_path) -> None:
    python = str(triton_release_python("3.6.0"))
    proc, result = run_oracle(oracles["ttir"], "--keep", str(tmp_path / "kept"), python=python)
    assert proc.returncode == 0 and result["status"] == "pass", proc.stdout + proc.stderr
    assert result["triton_version"] == "3.6.0"
    comp = load_trace(scenario("vadd") / "logs").compilations
    recorded = next(c for c in comp.values() if c.name == "add_kernel").ir["ttgir"]
    produced = Path(result["artifacts"]["ttgir"]).read_text()
    assert _normalised(produced) == _normalised(recorded)


@pytest.mark.parametrize("release", ["3.3.1", "3.6.0", "3.9.0"])
def test_newer_and_same_dialect_releases_read_the_ttgir(oracles, release: str) -> None:
    proc, result = run_oracle(oracles["ttgir"], python=str(triton_release_python(release)))
    assert proc.returncode == 0 and result["status"] == "pass", proc.stdout + proc.stderr


@pytest.mark.parametrize("release", ["3.0.0", "3.2.0"])
def test_ttgir_of_a_newer_release_is_unreadable_to_an_older_one(oracles, release: str) -> None:
    proc, result = run_oracle(oracles["ttgir"], python=str(triton_release_python(release)))
    assert proc.returncode == 5, proc.stdout + proc.stderr
    assert result["status"] == "unreadable_ir" and result["triton_version"] == release
    assert "unregistered dialect" in result["reason"]
    kind = classify_test(proc.returncode, proc.stdout, result=result).kind
    assert kind is Kind.UNREADABLE_IR and Policy().verdict(kind) is Verdict.SKIP
