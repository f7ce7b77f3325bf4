"""The oracle table (oracles/kinds.py): every row's writer exists and writes an oracle folder,
and the options that go with compiling follow its `compiles` column (the real CLI)."""

from __future__ import annotations

import importlib
from pathlib import Path

import pytest

from engine_repo import tb
from tritonbisect.oracles.kinds import BISECT_CHOICES, ORACLES, OracleKind, compiles, oracle_kind
from tritonbisect.session.judging import TestSettings as Judging


def test_every_kind_has_a_row_whose_writer_and_judge_exist() -> None:
    assert set(ORACLES) == set(OracleKind)
    src = Path(importlib.import_module("tritonbisect").__file__ or "").parent
    for kind, entry in ORACLES.items():
        assert entry.kind is kind and entry.summary
        importlib.import_module(entry.writer)  # the module that writes the folder
        judged_by = entry.judge.split("(")[1].rstrip(")")  # the template or folder copied into it
        assert (src / judged_by).exists(), (kind, judged_by)


def test_the_bisectors_offer_the_rows_marked_so() -> None:
    assert BISECT_CHOICES == ["runtime", "compile", "ir"]
    assert [k for k in OracleKind if compiles(k)] == [OracleKind.COMPILE, OracleKind.IR]
    assert oracle_kind(None) is OracleKind.RUNTIME and oracle_kind("ir") is OracleKind.IR
    assert not compiles("no-such-kind")
    with pytest.raises(ValueError):
        oracle_kind("no-such-kind")
    assert Judging().oracle == "runtime"


@pytest.mark.parametrize("option", [["--narrow"], ["--workaround"], ["--check", "codegen"]])
def test_what_goes_with_compiling_is_refused_for_the_runtime_oracle(tmp_path: Path, option: list[str]) -> None:
    trace = tmp_path / "trace.ndjson"
    trace.write_text("")
    proc = tb("run", "--repo", str(tmp_path), "--good", "a", "--bad", "b", "--repro", str(trace),
              "--kernel", "k", "--oracle", "runtime", *option, cwd=tmp_path, home=tmp_path / "home")
    assert proc.returncode == 2, proc.stderr
    assert "--oracle compile" in proc.stderr and "Traceback" not in proc.stderr


def test_the_replay_kind_is_no_bisect_choice(tmp_path: Path) -> None:
    proc = tb("run", "--repo", str(tmp_path), "--good", "a", "--bad", "b", "--repro", "t", "--kernel", "k",
              "--oracle", "replay", cwd=tmp_path, home=tmp_path / "home")
    assert proc.returncode == 2 and "'replay' is not one of 'runtime', 'compile', 'ir'" in proc.stderr
