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
