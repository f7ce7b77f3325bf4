"""The reducer's candidate makers on the oracles of the real H100 traces (softmax with a
helper, an autotuned matmul, a transposed input, vadd with views): every candidate parses,
is strictly smaller, and writes back as an oracle script that holds exactly its source."""

from __future__ import annotations

import ast

import pytest

from oracle_support import needs_traces, scenario
from tritonbisect.oracles.runtime import generate_oracle
from tritonbisect.reduce import inputs_pass, oracle_io, source_pass
from tritonbisect.reduce.driver import _constexprs, cost
from tritonbisect.reduce.inputs_pass import BlobPlan
from tritonbisect.traces.reader import load_trace

pytestmark = needs_traces


@pytest.mark.parametrize("name", ["vadd", "softmax", "matmul", "transpose"])
def test_candidates_of_real_trace_oracles(tmp_path, name: str) -> None:
    trace = load_trace(scenario(name) / "logs")
    kernel = trace.kernels()[0]
    generate_oracle(trace, kernel, tmp_path / "oracle")
    oracle = oracle_io.load(tmp_path / "oracle")
    original = oracle.original
    assert source_pass.kernel_lines(original.source) > 3
    here = cost(original)
    cands = list(source_pass.candidates(original, oracle.kernel))
    assert len(cands) > 10
    for cand in cands:
        ast.parse(cand.source)
    smaller = [c for c in cands if cost(c) < here]
    assert len(smaller) > len(cands) // 2
    # a candidate written back holds exactly its source
    script = oracle_io.write(oracle, smaller[0], tmp_path / "cand")
    ns: dict = {}
    tree = ast.parse(script.read_text())
    assign = next(n for n in tree.body if isinstance(n, ast.Assign) and getattr(n.targets[0], "id", "") == "KERNEL_SOURCE")
    exec(compile(ast.Module([assign], []), "s", "exec"), ns)
    assert ns["KERNEL_SOURCE"].lstrip("\n") == smaller[0].source
    plan = BlobPlan(tmp_path / "blobs")
    shrunk = list(inputs_pass.candidates(original, _constexprs(original, oracle.kernel), plan))
    assert shrunk and all(cost(c) < here for c in shrunk)


@pytest.mark.parametrize("name", ["vadd", "softmax", "matmul", "transpose"])
def test_ir_candidates_of_real_recorded_ir(name: str) -> None:
    """The TTIR and TTGIR the H100 traces recorded (Triton 3.6.0's printer: loops, dots,
    reductions, layouts): every operation read, every name defined, and the IR level's
    candidates keep them defined and are mostly smaller."""
    from tritonbisect.mlir.ops import read_ops
    from tritonbisect.reduce import ir_pass
    from tritonbisect.reduce.oracle_io import Candidate

    trace = load_trace(scenario(name) / "logs")
    irs = [(stage, comp.ir[stage]) for comp in trace.compilations.values() for stage in ("ttir", "ttgir")
           if comp.ir.get(stage)]
    assert irs
    for stage, text in irs:
        prog = read_ops(text)
        assert not prog.unresolved and len(prog.body_ops()) > 3, (stage, prog.unresolved[:3])
        assert all(op.end >= op.start for op in prog.walk())
    stage, text = irs[-1]
    original = Candidate(text, {"job": {"what": {"kind": "ir", "file": f"k.{stage}"}, "options": {}}})
    cands = [c for _, c in zip(range(60), ir_pass.candidates(original, stage), strict=False)]
    assert len(cands) > 10 and all(not read_ops(c.source).unresolved for c in cands)
    assert sum(cost(c) < cost(original) for c in cands) > len(cands) * 3 // 4


PARSE_ALL = """
import json, sys
from triton._C.libtriton import ir
from triton.backends.compiler import GPUTarget
from triton.backends.nvidia.compiler import CUDABackend

backend = CUDABackend(GPUTarget("cuda", 90, 32))
failed = {}
for path in json.load(open(sys.argv[1])):
    context = ir.context()
    ir.load_dialects(context)
    backend.load_dialects(context)
    try:
        ir.parse_mlir_module(path, context)
    except Exception as exc:
        failed[path] = str(exc)
print(json.dumps(failed))
"""


@pytest.mark.slow
def test_every_ir_candidate_of_recorded_ir_parses_with_the_triton_that_recorded_it(tmp_path) -> None:
    """Triton 3.6.0 recorded the traces' IR; its parser (and verifier) reads every IR-level
    candidate made of it: the edits keep names, types and regions as MLIR wants them."""
    import json
    import subprocess

    from real_triton import triton_release_python
    from tritonbisect.reduce import ir_pass
    from tritonbisect.reduce.oracle_io import Candidate

    paths = []
    for name in ("vadd", "softmax", "matmul", "transpose"):
        comp = next(iter(load_trace(scenario(name) / "logs").compilations.values()))
        for stage in ("ttir", "ttgir"):
            original = Candidate(comp.ir[stage], {"job": {"what": {"kind": "ir", "file": f"k.{stage}"}}})
            for i, cand in enumerate(ir_pass.candidates(original, stage)):
                path = tmp_path / f"{name}-{i}.{stage}"
                path.write_text(cand.source)
                paths.append(str(path))
    assert len(paths) > 500
    (tmp_path / "paths.json").write_text(json.dumps(paths))
    (tmp_path / "parse_all.py").write_text(PARSE_ALL)
    proc = subprocess.run([str(triton_release_python("3.6.0")), str(tmp_path / "parse_all.py"), str(tmp_path / "paths.json")],
                          capture_output=True, text=True, timeout=600)  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-2000:]
    failed = json.loads(proc.stdout.strip().splitlines()[-1])
    assert failed == {}, proc.stderr[-3000:]
