"""`tritonbisect workaround` on real releases, compile-only (slow: release venvs, real compiles).

The kernels: a tf32x3 GEMM, which Triton 3.8 gives more shared memory than 3.6
(triton-lang/triton#11526; TransformerEngine lowered num_stages to fit): with 5 stages of
128x64x64 tiles it fits an sm_90 block under 3.6 and not under 3.8, and fewer stages fit it
again. With 256x256x32 tiles its accumulator alone needs more than an sm_89 block may have,
whatever the options: no workaround. And a planted compiler that aborts unless num_warps is 2:
each abort costs one candidate, and the search still finds num_warps=2.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from real_kernels import TF32X3_GEMM, traced_compile_oracle
from real_triton import triton_release_python

pytestmark = [pytest.mark.slow, pytest.mark.timeout(2400)]


def _workaround(*args: str, env: dict[str, str] | None = None) -> tuple[int, dict, str]:
    proc = subprocess.run([sys.executable, "-m", "tritonbisect.cli", "workaround", *args, "--json"],
                          capture_output=True, text=True, timeout=3000, env=env)  # fmt: skip
    lines = [line for line in proc.stdout.splitlines() if line.startswith("{")]
    return proc.returncode, json.loads(lines[-1]) if lines else {}, proc.stderr


def _compile(python: Path, oracle: Path, options: dict) -> str:
    """The oracle's status with `options` set, run by hand (not by the search)."""
    context = json.loads((oracle / "compile_context.json").read_text())
    context["job"]["options"].update(options)
    changed = oracle.parent / "changed_context.json"
    changed.write_text(json.dumps(context))
    result = oracle.parent / "by_hand.json"
    subprocess.run([str(python), str(oracle / "compile_repro.py"), "--context", str(changed), "--result", str(result)],
                   capture_output=True, text=True, timeout=900)  # fmt: skip
    return json.loads(result.read_text())["status"]


def test_fewer_stages_fit_the_3_8_gemm_in_an_sm90_block_again(tmp_path):
    oracle = traced_compile_oracle(tmp_path, TF32X3_GEMM, "gemm_tf32x3", "cuda:90", "128", "64", "64", "4", "5")
    bad, good = triton_release_python("3.8.0"), triton_release_python("3.6.0")
    home = tmp_path / "home"
    code, res, err = _workaround(str(oracle), "--bad-python", str(bad), "--good-python", str(good), "--jobs", "2",
                                 "--workdir", str(home))
    assert code == 0, err[-3000:]
    assert res["recorded"]["outcome"] == "out_of_resources" and "232448" in res["recorded"]["reason"]
    assert (res["bad_triton"], res["good_triton"]) == ("3.8.0", "3.6.0")
    changes = [w["change"] for w in res["workarounds"]]
    assert {"options": {"num_stages": 4}, "constexprs": {}, "env": {}} in changes
    assert all(w["outcome"] == "pass" and w["cost"] is not None for w in res["workarounds"])
    assert [w["cost"] for w in res["workarounds"]] == sorted(w["cost"] for w in res["workarounds"])
    assert res["tried"] == len(res["candidates"]) and res["tried"] >= len(res["workarounds"])
    assert any(c["outcome"] == "out_of_resources" for c in res["candidates"])  # num_stages=5+ still does not fit
    stages = next(w for w in res["workarounds"] if w["change"]["options"] == {"num_stages": 4})
    assert stages["paste"] == ["gemm_tf32x3[grid](..., num_stages=4)"]
    # what it says passes does pass, run by hand; what the recorded launch did still fails
    assert _compile(bad, oracle, {"num_stages": 4}) == "pass"
    assert _compile(bad, oracle, {}) == "out_of_resources"

    # again: every candidate's result comes from the cache, the answer is the same
    code, again, err = _workaround(str(oracle), "--bad-python", str(bad), "--good-python", str(good), "--jobs", "2",
                                   "--workdir", str(home))
    assert code == 0, err[-3000:]
    assert again["compiled"] == 0 and [w["change"] for w in again["workarounds"]] == changes


def test_no_option_fits_a_256x256_fp32_accumulator_in_an_sm89_block(tmp_path):
    oracle = traced_compile_oracle(tmp_path, TF32X3_GEMM, "gemm_tf32x3", "cuda:89", "256", "256", "32", "8", "2")
    # (one or two warps for a 256x256 tile take minutes to compile: --timeout bounds them)
    bounds = ["--jobs", "2", "--max-candidates", "10", "--timeout", "60", "--workdir", str(tmp_path / "home")]
    code, res, err = _workaround(str(oracle), "--bad", "3.8.0", *bounds)
    assert code == 1, err[-3000:]
    assert res["workarounds"] == [] and res["tried"] == 10 and res["good_triton"] is None
    assert res["recorded"]["outcome"] == "out_of_resources"
    assert all(c["outcome"] in ("out_of_resources", "timeout") for c in res["candidates"])
    proc = subprocess.run([sys.executable, "-m", "tritonbisect.cli", "workaround", str(oracle), "--bad", "3.8.0",
                           *bounds], capture_output=True, text=True, timeout=3000)  # fmt: skip
    assert proc.returncode == 1, proc.stderr[-3000:]
    assert "no workaround: none among 10 candidates passes" in proc.stdout


PLANT = '''"""Planted: the llir stage aborts (as a failed LLVM assertion does) unless num_warps is 2."""
import os
import sys

from triton.backends.nvidia import compiler as _nv

_add_stages = _nv.CUDABackend.add_stages


def add_stages(self, stages, options, *args, **kwargs):
    _add_stages(self, stages, options, *args, **kwargs)
    original = stages["llir"]

    def planted(src, metadata):
        if options.num_warps != 2:
            sys.stderr.write("planted: Assertion `numWarps == 2' failed.\\n")
            sys.stderr.flush()
            os.abort()
        return original(src, metadata)

    stages["llir"] = planted


_nv.CUDABackend.add_stages = add_stages
'''


def test_a_compiler_that_aborts_costs_one_candidate_each(tmp_path):
    from tritonbisect.reduce import oracle_io
    from tritonbisect.workaround.search import Settings, run_search

    oracle = traced_compile_oracle(tmp_path, TF32X3_GEMM, "gemm_tf32x3", "cuda:90", "64", "64", "32", "4", "2")
    plant = tmp_path / "plant"
    plant.mkdir()
    (plant / "sitecustomize.py").write_text(PLANT)
    settings = Settings(sys.executable, env={"PYTHONPATH": str(plant)}, jobs=2, max_candidates=12)
    work = tmp_path / "work"
    work.mkdir()
    result = run_search(oracle_io.load(oracle), settings, work, tmp_path / "cache")
    assert result.baseline.status == "crash" and "SIGABRT" in result.baseline.reason
    assert [t.change.describe() for t in result.workarounds] == ["num_warps=2"]
    crashed = [t for t in result.trials if t.status == "crash"]
    assert len(crashed) == result.tried - 1 and all("numWarps == 2" in t.reason for t in crashed)


def test_workaround_after_a_wheels_bisect_on_the_first_bad_release(tmp_path, capsys):
    from bisectors_world import run_json
    from real_triton import make_linked_venv

    oracle = traced_compile_oracle(tmp_path, TF32X3_GEMM, "gemm_tf32x3", "cuda:90", "128", "64", "64", "4", "5")
    venv = tmp_path / "venv"
    make_linked_venv(venv)
    code, res, err = run_json(
        ["wheels", "--good", "3.7.1", "--bad", "3.8.0", "--venv", str(venv), "--repro", str(oracle.parent / "trace"),
         "--kernel", "gemm_tf32x3", "--oracle", "compile", "--compile-target", "cuda:90", "--workaround",
         "--workdir", str(tmp_path / "home")], capsys)
    assert code == 0, err[-3000:]
    assert res["first_bad"] == "3.8.0"
    found = res["workaround"]
    assert (found["bad_triton"], found["good_triton"]) == ("3.8.0", "3.7.1")
    assert found["recorded"]["outcome"] == "out_of_resources"
    assert {"options": {"num_stages": 4}, "constexprs": {}, "env": {}} in [w["change"] for w in found["workarounds"]]
    session = json.loads((Path(res["session_dir"]) / "session.json").read_text())
    assert session["extra"]["workaround"]["tried"] == found["tried"]
