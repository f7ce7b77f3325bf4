"""`tritonbisect reduce` of compile-mode oracles against real releases (slow: a release venv;
no GPU: everything is cross-compiled for cuda:90).

reduce_programs/row_reductions.py has a loop and two reductions of its result; Triton 3.6.0
compiles its TTGIR with 5 PTX barriers, 3.9.0 (the running Python's Triton) the same TTGIR
with 3 (`--codegen-threshold ptx.bar=0`: `codegen: ptx.bar down`). Its compile oracle is
reduced at the source level; the TTGIR and TTIR that 3.6.0 makes of it, turned into IR
oracles by `repro --ir`, at the IR level. Each reduced oracle shows the difference when run
by itself, and so does its issue.py."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from oracle_support import needs_torch_triton
from real_triton import triton_release_python
from reduce_support import ROW_REDUCTIONS, cli, traced_oracle

pytestmark = [pytest.mark.slow, needs_torch_triton]

GOOD, BAD = "3.6.0", "3.9.0"
THRESHOLD = "ptx.bar=0"
SIGNATURE = "codegen: ptx.bar down"


@pytest.fixture(scope="module")
def oracles(tmp_path_factory) -> dict[str, Path]:
    """The compile oracle ("source") and the IR oracles ("ttir", "ttgir") of `rowwise`."""
    import triton

    if triton.__version__ != BAD:
        pytest.skip(f"the running Python has triton {triton.__version__}, these tests want {BAD}")
    root = tmp_path_factory.mktemp("reduce-ir-releases")
    source = traced_oracle(root, ROW_REDUCTIONS, "rowwise", "--mode", "compile", "--compile-target", "cuda:90")
    kept = root / "kept"
    proc = subprocess.run([str(triton_release_python(GOOD)), str(source / "compile_repro.py"), "--keep", str(kept)],
                          capture_output=True, text=True, timeout=300)  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr
    found = {"source": source}
    for stage in ("ttir", "ttgir"):
        made = cli("repro", "--ir", str(kept / f"rowwise.{stage}"), "--compile-target", "cuda:90",
                   "--out", str(root / stage))  # fmt: skip
        assert made.returncode == 0, made.stderr
        found[stage] = root / stage
    return found


def _reduce(oracle: Path, out: Path) -> dict:
    proc = cli("reduce", str(oracle), "--good-python", str(triton_release_python(GOOD)), "--bad-python",
               sys.executable, "--out", str(out), "--codegen-threshold", THRESHOLD, "--json")  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    result = json.loads(proc.stdout)
    assert result["status"] == "reduced" and result["signature"] == SIGNATURE
    assert (result["good_triton"], result["bad_triton"]) == (GOOD, BAD)
    assert result["tests"] > 5 and result["seconds"] > 0
    return result


def _shows_it_by_itself(out: Path, tmp_path: Path) -> None:
    """The reduced oracle, run as the original: records at good, fails the check at bad; its
    issue.py prints fewer bar.sync under the bad Triton."""
    good = str(triton_release_python(GOOD))
    golden = tmp_path / "golden.json"
    rec = subprocess.run([good, str(out / "compile_repro.py"), "--record-golden", str(golden)], capture_output=True,
                         text=True, timeout=300)  # fmt: skip
    assert rec.returncode == 0, rec.stdout + rec.stderr
    chk = subprocess.run([sys.executable, str(out / "compile_repro.py"), "--golden", str(golden), "--check", "codegen",
                          "--codegen-threshold", THRESHOLD], capture_output=True, text=True, timeout=300)  # fmt: skip
    assert chk.returncode == 1 and "PTX bar" in chk.stdout, chk.stdout + chk.stderr
    runs = [subprocess.run([py, str(out / "issue.py")], capture_output=True, text=True, timeout=300)
            for py in (good, sys.executable)]
    assert all(r.returncode == 0 for r in runs), [r.stderr[-1000:] for r in runs]
    bars = [int(m.group(1)) if (m := re.search(r"^bar\.sync (\d+)$", r.stdout, re.M)) else 0 for r in runs]
    assert bars[0] > bars[1], [r.stdout for r in runs]


@pytest.mark.parametrize("stage", ["ttgir", "ttir"])
def test_an_ir_oracle_reduced_to_the_reduction_that_shows_it(oracles, stage: str, tmp_path: Path) -> None:
    out = tmp_path / "reduced"
    result = _reduce(oracles[stage], out)
    assert result["before"]["ir_ops"] == 41 and result["after"]["ir_ops"] <= 8, result
    assert result["after"]["kernel_lines"] < result["before"]["kernel_lines"] and result["after"]["elements"] == 0
    assert result["skipped"] == ["source: an IR oracle has no Python source (the ir level reduces its IR)",
                                 "inputs: an IR oracle has no inputs (it compiles, it does not launch)"]
    ir = (out / f"rowwise.{stage}").read_text()
    assert ir == result["kernel_source"] and result["oracle"] == str(out / "compile_repro.py")
    assert '"tt.reduce"' in ir and "tt.store" in ir
    for gone in ("scf.for", "math.exp", "tt.load", "loc(", "%x_ptr", "%w_ptr"):
        assert gone not in ir, ir
    _shows_it_by_itself(out, tmp_path)


def test_the_compile_oracle_reduced_at_the_source_level(oracles, tmp_path: Path) -> None:
    out = tmp_path / "reduced"
    result = _reduce(oracles["source"], out)
    assert result["before"]["kernel_lines"] == 12 and result["after"]["kernel_lines"] <= 5, result
    source = (out / "kernel_source.py").read_text()
    assert "tl.sum" in source or "tl.max" in source
    for gone in ("for ", "tl.exp", "x_ptr", "w_ptr"):
        assert gone not in source, source
    _shows_it_by_itself(out, tmp_path)
