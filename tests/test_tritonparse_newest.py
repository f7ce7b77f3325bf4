"""tritonparse 0.7 (2026-11) captures constexpr and tuple launch arguments and splits autotune
sessions by key: traces of that form still make oracles. No 0.7 trace is published, so the real
0.6 traces of the same programs (the shared H100 matmul, tests/data/gpu_traces' tuple kernel) are
rewritten into the shapes 0.7 adds (traces.arg_records says which are read): constexprs wrapped
as `{"type": "constexpr", ...}` or marked, a tuple's element records under `items`, launches
named by the parse step as an autotune session's `benchmark`/`winner` per key."""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from gpu_traces import gpu_traces  # noqa: F401 - the fixture (the tests' argument redefines it)
from oracle_support import needs_torch_triton, scenario
from tritonbisect.oracles.compile.folder import generate_compile_oracle
from tritonbisect.oracles.runtime import generate_oracle
from tritonbisect.traces.arg_records import normalise_record
from tritonbisect.traces.reader import load_trace


def test_record_shapes() -> None:
    assert normalise_record({"type": "constexpr", "value": 64}) == {"type": "int", "value": 64}
    assert normalise_record({"type": "constexpr", "value": {"type": "bool", "value": True}}) == {"type": "bool",
                                                                                                 "value": True}
    assert normalise_record({"type": "constexpr", "value": "triton.language.core.dtype('fp16')"}) == {
        "type": "dtype", "repr": "triton.language.core.dtype('fp16')"}
    assert normalise_record({"type": "constexpr", "value": None}) == {"type": "NoneType"}
    assert normalise_record({"type": "int", "value": 8, "constexpr": True}) == {"type": "int", "value": 8}
    nested = normalise_record({"type": "tuple", "items": [1, {"type": "constexpr", "value": 2.5}, [3, None]]})
    assert nested["elements"] == [{"type": "int", "value": 1}, {"type": "float", "value": 2.5},
                                  {"type": "tuple", "repr": "(3, None)", "elements": [
                                      {"type": "int", "value": 3}, {"type": "NoneType"}]}]
    assert normalise_record({"type": "tuple", "repr": "(...)"}) == {"type": "tuple", "repr": "(...)"}  # 0.6


def _rewrite_matmul(src: Path, dest: Path) -> None:
    """The parsed 0.6 trace with 0.7's constexprs, and its autotune session split by key."""
    lines = []
    with gzip.open(src, "rt") as fh:
        for line in fh:
            record = json.loads(line)
            if record.get("event_type") == "launch":
                args = record["extracted_args"]
                args["BLOCK_M"] = {"type": "constexpr", "value": args["BLOCK_M"]["value"]}
                args["BLOCK_N"] = {"type": "constexpr", "value": {"type": "int", "value": args["BLOCK_N"]["value"]}}
                args["BLOCK_K"] = {**args["BLOCK_K"], "constexpr": True}
                record["autotune_session_id"] = "80a6cf51a931ef4e:(256, 320, 192)"
                record["autotune_key"] = "(256, 320, 192)"
            elif record.get("event_type") == "autotune_analysis":
                record["autotune_key"] = "(256, 320, 192)"
            lines.append(json.dumps(record))
    lines.append(json.dumps({"event_type": "autotune_session", "session_id": "80a6cf51a931ef4e:(256, 320, 192)"}))
    dest.mkdir(parents=True)
    with gzip.open(dest / src.name, "wt") as fh:
        fh.write("\n".join(lines) + "\n")


def test_an_autotuned_matmul_traced_the_07_way(tmp_path: Path) -> None:
    parsed = next((scenario("matmul") / "parsed").glob("*_mapped.ndjson.gz"))
    _rewrite_matmul(parsed, tmp_path / "trace")
    tr = load_trace(tmp_path / "trace")
    launches = tr.launches_of("matmul_kernel")
    assert sum(la.autotune_benchmark for la in launches) == len(launches) - 1  # the parse step's names
    default = tr.select_launch("matmul_kernel")
    assert not default.autotune_benchmark
    assert {k: default.args[k] for k in ("BLOCK_M", "BLOCK_N", "BLOCK_K")} == {
        "BLOCK_M": {"type": "int", "value": 64}, "BLOCK_N": {"type": "int", "value": 64},
        "BLOCK_K": {"type": "int", "value": 32}}
    assert tr.skipped["autotune_session"] == 1  # an event type 0.7 may add: skipped and counted
    oracle = generate_oracle(tr, "matmul_kernel", tmp_path / "rt")
    assert oracle.context["kernel"]["pinned_config"]["BLOCK_K"] == 32
    compiled = generate_compile_oracle(tr, "matmul_kernel", tmp_path / "co")
    params = {p["name"]: p for p in compiled.context["job"]["what"]["params"]}
    assert params["BLOCK_N"] == {"name": "BLOCK_N", "kind": "constexpr", "value": 64}


def _tuple_trace(root: Path, dest: Path) -> None:
    """tritonparse's trace of the tuple kernel, its tuple's elements recorded as 0.7 does (the
    records of the same launch in tritonbisect's trace of the same run, without blobs)."""
    def launches(folder: Path) -> list[dict]:
        path = next(folder.glob("*.ndjson"))
        return [json.loads(line) for line in path.read_text().splitlines() if '"launch"' in line]

    ours = next(r for r in launches(root / "tritonbisect" / "trace") if r["name"] == "tuple_axpy")
    elements = [{k: v for k, v in e.items() if k != "blob_path"} for e in ours["extracted_args"]["ptrs"]["elements"]]
    src = next((root / "tritonparse" / "trace").glob("*.ndjson"))
    out = []
    for line in src.read_text().splitlines():
        record = json.loads(line)
        if record.get("event_type") == "launch" and record.get("name") == "tuple_axpy":
            ptrs = record["extracted_args"]["ptrs"]
            record["extracted_args"]["ptrs"] = {"type": "tuple", "repr": ptrs["repr"], "items": elements}
        out.append(json.dumps(record))
    dest.mkdir(parents=True)
    (dest / src.name).write_text("\n".join(out) + "\n")


@needs_torch_triton
def test_a_tuple_argument_traced_the_07_way_makes_a_runtime_oracle(gpu_traces: Path, tmp_path: Path) -> None:  # noqa: F811
    root = gpu_traces / "tma_descriptors"
    with pytest.raises(Exception, match="repr"):  # 0.6 recorded the tuple as its repr: refused
        generate_oracle(load_trace(root / "tritonparse" / "trace"), "tuple_axpy", tmp_path / "old")
    _tuple_trace(root, tmp_path / "trace")
    oracle = generate_oracle(load_trace(tmp_path / "trace"), "tuple_axpy", tmp_path / "new")
    names = [a["name"] for a in oracle.context["args"]]
    assert {"ptrs[0]", "ptrs[1]", "ptrs[2]"} <= set(names)  # the tuple rebuilt from its elements
    env = {**{k: v for k, v in os.environ.items() if k != "TRITONBISECT_RESULT"}, "TRITON_INTERPRET": "1"}
    golden = tmp_path / "golden.pt"
    for args in (("--record-golden", str(golden)), ("--golden", str(golden))):
        proc = subprocess.run([sys.executable, str(oracle.script), *args], capture_output=True, text=True, env=env,
                              timeout=600)
        assert proc.returncode == 0, proc.stdout + proc.stderr
