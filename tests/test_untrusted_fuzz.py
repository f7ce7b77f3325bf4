"""Crafted and corrupt inputs end in one line and exit 2, never a traceback, and lose nothing
already recorded: traces (the real H100 trace of `vadd`, one field changed), a session's
session.json and journal.jsonl (a real `run`'s), a compat-builder session's state.json, a
commits.csv and an oracle folder — each through the CLI. The table holds the shapes that
ended in tracebacks before; the hypothesis tests try others."""

from __future__ import annotations

import contextlib
import copy
import io
import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engine_repo import BUILD, TEST, last_json, linear, tb
from oracle_support import needs_traces, scenario

ODD = [None, 0, -1, 1.5, "x", "", [], {}, [1, "a"], {"a": 1}, True, 10**30, "../../x", "\x1b[2J", "--output=/tmp/x"]


def _cli(*args: str, cwd: Path | None = None, tool: str = "tritonbisect.cli") -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", tool, *args], cwd=cwd, capture_output=True, text=True,
                          timeout=120, check=False)


def _one_line_exit_2(proc: subprocess.CompletedProcess[str]) -> str:
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
    assert len(lines) == 1 and ": error: " in lines[0], proc.stderr
    return lines[0]


def _set(data: Any, path: tuple, value: Any) -> Any:
    data = copy.deepcopy(data)
    node = data
    for key in path[:-1]:
        node = node[key]
    if value is _DELETE:
        del node[path[-1]]
    else:
        node[path[-1]] = value
    return data


_DELETE = object()

# --- traces -------------------------------------------------------------------------------


def _vadd() -> list[dict]:
    raw = next((scenario("vadd") / "logs").glob("*.ndjson"))
    return [json.loads(line) for line in raw.read_text(encoding="utf-8").splitlines() if line.strip()]


# (record index, path in it, value): 0 is a compilation, 1 a launch
TRACE_CASES = [
    (1, ("extracted_args", "out_ptr", "storage_offset"), "x"),
    (1, ("extracted_args", "x_ptr", "shape", 0), None),
    (1, ("extracted_args", "y_ptr", "stride"), []),
    (1, ("extracted_args", "y_ptr", "stride", 0), "x"),
    (1, ("extracted_args", "n_elements", "type"), {"a": 1}),
    (1, ("extracted_args", "y_ptr", "shape"), -1),
    (1, ("stack",), 1.5),
    (1, ("stack",), "\x1b[2J"),
    (1, ("grid",), ["a"]),
    (1, ("compilation_metadata", "hash"), True),
    (1, ("event_type",), [1, "a"]),
    (1, ("tritonbisect_launch_seq",), [1]),
    (0, ("payload", "metadata", "target", "warp_size"), {"a": 1}),
    (0, ("payload",), "x"),
    (0, ("payload", "python_source"), [1, "a"]),
]


@needs_traces
@pytest.mark.parametrize("index,path,value", TRACE_CASES)
def test_a_crafted_trace_record_is_one_line_and_exit_2(tmp_path: Path, index: int, path: tuple, value: Any) -> None:
    records = _vadd()
    records[index] = _set(records[index], path, value)
    trace = tmp_path / "t.ndjson"
    trace.write_text("".join(json.dumps(r) + "\n" for r in records))
    for args in (["info", str(trace), "--kernel", "add_kernel"], ["repro", str(trace), "--kernel", "add_kernel",
                                                                   "--launch-id", "0", "--out", str(tmp_path / "o")],
                 ["repro", str(trace), "--kernel", "add_kernel", "--mode", "compile", "--out", str(tmp_path / "c")]):
        proc = _cli(*args)
        assert "Traceback" not in proc.stderr, proc.stderr
        assert proc.returncode in (0, 2), proc.stderr  # a field the command does not need is no error
        if proc.returncode == 2:
            _one_line_exit_2(proc)


def _in_process(argv: list[str], main: Callable[[list[str]], int]) -> tuple[int, str]:
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        code = main(argv)
    return code, err.getvalue()


def _paths(obj: Any, prefix: tuple = ()) -> list[tuple]:
    found = [prefix] if prefix else []
    if isinstance(obj, dict):
        for k, v in obj.items():
            found += _paths(v, (*prefix, k))
    elif isinstance(obj, list):
        for i, v in enumerate(obj[:3]):
            found += _paths(v, (*prefix, i))
    return found


@needs_traces
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_any_field_of_a_trace_changed_is_never_a_traceback(tmp_path: Path, data: st.DataObject) -> None:
    """The CLI's entry point, in this process (hundreds of runs): an uncaught exception fails."""
    from tritonbisect.cli import main

    records = _vadd()
    index = data.draw(st.integers(0, len(records) - 1))
    path = data.draw(st.sampled_from(_paths(records[index])))
    value = data.draw(st.sampled_from([*ODD, _DELETE]))
    if value is _DELETE and not isinstance(path[-1], str):
        value = None
    records[index] = _set(records[index], path, value)
    trace = tmp_path / "fuzzed.ndjson"
    trace.write_text("".join(json.dumps(r) + "\n" for r in records))
    for argv in (["info", str(trace)], ["repro", str(trace), "--kernel", "add_kernel", "--out", str(tmp_path / "o")],
                 ["repro", str(trace), "--kernel", "add_kernel", "--from", "ttir", "--out", str(tmp_path / "i")]):
        code, err = _in_process(argv, main)
        assert code in (0, 2), err
        assert code == 0 or len(err.strip().splitlines()) == 1, err


# --- sessions -------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def finished_session(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, str]:
    root = tmp_path_factory.mktemp("session")
    repo, home = root / "repo", root / "home"
    shas = linear(repo, 8, culprit=4)
    proc = tb("run", "--repo", str(repo), "--good", shas[0], "--bad", "main", "--build", BUILD, "--test", TEST,
              "--json", cwd=repo, home=home)
    assert proc.returncode == 0, proc.stderr
    return repo, home, last_json(proc.stdout)["session"]


SESSION_CASES = [
    ("session.json", ("settings", "test"), -1),
    ("session.json", ("settings", "hint"), "x"),
    ("session.json", ("settings", "follow_ups", "reduce"), []),
    ("session.json", ("settings", "executor", "env"), {"A": 1}),
    ("session.json", ("argv", 2), True),
    ("session.json", ("extra", "posterior"), ""),
    ("session.json", ("extra", "posterior", "main", "top", 0), "x"),
    ("session.json", ("phases", 0, "culprit"), "--output=/tmp/planted"),
    ("session.json", ("phases", 0, "name"), "../../x"),
    ("session.json", ("phases", 0, "range_size"), "many"),
    ("session.json", ("current_phase",), "x"),
    ("journal.jsonl", (2, "round"), "x"),
    ("journal.jsonl", (1, "tests"), -1),
    ("journal.jsonl", (0, "tests", 0), None),
    ("journal.jsonl", (0, "tests"), "x"),
    ("journal.jsonl", (2, "build", "seconds"), []),
    ("journal.jsonl", (1, "seq"), [1, "a"]),
]


def _read(path: Path) -> Any:
    if path.suffix == ".jsonl":
        return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    return json.loads(path.read_text())


def _write(path: Path, data: Any) -> None:
    path.write_text("".join(json.dumps(r) + "\n" for r in data) if path.suffix == ".jsonl" else json.dumps(data))


@pytest.mark.parametrize("name,path,value", SESSION_CASES)
def test_a_crafted_session_file_is_one_line_exit_2_and_loses_nothing(
        finished_session: tuple[Path, Path, str], name: str, path: tuple, value: Any) -> None:
    repo, home, sid = finished_session
    target = home / "sessions" / sid / name
    original = target.read_bytes()
    try:
        _write(target, _set(_read(target), path, value))
        crafted = {p.name: p.read_bytes() for p in (home / "sessions" / sid).iterdir() if p.is_file()}
        for cmd in (["status", sid], ["report", sid], ["report", sid, "--format", "json"], ["log", sid],
                    ["resume", sid]):
            proc = tb(*cmd, cwd=repo, home=home)
            assert "Traceback" not in proc.stderr, proc.stderr
            assert proc.returncode in (0, 2), proc.stderr
            if proc.returncode == 2:
                _one_line_exit_2(proc)
            # what was recorded stays as it was: a refusal rewrites nothing
            assert {p.name: p.read_bytes() for p in (home / "sessions" / sid).iterdir() if p.is_file()} == crafted
        assert not Path("/tmp/planted").exists()
    finally:
        target.write_bytes(original)


# --- compat-builder, commits.csv ------------------------------------------------------------


def _compat_session(work: Path) -> Path:
    from tritonbisect.compat_builder.session_state import MapState, sessions_root

    sha = [f"{i:x}" * 40 for i in range(1, 10)]
    sdir = sessions_root(work) / "20260101-000000-abcd-0001"
    state = MapState.create(sdir, id=sdir.name, kind="map", triton_repo=str(work / "t"), llvm_repo=str(work / "l"),
                            worktree=str(sdir / "triton"), branch="compat/x", ai="none", ai_model="",
                            max_attempts=5, smoke="true", bump=sha[0], old_llvm=sha[1], new_llvm=sha[2],
                            current_triton=sha[3], current_good=sha[4])
    state.fixes = [{"commit": sha[5], "attempts": [{"usage": {"input_tokens": 3}}], "files": ["python/setup.py"],
                    "model": "m"}]
    state.verdicts = {sha[6]: "good"}
    state.save("crafted")
    return sdir


@pytest.mark.parametrize("path,value", [
    (("fixes", 0, "attempts", 0, "usage", "input_tokens"), {"a": 1}),
    (("fixes", 0, "commit"), 0),
    (("fixes", 0), {}),
    (("fixes", 0, "files", 0), True),
    (("fixes", 0, "attempts"), -1),
    (("current_triton",), "--output=/tmp/planted"),
    (("verdicts",), {"../x": "good"}),
    (("max_attempts",), "five"),
    ((), [1, 2]),
])
def test_a_crafted_compat_session_is_one_line_and_exit_2(tmp_path: Path, path: tuple, value: Any) -> None:
    sdir = _compat_session(tmp_path)
    state = sdir / "state.json"
    state.write_text(json.dumps(value if not path else _set(json.loads(state.read_text()), path, value)))
    before = state.read_bytes()
    for cmd in (["status"], ["resume"]):
        proc = _cli(*cmd, "--workdir", str(tmp_path), tool="tritonbisect.compat_builder.cli")
        assert "corrupt session state" in _one_line_exit_2(proc) or "unreadable" in proc.stderr
    assert state.read_bytes() == before


def test_a_corrupt_commits_csv_is_one_line_and_exit_2(tmp_path: Path) -> None:
    rows = ["# schema_version=1", *(f"# {k}={'a' * 40}" for k in ("bump", "old_llvm", "new_llvm",
                                                                      "final_bad_triton_commit")),
            "triton_commit,llvm_commit_last_compatible", f"{'b' * 40},{'c' * 40}"]
    for bad in (["\x1b[2J"], ["\x00,\xff"], [f"{'b' * 40},--output=/tmp/planted"], ["x" * 5000]):
        path = tmp_path / "commits.csv"
        path.write_text("\n".join(rows + bad) + "\n", encoding="utf-8", errors="surrogateescape")
        proc = _cli("verify", "--csv", str(path), cwd=tmp_path, tool="tritonbisect.compat_builder.cli")
        line = _one_line_exit_2(proc)
        assert "\x1b" not in line and "\x00" not in line


# --- oracle folders -------------------------------------------------------------------------


@needs_traces
@pytest.mark.parametrize("path,value", [
    (("args", 1, "init", "file"), [1, "a"]),
    (("args", 1, "init", "file"), "../../../../etc/passwd"),
    (("args", 2), 0),
    (("args",), "x"),
    ((), [1]),
])
def test_a_crafted_oracle_folder_is_one_line_and_exit_2(tmp_path: Path, path: tuple, value: Any) -> None:
    oracle = tmp_path / "oracle"
    made = _cli("repro", str(scenario("vadd")), "--kernel", "add_kernel", "--launch-id", "0", "--out", str(oracle))
    assert made.returncode == 0, made.stderr
    context = oracle / "context.json"
    context.write_text(json.dumps(value if not path else _set(json.loads(context.read_text()), path, value)))
    proc = _cli("reduce", str(oracle), "--good-python", sys.executable, "--bad-python", sys.executable,
                "--out", str(tmp_path / "small"))
    _one_line_exit_2(proc)
    assert not (tmp_path / "small" / "blobs").exists() or not any(
        b"root:" in p.read_bytes() for p in (tmp_path / "small" / "blobs").iterdir())


# --- pip's configuration --------------------------------------------------------------------


def test_a_pip_conf_pip_cannot_read_is_said_in_one_line(tmp_path: Path) -> None:
    """pip refuses a pip.conf without a section header; the tool used to go on with PyPI silently."""
    import os

    conf = tmp_path / "pip.conf"
    conf.write_text("index-url = https://alice:s3cret@mirror.example/simple\n")
    index = tmp_path / "empty" / "simple"
    index.mkdir(parents=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PIP_", "UV_"))}
    proc = subprocess.run([sys.executable, "-m", "tritonbisect.cli", "wheels", "--good", "3.0.0", "--bad", "3.1.0",
                           "--test", "true", "--index-url", index.as_uri(), "--workdir", str(tmp_path / "w")],
                          cwd=tmp_path, env={**env, "PIP_CONFIG_FILE": str(conf)}, capture_output=True, text=True,
                          timeout=120, check=False)
    said = [line for line in proc.stderr.splitlines() if "pip cannot read its configuration" in line]
    assert len(said) == 1, proc.stderr
    assert str(conf) in said[0] and "line: 1" in said[0] and "s3cret" not in proc.stderr
    assert proc.returncode == 2 and "no wheels on" in proc.stderr  # the run itself goes on to its own answer
