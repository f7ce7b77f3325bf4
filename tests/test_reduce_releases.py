"""`tritonbisect reduce` against real Triton releases (slow: a release venv) under
TRITON_INTERPRET=1: tl.clamp of a NaN gives NaN under 3.6.0 and the low bound under 3.9.0
(the running Python's Triton). A kernel computing several things is reduced to the few lines
that show it; the reduced oracle and issue.py show it by themselves."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import pytest

from oracle_support import needs_torch_triton
from real_triton import triton_release_python
from reduce_support import NEGATE, cli, interpret_env, traced_oracle

pytestmark = [pytest.mark.slow, needs_torch_triton]

GOOD, BAD = "3.6.0", "3.9.0"


@pytest.fixture(scope="module")
def reduced(tmp_path_factory) -> tuple[Path, Path, dict, str]:
    import triton

    if triton.__version__ != BAD:
        pytest.skip(f"the running Python has triton {triton.__version__}, these tests want {BAD}")
    root = tmp_path_factory.mktemp("reduce-releases")
    oracle = traced_oracle(root)
    good = str(triton_release_python(GOOD))
    out = root / "reduced"
    proc = cli("reduce", str(oracle), "--good-python", good, "--bad-python", sys.executable, "--out", str(out),
               "--jobs", "2", "--json")
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "candidates tried" in proc.stderr  # progress goes to stderr with --json
    return oracle, out, json.loads(proc.stdout), good


def _kernel_source(script: Path) -> str:
    for node in ast.parse(script.read_text()).body:
        if isinstance(node, ast.Assign) and getattr(node.targets[0], "id", "") == "KERNEL_SOURCE":
            return node.value.value  # type: ignore[attr-defined]
    raise AssertionError("no KERNEL_SOURCE")


def test_reduced_to_the_lines_that_show_the_change(reduced) -> None:
    _, out, result, _ = reduced
    assert result["status"] == "reduced" and result["out"] == str(out)
    assert result["signature"] == "mismatch: out_ptr"
    assert result["before"] == {"kernel_lines": 17, "elements": 5000}
    assert result["after"]["kernel_lines"] <= 6 and result["after"]["elements"] <= 4
    assert result["tests"] > 10 and result["seconds"] > 0
    assert (result["good_triton"], result["bad_triton"]) == (GOOD, BAD)
    source = _kernel_source(out / "repro.py")
    assert "tl.clamp" in source
    for gone in ("tl.exp", "_scale", "tl.where", "mask"):
        assert gone not in source, source


def test_reduced_oracle_passes_at_good_and_fails_at_bad_by_itself(reduced) -> None:
    _, out, _, good = reduced
    env = interpret_env()
    rec = subprocess.run([good, str(out / "repro.py"), "--record-golden", str(out / "g.pt")], env=env,
                         capture_output=True, text=True, timeout=300)  # fmt: skip
    assert rec.returncode == 0, rec.stdout + rec.stderr
    cmp = subprocess.run([sys.executable, str(out / "repro.py"), "--golden", str(out / "g.pt")], env=env,
                         capture_output=True, text=True, timeout=300)  # fmt: skip
    assert cmp.returncode == 1 and "MISMATCH: " in cmp.stdout and "out_ptr" in cmp.stdout, cmp.stdout
    # the folder is standalone: its blobs are inside it
    ctx = json.loads((out / "context.json").read_text())
    for spec in ctx["args"]:
        if spec.get("init", {}).get("source") == "blob":
            assert not Path(spec["init"]["file"]).is_absolute() and (out / spec["init"]["file"]).is_file()


def test_issue_py_prints_different_outputs_under_the_two_releases(reduced) -> None:
    _, out, _, good = reduced
    runs = [subprocess.run([py, str(out / "issue.py")], env=interpret_env(), capture_output=True, text=True,
                           timeout=300) for py in (good, sys.executable)]  # fmt: skip
    assert all(r.returncode == 0 for r in runs), [r.stderr[-1000:] for r in runs]
    text = (out / "issue.py").read_text()
    assert "tl.clamp" in text and len(text) < 4000, len(text)  # no literal of a large tensor
    # one line says what the good Triton gives and what this one gives
    assert runs[0].stdout.strip().splitlines()[-1].startswith(f"SAME as Triton {GOOD}: ")
    assert f"DIFFERS from Triton {GOOD}: out_ptr (Triton {BAD})" in runs[1].stdout
    expected = next(line for line in runs[1].stdout.splitlines() if line.startswith("out_ptr: expected"))
    actual = next(line for line in runs[1].stdout.splitlines() if line.startswith("out_ptr: actual"))
    assert f"(Triton {GOOD})" in expected and "nan" in expected and "nan" not in actual


def test_reduce_prints_its_progress_on_stderr_and_the_result_on_stdout(tmp_path: Path) -> None:
    import triton

    if triton.__version__ != BAD:
        pytest.skip(f"the running Python has triton {triton.__version__}, this test wants {BAD}")
    oracle = traced_oracle(tmp_path)
    proc = cli("reduce", str(oracle), "--good-python", str(triton_release_python(GOOD)), "--bad-python",
               sys.executable, "--out", str(tmp_path / "reduced"), "--level", "inputs")
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "candidates tried" in proc.stderr and "candidates tried" not in proc.stdout
    assert proc.stdout.startswith("reduced: ") and not any(line.startswith("[") for line in proc.stdout.splitlines())


def test_published_versions_as_endpoints(tmp_path: Path) -> None:
    """--good/--bad VERSION: both wheels fetched and installed as `wheels` does, in venvs that
    use the running Python's torch; the running Python's own Triton is left as it was."""
    import triton

    if triton.__version__ != BAD:
        pytest.skip(f"the running Python has triton {triton.__version__}, this test wants {BAD}")
    oracle = traced_oracle(tmp_path)
    out = tmp_path / "reduced"
    proc = cli("reduce", str(oracle), "--good", GOOD, "--bad", BAD, "--workdir", str(tmp_path / "home"),
               "--out", str(out), "--level", "inputs", "--json")
    if proc.returncode == 4 and "pypi.org" in proc.stderr:
        pytest.skip(f"the package index is not reachable: {proc.stderr.strip()[-200:]}")
    assert proc.returncode == 0, proc.stderr[-3000:]
    result = json.loads(proc.stdout)
    assert (result["good_triton"], result["bad_triton"]) == (GOOD, BAD)
    assert result["after"]["elements"] < result["before"]["elements"] // 100
    assert sorted(p.name for p in (tmp_path / "home" / "reduce" / "envs").iterdir()) == [f"triton-{GOOD}", f"triton-{BAD}"]
    here = subprocess.run([sys.executable, "-c", "import triton; print(triton.__version__)"], capture_output=True,
                          text=True)  # fmt: skip
    assert here.stdout.strip() == BAD


def test_compile_oracle_reduced_to_the_codegen_change(tmp_path: Path) -> None:
    """A compile oracle (cross-compiled for cuda:90, no GPU): 3.6.0 emits a PTX `sub` for a
    float negation, 3.9.0 none; reduced while that statistic still moves down."""
    import triton

    if triton.__version__ != BAD:
        pytest.skip(f"the running Python has triton {triton.__version__}, this test wants {BAD}")
    oracle = traced_oracle(tmp_path, NEGATE, "negate", "--mode", "compile", "--compile-target", "cuda:90")
    good = str(triton_release_python(GOOD))
    out = tmp_path / "reduced"
    proc = cli("reduce", str(oracle), "--good-python", good, "--bad-python", sys.executable, "--out", str(out),
               "--codegen-threshold", "ptx.sub=0", "--json")
    assert proc.returncode == 0, proc.stderr[-3000:]
    result = json.loads(proc.stdout)
    assert result["signature"] == "codegen: ptx.sub down"
    assert result["after"]["kernel_lines"] < result["before"]["kernel_lines"] == 7
    source = (out / "kernel_source.py").read_text()
    assert "-" in source and "x * y" not in source and "y_ptr" not in source, source
    # the reduced compile oracle shows it by itself, run as the original
    env = interpret_env()
    rec = subprocess.run([good, str(out / "compile_repro.py"), "--record-golden", str(tmp_path / "g.json")],
                         env=env, capture_output=True, text=True, timeout=300)  # fmt: skip
    assert rec.returncode == 0, rec.stdout + rec.stderr
    chk = subprocess.run([sys.executable, str(out / "compile_repro.py"), "--golden", str(tmp_path / "g.json"),
                          "--check", "codegen", "--codegen-threshold", "ptx.sub=0"], env=env, capture_output=True,
                         text=True, timeout=300)  # fmt: skip
    assert chk.returncode == 1 and "PTX sub instructions" in chk.stdout, chk.stdout + chk.stderr
    runs = [subprocess.run([py, str(out / "issue.py")], capture_output=True, text=True, timeout=300)
            for py in (good, sys.executable)]
    assert all(r.returncode == 0 for r in runs), [r.stderr[-500:] for r in runs]
    assert "sub.f32" in runs[0].stdout and "sub.f32" not in runs[1].stdout
