"""The reducer's parts on their own: source and input candidates, context edits, verdicts,
the oracle folder's read and write, and the fork servers (real subprocesses)."""

from __future__ import annotations

import copy
import json
import signal
import sys
from pathlib import Path

import pytest

from tritonbisect.core.errors import InputError
from tritonbisect.reduce import context_edit, inputs_pass, oracle_io, source_pass
from tritonbisect.reduce.driver import cost
from tritonbisect.reduce.inputs_pass import BlobPlan
from tritonbisect.reduce.oracle_io import Candidate
from tritonbisect.reduce.pool import Pool
from tritonbisect.reduce.verdict import PASSES, bad_signature, normalise_error

SOURCE = '''import triton
import triton.language as tl

@triton.jit
def _twice(v):
    return v * 2.0

@triton.jit
def k(x_ptr, unused_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n, other=0.0)
    y = _twice(x) + 1.0
    tl.store(out_ptr + offs, y)
'''


def _tensor(name: str, storage: int, n: int) -> dict:
    return {"name": name, "kind": "tensor", "dtype": "float32", "shape": [n], "stride": [1], "storage": storage,
            "byte_offset": 0, "init": {"source": "blob", "file": f"/blobs/{name}.bin"}}


CONTEXT = {
    "kernel": {"name": "k", "pinned_config": {"BLOCK": 64, "num_warps": 4}},
    "launch": {"grid": [4, 2]},
    "compile": {"num_warps": 4, "num_stages": 3},
    "args": [_tensor("x_ptr", 0, 256), _tensor("unused_ptr", 1, 256), _tensor("out_ptr", 2, 512),
             {"name": "n", "kind": "scalar", "type": "int", "value": 256},
             {"name": "BLOCK", "kind": "scalar", "type": "int", "value": 64}],
    "storages": [{"nbytes": 1024, "lo": 0, "hi": 1024, "tensors": ["x_ptr"]},
                 {"nbytes": 1024, "lo": 0, "hi": 1024, "tensors": ["unused_ptr"]},
                 {"nbytes": 2048, "lo": 0, "hi": 2048, "tensors": ["out_ptr"]}],
}


def _all() -> list[Candidate]:
    return list(source_pass.candidates(Candidate(SOURCE, CONTEXT), "k"))


def test_source_candidates_cover_each_kind_of_step() -> None:
    cands = _all()
    sources = [c.source for c in cands]
    assert all(c.source != SOURCE or c.context != CONTEXT for c in cands)
    # a statement removed (the store, the last one)
    assert any("tl.store" not in s and "y = " in s for s in sources)
    # the helper inlined, and an expression replaced by an operand
    assert any("_twice(x)" not in s and "x * 2.0 + 1.0" in s for s in sources)
    assert any("y = _twice(x)\n" in s for s in sources)
    # a keyword argument dropped
    assert any("other=0.0" not in s and "mask=offs < n" in s for s in sources)
    # the unused parameter dropped, from the source and the context, storages renumbered
    dropped = [c for c in cands if "unused_ptr" not in c.source]
    assert len(dropped) == 1
    ctx = dropped[0].context
    assert [a["name"] for a in ctx["args"]] == ["x_ptr", "out_ptr", "n", "BLOCK"]
    assert len(ctx["storages"]) == 2 and ctx["args"][1]["storage"] == 1
    # constexpr lowered in the arguments and the pinned config; num_warps / num_stages lowered
    lowered = [c.context for c in cands if c.source == SOURCE and c.context["args"][-1]["value"] == 32]
    assert lowered and lowered[0]["kernel"]["pinned_config"]["BLOCK"] == 32
    assert any(c.context["compile"]["num_warps"] == 1 for c in cands)
    assert CONTEXT["args"][-1]["value"] == 64  # the input is not modified


def test_every_source_candidate_parses_and_costs_less_or_is_filtered() -> None:
    import ast

    for cand in _all():
        ast.parse(cand.source)
    assert sum(cost(c) < cost(Candidate(SOURCE, CONTEXT)) for c in _all()) > 10


TYPED = '''import triton
import triton.language as tl

@triton.jit
def k(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    total = tl.sum(tl.exp(x) * x - x / 3.0, axis=0)
    tl.store(out_ptr + offs, x * 2.0 + total)
'''


def test_an_expression_replaced_by_a_constant_of_its_type() -> None:
    """Floats by 0.0, integers by 0, a float tensor also by tl.zeros_like of a tensor it reads;
    never a pointer, a shape or a function."""
    import ast

    from tritonbisect.reduce.source_constants import FLOAT, INT, Kinds, param_kinds

    fn = next(n for n in ast.parse(TYPED).body if isinstance(n, ast.FunctionDef))
    kinds = Kinds(fn, param_kinds(CONTEXT))
    assert kinds.env["x_ptr"] == ("ptr:float", False) and kinds.env["n"] == (INT, False)
    assert (kinds.env["offs"], kinds.env["x"], kinds.env["total"]) == ((INT, True), (FLOAT, True), (FLOAT, False))
    original = Candidate(TYPED, CONTEXT)
    changed = {line.strip() for c in source_pass.candidates(original, "k") for line in c.source.splitlines()
               if line not in TYPED.splitlines() and cost(c) < cost(original)}
    for wanted in ("tl.store(out_ptr + offs, 0.0)", "total = 0.0", "total = tl.sum(tl.zeros_like(x), axis=0)",
                   "total = tl.sum(0.0 * x - x / 3.0, axis=0)", "offs = 0", "tl.store(out_ptr + 0, x * 2.0 + total)"):
        assert wanted in changed, wanted
    for never in ("tl.load(0)", "tl.store(0, x * 2.0 + total)", "offs = tl.arange(0, 0)", "x = tl.load(0 + offs)"):
        assert never not in changed, never


def test_kernel_lines_counts_the_jit_functions_only() -> None:
    assert source_pass.kernel_lines(SOURCE) == 3 + 6
    assert source_pass.kernel_lines("def f(:\n") == 0


def test_inputs_halve_the_grid_and_tensors_with_their_size_arguments(tmp_path: Path) -> None:
    plan = BlobPlan(tmp_path)
    cands = list(inputs_pass.candidates(Candidate(SOURCE, CONTEXT), {"BLOCK"}, plan))
    grids = [c.context["launch"]["grid"] for c in cands if c.context["args"] == CONTEXT["args"]]
    assert [1, 2] in grids and [2, 2] in grids and [4, 1] in grids
    everything = next(c.context for c in cands if c.context["launch"]["grid"] == [4, 2])
    shapes = {a["name"]: a.get("shape") for a in everything["args"]}
    assert shapes["x_ptr"] == [128] and shapes["out_ptr"] == [256]
    values = {a["name"]: a.get("value") for a in everything["args"]}
    assert values["n"] == 128 and values["BLOCK"] == 64  # a constexpr is the source level's
    assert everything["storages"][2]["nbytes"] == everything["storages"][2]["hi"] == 1024
    jobs = plan.pending()
    assert {(Path(j["src"]).name, j["rows"]) for j in jobs} >= {("x_ptr.bin", 128), ("out_ptr.bin", 256)}
    assert everything["args"][0]["init"]["file"] in {j["dst"] for j in jobs}


def test_a_shared_or_strided_storage_is_not_shrunk() -> None:
    ctx = copy.deepcopy(CONTEXT)
    ctx["args"][0]["stride"] = [2]
    ctx["storages"][1]["tensors"].append("other")
    assert [a["name"] for a in inputs_pass.shrinkable(ctx)] == ["out_ptr"]


def test_context_edits_and_elements() -> None:
    assert context_edit.elements(CONTEXT) == 1024
    assert context_edit.drop_arg(CONTEXT, "nope") is None
    assert context_edit.set_scalar(CONTEXT, "n", 3)["args"][3]["value"] == 3


def test_normalised_errors_ignore_what_reduction_changes() -> None:
    a = normalise_error("the kernel does not compile: CompilationError: at 12:8:\n    x = foo(y)\n        ^\nunsupported op")
    b = normalise_error("the kernel does not compile: CompilationError: at 3:4:\n    z = foo(q, 2)\n    ^\nunsupported op")
    assert a == b == "CompilationError: unsupported op"
    assert normalise_error("bad thing at 0x7fff1234 in /tmp/x/y.py line 42") == "bad thing at 0x? in <path> line N"


def test_bad_signature(tmp_path: Path) -> None:
    result = tmp_path / "bad.json"
    result.write_text(json.dumps({"status": "mismatch", "reason": "r", "arguments": [
        {"name": "out#fresh", "status": "mismatch"}, {"name": "x", "status": "pass"}]}))
    assert bad_signature(1, None, result, tmp_path / "log")[0] == "mismatch: out"
    result.write_text(json.dumps({"status": "pass", "reason": "ok"}))
    assert bad_signature(0, None, result, tmp_path / "log")[0] == PASSES
    (tmp_path / "log").write_text("x\npython3: foo.cpp:12: void f(): Assertion `a == b' failed.\n")
    assert bad_signature(-6, 6, result, tmp_path / "log")[0] == "crash: signal 6: python3: foo.cpp:N: void f(): Assertion `a == b' failed."
    result.write_text(json.dumps({"status": "compile_error", "reason": "the kernel does not compile: E at 1:2"}))
    assert bad_signature(3, None, result, tmp_path / "log")[0] == "compile_error: E at N:N"
    result.write_text(json.dumps({"status": "perf", "reason": "r", "differences": [
        {"metric": "ptx.sub", "old": 2, "new": 0, "over_threshold": True},
        {"metric": "regs", "old": 20, "new": 30, "over_threshold": True},
        {"metric": "ptx.total", "old": 41, "new": 39, "over_threshold": False}]}))
    assert bad_signature(1, None, result, tmp_path / "log")[0] == "codegen: ptx.sub down, regs up"


def test_oracle_folder_round_trip_and_refusals(tmp_path: Path) -> None:
    from tritonbisect.oracles.runtime import render_script

    root = tmp_path / "o"
    root.mkdir()
    (root / "repro.py").write_text(render_script("k", SOURCE, "# test"))
    (root / "blobs").mkdir()
    (root / "blobs" / "b.bin").write_bytes(b"data")
    ctx = {"kernel": {"name": "k"}, "args": [{"name": "x", "kind": "tensor", "init": {"source": "blob", "file": "blobs/b.bin"},
                                             "after": {"file": "blobs/b.bin"}}]}
    (root / "context.json").write_text(json.dumps(ctx))
    oracle = oracle_io.load(root)
    assert oracle.kernel == "k" and oracle.original.source == SOURCE
    assert "after" not in oracle.original.context["args"][0]
    assert Path(oracle.original.context["args"][0]["init"]["file"]).is_absolute()
    out = tmp_path / "out"
    script = oracle_io.write(oracle, Candidate("x = 1\n", oracle.original.context), out, copy_blobs=True)
    ns: dict = {}
    exec(compile(script.read_text().split("\nHERE = ")[0], "s", "exec"), ns)
    assert ns["KERNEL_SOURCE"] == "\nx = 1\n"
    assert json.loads((out / "context.json").read_text())["args"][0]["init"]["file"] == "blobs/b.bin"
    assert (out / "blobs" / "b.bin").read_bytes() == b"data"
    with pytest.raises(InputError, match="no repro.py"):
        oracle_io.load(tmp_path)
    replay = tmp_path / "r"
    replay.mkdir()
    (replay / "replay.py").write_text("")
    with pytest.raises(InputError, match="a replay oracle; reduce handles runtime"):
        oracle_io.load(replay)


def test_compile_oracle_folder(tmp_path: Path) -> None:
    root = tmp_path / "c"
    root.mkdir()
    (root / "compile_repro.py").write_text("# script\n")
    (root / "tb_child.py").write_text("# helper\n")
    with pytest.raises(InputError, match="cannot read the compile oracle"):
        oracle_io.load(root)
    job = {"what": {"kind": "python", "file": "kernel_source.py", "kernel": "k",
                    "params": [{"name": "x_ptr", "kind": "pointer", "type": "*fp32"},
                               {"name": "BLOCK", "kind": "constexpr", "value": 64}]},
           "target": {"backend": "cuda", "arch": 90, "warp_size": 32}, "options": {"num_warps": 4}}
    (root / "compile_context.json").write_text(json.dumps({"kernel": "k", "job": job}))
    (root / "kernel_source.py").write_text(SOURCE)
    oracle = oracle_io.load(root)
    assert (oracle.kind, oracle.kernel, oracle.script_name) == ("compile", "k", "compile_repro.py")
    cands = list(source_pass.candidates(oracle.original, "k"))
    lowered = [c for c in cands if c.context["job"]["what"]["params"][-1]["value"] == 32]
    assert lowered and any(c.context["job"]["options"]["num_warps"] == 1 for c in cands)
    assert context_edit.drop_arg(oracle.original.context, "x_ptr")["job"]["what"]["params"][0]["name"] == "BLOCK"
    script = oracle_io.write(oracle, Candidate("y = 2\n", oracle.original.context), tmp_path / "w")
    assert script.name == "compile_repro.py" and (tmp_path / "w" / "tb_child.py").is_file()
    assert (tmp_path / "w" / "kernel_source.py").read_text() == "y = 2\n"
    job["what"] = {"kind": "ir", "file": "k.ttgir"}
    (root / "compile_context.json").write_text(json.dumps({"kernel": "k", "job": job}))
    with pytest.raises(InputError, match="cannot read the IR oracle's k.ttgir"):
        oracle_io.load(root)
    (root / "k.ttgir").write_text("module {\n}\n")
    oracle = oracle_io.load(root)
    assert (oracle.kind, oracle.ir_file, oracle.stage, oracle.script_name) == ("ir", "k.ttgir", "ttgir", "compile_repro.py")
    oracle_io.write(oracle, Candidate("module {}\n", oracle.original.context), tmp_path / "i")
    assert (tmp_path / "i" / "k.ttgir").read_text() == "module {}\n" and not (tmp_path / "i" / "kernel_source.py").exists()
    job["what"] = {"kind": "ir", "file": "k.llir"}
    (root / "compile_context.json").write_text(json.dumps({"kernel": "k", "job": job}))
    with pytest.raises(InputError, match="an IR oracle of k.llir"):
        oracle_io.load(root)


def test_fork_server_reports_exit_codes_signals_and_timeouts(tmp_path: Path) -> None:
    script = tmp_path / "s.py"
    script.write_text("import os, sys, time\nmode = sys.argv[1]\n"
                      "if mode == 'segv': os.kill(os.getpid(), 11)\n"
                      "if mode == 'hang': time.sleep(60)\n"
                      "print('cwd', os.getcwd())\nsys.exit(int(mode))\n")
    pool = Pool()
    try:
        log = tmp_path / "log"
        assert pool.run(sys.executable, script, ["3"], timeout=30, log=log).rc == 3
        assert f"cwd {tmp_path}" in log.read_text()
        crash = pool.run(sys.executable, script, ["segv"], timeout=30, log=log)
        assert crash.signal == signal.SIGSEGV and crash.rc == -11
        assert pool.run(sys.executable, script, ["hang"], timeout=1, log=log).rc == 124
        assert pool.run(sys.executable, script, ["0"], timeout=30, log=log).rc == 0
        assert pool.started == 1  # one long-lived server did all four
    finally:
        pool.close()
    fresh = Pool(fresh=True)
    assert fresh.run(sys.executable, script, ["segv"], timeout=30, log=tmp_path / "log2").signal == signal.SIGSEGV
