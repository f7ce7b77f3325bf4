"""Reading tritonparse traces and generating oracles: the tool side (no torch, no triton).

Runs on the real H100 traces in shared/traces (raw, parsed, gzip, zstd) and on damaged or
hand-built variants of them.
"""

from __future__ import annotations

import gzip
import json
import shutil
from pathlib import Path

import pytest

from oracle_support import cli, needs_traces, scenario, scenarios
from tritonbisect.core.errors import InputError
from tritonbisect.oracles.kernel_source import extract_kernel_source
from tritonbisect.oracles.mutations import MUTATIONS, kernel_source_of_script, mutate
from tritonbisect.oracles.repro_spec import repro_test_spec
from tritonbisect.oracles.runtime import generate_oracle
from tritonbisect.traces.info import render_info
from tritonbisect.traces.reader import (
    load_trace,
    parse_file_name,
    resolve_blob,
)

pytestmark = needs_traces


def _raw_file(name: str) -> Path:
    return next((scenario(name) / "logs").glob("*.ndjson"))


def _lines(path: Path) -> list[str]:
    return path.read_text(encoding="utf-8").splitlines(keepends=True)


# --- reading ----------------------------------------------------------------------------


@pytest.mark.parametrize("name", [p.name for p in scenarios()])
def test_raw_and_parsed_agree(name: str) -> None:
    raw = load_trace(scenario(name) / "logs")
    parsed = load_trace(scenario(name) / "parsed")
    assert raw.kernels() == parsed.kernels()
    assert len(raw.launches) == len(parsed.launches) > 0
    assert set(raw.compilations) == set(parsed.compilations)
    for a, b in zip(raw.launches, parsed.launches, strict=True):
        assert (a.name, a.hash, a.grid) == (b.name, b.hash, b.grid)
        assert {k: v.get("blob_path") for k, v in a.args.items()} == {k: v.get("blob_path") for k, v in b.args.items()}
    # the scenario folder holds both: the raw file wins, launches are not doubled
    both = load_trace(scenario(name))
    assert len(both.launches) == len(raw.launches)
    assert [f.parsed for f in both.files] == [False]


def test_compression_is_told_by_magic_bytes(tmp_path: Path) -> None:
    assert [f.compression for f in load_trace(scenario("vadd_zstd") / "logs").files] == ["zstd"]
    assert [f.compression for f in load_trace(scenario("softmax_gzip") / "logs").files] == ["gzip"]
    assert [f.compression for f in load_trace(scenario("vadd") / "parsed").files] == ["gzip"]
    # a gzip trace named like a plain one is still read as gzip
    odd = tmp_path / "trace.ndjson"
    odd.write_bytes(gzip.compress(_raw_file("vadd").read_bytes()))
    trace = load_trace(odd)
    assert trace.files[0].compression == "gzip" and len(trace.launches) == 2


def test_file_names_rank_pid_host_and_legacy_forms() -> None:
    tf = parse_file_name(Path("dedicated_log_triton_trace_alice_rank_3_pid_123_host_node-7_.ndjson"))
    assert (tf.rank, tf.pid, tf.host, tf.parsed) == ("3", 123, "node-7", False)
    tf = parse_file_name(Path("dedicated_log_triton_trace_unknown_rank_none_pid_433_host_vm__mapped.ndjson.gz"))
    assert (tf.rank, tf.pid, tf.host, tf.parsed) == ("none", 433, "vm", True)
    assert tf.identity == "dedicated_log_triton_trace_unknown_rank_none_pid_433_host_vm_"
    legacy = parse_file_name(Path("dedicated_log_triton_trace_bob_.ndjson"))
    assert (legacy.rank, legacy.pid, legacy.host) == (None, None, None)
    legacy_rank = parse_file_name(Path("dedicated_log_triton_trace_bob_rank_0_.bin.ndjson"))
    assert (legacy_rank.rank, legacy_rank.pid) == ("0", None)


def test_folder_of_files_merges_launches_with_compilations_by_hash(tmp_path: Path) -> None:
    """Compilations in one process's file, launches in another's: joined by hash."""
    lines = _lines(_raw_file("vadd"))
    comps = [line for line in lines if '"event_type":"compilation"' in line.replace(" ", "")]
    launches = [line for line in lines if '"event_type":"launch"' in line.replace(" ", "")]
    assert len(comps) == 2 and len(launches) == 2
    (tmp_path / "dedicated_log_triton_trace_u_rank_0_pid_11_host_a_.ndjson").write_text("".join(comps))
    (tmp_path / "dedicated_log_triton_trace_u_rank_1_pid_22_host_a_.ndjson").write_text("".join(launches))
    shutil.copytree(scenario("vadd") / "logs" / "saved_tensors", tmp_path / "saved_tensors")
    trace = load_trace(tmp_path)
    assert [f.rank for f in trace.files] == ["0", "1"]
    assert len(trace.launches) == 2
    assert all(trace.compilation_of(launch) is not None for launch in trace.launches)
    generate_oracle(tmp_path, "add_kernel", tmp_path / "oracle")
    assert (tmp_path / "oracle" / "repro.py").is_file()


def test_blobs_are_relocated_to_the_traces_own_folder() -> None:
    for sub in ("logs", "parsed"):
        trace = load_trace(scenario("vadd") / sub)
        launch = trace.launches[0]
        recorded = launch.args["x_ptr"]["blob_path"]
        assert recorded.startswith("/tmp/tb_traces/")  # the capture machine's path
        found = resolve_blob(recorded, launch.file, trace.root)
        assert found is not None and found.is_file()
        assert found.is_relative_to(scenario("vadd") / "logs" / "saved_tensors")


def test_unknown_events_are_skipped_and_counted(tmp_path: Path) -> None:
    path = tmp_path / "t.ndjson"
    path.write_text('{"event_type": "from_the_future", "x": 1}\n' + "".join(_lines(_raw_file("vadd"))) + '{"no": "type"}\n\n')
    trace = load_trace(path)
    assert dict(trace.skipped) == {"from_the_future": 1, "(no event_type)": 1}
    assert len(trace.launches) == 2
    assert "skipped unknown event lines" in render_info(trace)


# --- refusals: one clear line, exit 2 ---------------------------------------------------


def _one_error_line(proc) -> str:
    assert proc.returncode == 2, proc.stdout + proc.stderr
    err = [line for line in proc.stderr.splitlines() if line.strip()]
    assert len(err) == 1, proc.stderr
    assert err[0].startswith("tritonbisect: error: ")
    return err[0]


def test_corrupt_and_truncated_traces_say_where(tmp_path: Path) -> None:
    lines = _lines(_raw_file("vadd"))
    corrupt = tmp_path / "corrupt.ndjson"
    corrupt.write_text(lines[0] + '{"event_type": "launch", oops\n' + lines[2])
    line = _one_error_line(cli("info", str(corrupt)))
    assert f"{corrupt}:2: corrupt trace record" in line

    cut = tmp_path / "cut.ndjson"
    cut.write_text("".join(lines)[:-500])
    line = _one_error_line(cli("repro", str(cut), "--kernel", "add_kernel", "--out", str(tmp_path / "o")))
    assert f"{cut}:4:" in line and "truncated" in line

    gz = tmp_path / "cut.bin.ndjson"
    gz.write_bytes(_raw_file("softmax_gzip").read_bytes()[:-300])
    with pytest.raises(InputError, match=r"truncated gzip data.*byte \d+"):
        load_trace(gz)

    zst = tmp_path / "cut_zstd.bin.ndjson"
    data = next((scenario("vadd_zstd") / "logs").glob("*.ndjson")).read_bytes()
    zst.write_bytes(data[:-100])
    line = _one_error_line(cli("info", str(zst)))
    assert "truncated zstd data" in line and "byte" in line

    garbage = tmp_path / "garbage.bin.ndjson"
    garbage.write_bytes(b"\x28\xb5\x2f\xfd" + b"\x00garbage" * 10)
    with pytest.raises(InputError, match="zstd"):
        load_trace(garbage)


def test_missing_kernel_lists_the_available_ones(tmp_path: Path) -> None:
    line = _one_error_line(cli("repro", str(scenario("softmax")), "--kernel", "add_kernel", "--out", str(tmp_path)))
    assert "kernel 'add_kernel' is not in trace" in line and "available kernels: softmax_kernel" in line
    line = _one_error_line(cli("info", str(scenario("vadd")), "--kernel", "nope"))
    assert "available kernels: add_kernel" in line


def test_launch_id_out_of_range(tmp_path: Path) -> None:
    line = _one_error_line(cli("repro", str(scenario("vadd")), "--kernel", "add_kernel", "--launch-id", "2",
                               "--out", str(tmp_path)))
    assert "launch id 2 is out of range" in line and "2 launches (ids 0-1)" in line
    with pytest.raises(InputError, match="no launch of kernel 'add_kernel' on line 3"):
        load_trace(scenario("vadd")).select_launch("add_kernel", line=3)


def test_missing_trace_is_one_line(tmp_path: Path) -> None:
    line = _one_error_line(cli("info", str(tmp_path / "nope.ndjson")))
    assert "does not exist" in line


def _variant(tmp_path: Path, edit) -> Path:
    lines = [json.loads(line) for line in _lines(_raw_file("vadd"))]
    lines = edit(lines)
    path = tmp_path / "variant.ndjson"
    path.write_text("".join(json.dumps(r) + "\n" for r in lines))
    return path


def test_cuda_graph_capture_launch_is_refused(tmp_path: Path) -> None:
    def capture(records):
        records[1]["extracted_args"] = {"_note": "argument extraction skipped during CUDA graph capture"}
        return records

    path = _variant(tmp_path, capture)
    trace = load_trace(path)
    assert trace.launches[0].graph_capture
    assert "CUDA-graph capture: cannot reproduce" in render_info(trace, "add_kernel")
    line = _one_error_line(cli("repro", str(path), "--kernel", "add_kernel", "--launch-id", "0", "--out", str(tmp_path / "o")))
    assert "CUDA-graph capture" in line
    # by default the first launch that can be reproduced is taken
    assert generate_oracle(trace, "add_kernel", tmp_path / "o1").launch.index == 1


def test_launch_without_compilation_is_refused(tmp_path: Path) -> None:
    path = _variant(tmp_path, lambda records: [r for r in records if r["event_type"] != "compilation"])
    line = _one_error_line(cli("repro", str(path), "--kernel", "add_kernel", "--out", str(tmp_path / "o")))
    assert "no compilation event" in line


# --- kernel source ----------------------------------------------------------------------


def test_helpers_are_embedded_and_autotune_is_pinned(tmp_path: Path) -> None:
    trace = load_trace(scenario("softmax"))
    src = extract_kernel_source(trace.compilation_of(trace.launches[0]).python_source, "softmax_kernel")
    assert src.helpers == ["_row_max"] and "def _row_max" in src.text
    assert "layernorm" not in src.text and "import torch" not in src.text  # only what it needs

    oracle = generate_oracle(scenario("matmul"), "matmul_kernel", tmp_path / "mm")
    assert oracle.kernel.autotuned and oracle.kernel.dropped_decorators == ["triton.autotune"]
    assert "autotune" not in oracle.kernel.text
    assert oracle.launch.index == 144 and not oracle.launch.autotune_benchmark  # the real call, with blobs
    ctx = oracle.context
    assert ctx["kernel"]["pinned_config"] == {"BLOCK_M": 64, "BLOCK_N": 64, "BLOCK_K": 32, "num_warps": 4, "num_stages": 3}
    assert ctx["launch"]["grid"] == [4, 5]
    assert all(a["init"]["source"] == "blob" for a in ctx["args"] if a["kind"] == "tensor")
    assert sorted(p.name for p in (tmp_path / "mm" / "blobs").iterdir()) == sorted(
        Path(a["init"]["file"]).name for a in ctx["args"] if a["kind"] == "tensor"
    )


def test_function_only_source_with_helpers_is_refused() -> None:
    full = load_trace(scenario("softmax")).compilations
    comp = next(iter(full.values()))
    lines = comp.python_source["code"].splitlines(keepends=True)
    start, end = comp.python_source["function_start_line"], comp.python_source["function_end_line"]
    only = {"file_path": "k.py", "start_line": start, "end_line": end, "code": "".join(lines[start - 1 : end])}
    with pytest.raises(InputError, match="_row_max.*TRITON_FULL_PYTHON_SOURCE=1"):
        extract_kernel_source(only, "softmax_kernel")
    vadd = next(iter(load_trace(scenario("vadd")).compilations.values())).python_source
    lines = vadd["code"].splitlines(keepends=True)
    only = {"file_path": "k.py", "start_line": 6, "end_line": 13, "code": "".join(lines[5:13])}
    assert "def add_kernel" in extract_kernel_source(only, "add_kernel").text


def test_foreign_imports_are_refused() -> None:
    code = (
        "import triton\nimport triton.language as tl\nimport numpy as np\nfrom mylib import helper\n"
        "SCALE: tl.constexpr = 2\n\n@triton.jit\ndef k(x_ptr, N: tl.constexpr):\n"
        "    tl.store(x_ptr + tl.arange(0, N), helper(tl.load(x_ptr + tl.arange(0, N))) * SCALE)\n"
    )
    source = {"file_path": "k.py", "start_line": 1, "end_line": 9, "code": code, "function_start_line": 7,
              "function_end_line": 9}
    with pytest.raises(InputError, match="'helper' from module 'mylib'"):
        extract_kernel_source(source, "k")
    ok = extract_kernel_source(dict(source, code=code.replace("from mylib import helper\n", "").replace("helper(", "(")), "k")
    assert "SCALE: tl.constexpr = 2" in ok.text and "numpy" not in ok.text


def test_mutations_change_the_kernel() -> None:
    trace = load_trace(scenario("softmax"))
    src = extract_kernel_source(trace.compilation_of(trace.launches[0]).python_source, "softmax_kernel").text
    dtypes = {"out_ptr": "float16", "in_ptr": "float16"}
    out = {m: mutate(src, "softmax_kernel", m, dtypes) for m in MUTATIONS}
    assert "(num * den)" in out["op_swap"]
    assert "cols <= n_cols" in out["mask_grow"]
    assert "cols < (n_cols - 1)" in out["mask_shrink"]
    assert ".to(tl.bfloat16), mask=mask)" in out["store_dtype"]
    assert "other=" not in out["drop_other"]
    assert "def _row_max" in out["op_swap"]  # helpers untouched


# --- generation and the bisect test spec ------------------------------------------------


def test_oracle_folder_is_self_contained(tmp_path: Path) -> None:
    trace_copy = tmp_path / "trace"
    shutil.copytree(scenario("vadd"), trace_copy)  # a copy: blob paths point elsewhere
    oracle = generate_oracle(trace_copy / "logs", "add_kernel", tmp_path / "o", launch_id=1)
    script = (tmp_path / "o" / "repro.py").read_text()
    # repro.py and the helpers copied beside it import the standard library, torch, triton and
    # each other: nothing of tritonbisect or tritonparse
    helpers = {p.stem for p in (tmp_path / "o").glob("*.py")} - {"repro"}
    assert helpers >= {"oracle_core", "oracle_args", "oracle_compare", "oracle_launch"}
    allowed = {"argparse", "faulthandler", "gzip", "io", "json", "linecache", "os", "sys", "threading",
               "time", "traceback", "types", "typing", "torch", "triton"} | helpers
    for path in (tmp_path / "o").glob("*.py"):
        text = path.read_text()
        imports = {line.split()[1].split(".")[0] for line in text.splitlines() if line.startswith(("import ", "from "))}
        assert imports <= allowed, path.name
        assert "tritonparse" not in text and "tritonbisect." not in text, path.name
    source, _ = kernel_source_of_script(script)
    assert "def add_kernel" in source
    x = next(a for a in oracle.context["args"] if a["name"] == "x_ptr")
    assert x["storage_offset"] == 3 and x["byte_offset"] % 256 == 12  # pointer alignment kept
    assert (tmp_path / "o" / x["init"]["file"]).is_file()
    shutil.rmtree(trace_copy)  # the folder no longer needs the trace
    assert all((tmp_path / "o" / a["init"]["file"]).is_file() for a in oracle.context["args"] if a["kind"] == "tensor")


def test_noblob_trace_rebuilds_from_statistics(tmp_path: Path) -> None:
    oracle = generate_oracle(scenario("vadd_noblob"), "add_kernel", tmp_path / "o", launch_id=0)
    x = next(a for a in oracle.context["args"] if a["name"] == "x_ptr")
    assert x["init"] == {"source": "stats"} and x["stats"]["max"] <= 1.0
    assert not (tmp_path / "o" / "blobs").exists()


def test_repro_test_spec_records_then_compares(tmp_path: Path) -> None:
    spec = repro_test_spec(scenario("vadd"), "add_kernel", 0, tmp_path / "oracle", timeout=100)
    assert spec.record_command is not None
    assert spec.record_command.startswith("python ") and "--record-golden" in spec.record_command
    assert spec.command.startswith("python ") and "--golden" in spec.command
    assert str(tmp_path / "oracle" / "repro.py") in spec.command
    assert "--timeout 95" in spec.command
    assert (tmp_path / "oracle" / "context.json").is_file()
    with pytest.raises(InputError, match="out of range"):
        repro_test_spec(scenario("vadd"), "add_kernel", 7, tmp_path / "o2")


def test_info_lists_kernels_launches_and_compile_params() -> None:
    proc = cli("info", str(scenario("matmul")), "--kernel", "matmul_kernel")
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert "kernel matmul_kernel: 145 launches, 2 compilations" in out
    assert "num_warps=4 num_stages=3" in out and "num_warps=4 num_stages=4" in out
    assert "triton 3.6.0, target cuda 90" in out
    assert "[autotune benchmark]" in out and "default launch for repro: 144" in out
    proc = cli("info", str(scenario("transpose")), "--json")
    data = json.loads(proc.stdout)
    launch = data["kernels"][0]["launches"][0]
    assert launch["grid"] == [7, 10] and launch["reproducible"]
    assert launch["args"]["scale"] == "scale=0.5" and "stride (1, 200)" in launch["args"]["src_ptr"]
