"""`tritonbisect reduce` on the command line: one line and exit 2 for bad input, exit 3 and
one line when the original does not reproduce (the running Python's Triton as good and bad)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from oracle_support import needs_torch_triton
from reduce_support import cli, traced_oracle


def _one_line(proc) -> str:
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and "Traceback" not in proc.stderr, proc.stderr
    return lines[0]


def test_bad_input_is_one_line_and_exit_2(tmp_path: Path) -> None:
    py = sys.executable
    proc = cli("reduce", str(tmp_path), "--good-python", py, "--bad-python", py, "--out", str(tmp_path / "o"))
    assert proc.returncode == 2 and "no repro.py there" in _one_line(proc)
    (tmp_path / "repro.py").write_text("")
    proc = cli("reduce", str(tmp_path), "--good-python", py, "--bad-python", py, "--out", str(tmp_path / "o"),
               "--level", "source,bytes")
    assert proc.returncode == 2 and "unknown level(s) bytes" in _one_line(proc)
    proc = cli("reduce", str(tmp_path), "--good-python", "/nonexistent/python", "--bad-python", py,
               "--out", str(tmp_path / "o"))
    assert proc.returncode == 2 and "--good-python /nonexistent/python: no such interpreter" in _one_line(proc)
    for mixed in (["--good-python", py, "--bad", "3.9.0"], ["--good-python", py], ["--good", "3.6.0", "--bad", "3.9.0",
                                                                                   "--good-python", py, "--bad-python", py]):
        proc = cli("reduce", str(tmp_path), *mixed, "--out", str(tmp_path / "o"))
        assert proc.returncode == 2 and "either as --good-python PY --bad-python PY or as --good" in _one_line(proc)


@needs_torch_triton
def test_not_reproducible_is_exit_3_with_one_line(tmp_path: Path) -> None:
    oracle = traced_oracle(tmp_path)
    py = sys.executable
    proc = cli("reduce", str(oracle), "--good-python", py, "--bad-python", py, "--out", str(tmp_path / "out"),
               "--json")
    assert proc.returncode == 3, proc.stderr
    assert json.loads(proc.stdout)["status"] == "not-reproducible"
    assert _one_line(proc).startswith("not reproducible: both Tritons give the same result")
    assert not (tmp_path / "out").exists()
