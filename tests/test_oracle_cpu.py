"""The generated oracles, run for real on the CPU under TRITON_INTERPRET=1.

On every shared trace: `tritonbisect repro` (the CLI) writes the oracle; it records a golden,
then passes against it 20 times in a row (in one process, `--repeat 20`) and once more with
every input vector; each planted bug is detected as a mismatch or a compile/runtime error.
The scripts run as real subprocesses; the traces are worked on in parallel to keep time down.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from oracle_support import cli, needs_torch_triton, needs_traces, scenarios
from tritonbisect.oracles.selfcheck import (
    DETECTED,
    Job,
    interpreter_env,
    run_batch,
    run_one,
    self_check,
)
from tritonbisect.traces.reader import load_trace

pytestmark = [needs_traces, needs_torch_triton]

# The launch each scenario reproduces: the default (first non-benchmark) one, except where a
# test of --launch-id / --line is wanted (vadd's launch 1 is on views with storage_offset=3).
SELECT = {"vadd_zstd": ["--launch-id", "1"], "softmax_gzip": ["--line", "2"]}

# Planted bugs that cannot change these launches' results: every mask of the matmul launch is
# all-true (M=256, N=320, K=192 are multiples of the 64/64/32 blocks), so `<` -> `<=` and a
# dropped `other=` are equivalent mutants there. They must then pass (no false alarm either).
EQUIVALENT = {("matmul", "mask_grow"), ("matmul", "drop_other")}

NAMES = [p.name for p in scenarios()]


@pytest.fixture(scope="module")
def checks(tmp_path_factory):
    root = tmp_path_factory.mktemp("oracles")
    env = interpreter_env()

    def work(path: Path):
        kernel = load_trace(path / "logs").kernels()[0]
        out = root / path.name
        proc = cli("repro", str(path), "--kernel", kernel, "--out", str(out), *SELECT.get(path.name, []))
        assert proc.returncode == 0, proc.stderr
        return path.name, (kernel, proc.stdout, self_check(out, kernel, repeat=20, vectors="recorded", env=env))

    workers = max(2, min(4, os.cpu_count() or 2))
    with ThreadPoolExecutor(max_workers=workers) as pool:
        return dict(pool.map(work, scenarios()))


@pytest.mark.parametrize("name", NAMES)
def test_golden_then_twenty_passes(checks, name: str) -> None:
    kernel, stdout, check = checks[name]
    assert f"kernel {kernel}" in stdout
    assert check.record.status == "pass", check.record.reason
    assert check.record.rc == 0
    assert check.reruns is not None and check.reruns.status == "pass", check.reruns.reason
    assert "in 20 run(s)" in check.reruns.reason
    assert check.full is not None and check.full.status == "pass", check.full.reason
    assert check.full.data["vectors"] == ["recorded", "fresh"]
    assert check.full.data["device"] == "cpu (TRITON_INTERPRET=1)"
    tensors = [a for a in check.full.data["arguments"] if not a["name"].startswith("#")]
    assert tensors and all(a["mismatches"] == 0 for a in tensors)


@pytest.mark.parametrize("name", NAMES)
def test_planted_bugs_are_detected(checks, name: str) -> None:
    _, _, check = checks[name]
    applicable = {m: r for m, r in check.mutations.items() if r is not None}
    assert len(applicable) >= 3, check.mutations
    for mutation, result in applicable.items():
        if (name, mutation) in EQUIVALENT:
            assert result.status == "pass", (mutation, result.reason)
            continue
        assert result.status in DETECTED, (mutation, result.status, result.reason)
        expected_rc = {"mismatch": 1, "compile_error": 3, "runtime_error": 4}.get(result.status)
        if expected_rc is not None:
            assert result.rc == expected_rc
        if result.status == "mismatch":
            bad = [a for a in result.data["arguments"] if a["status"] == "mismatch"]
            assert bad and (bad[0]["first_mismatch_index"] is not None)


def test_result_json_goes_to_the_env_path_too(checks, tmp_path: Path) -> None:
    _, _, check = checks["vadd"]
    oracle = Path(check.record.data["recorded"]).parent
    target = tmp_path / "env_result.json"
    env = dict(interpreter_env(), TRITONBISECT_RESULT=str(target))
    proc = subprocess.run([sys.executable, str(oracle / "repro.py"), "--vectors", "recorded"], env=env,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    data = json.loads(target.read_text())
    assert data["status"] == "pass" and data["reference"].endswith("golden.pt")
    assert {a["name"] for a in data["arguments"]} >= {"x_ptr", "y_ptr", "out_ptr"}


def test_exit_codes_compile_error_timeout_and_broken_env(checks, tmp_path: Path) -> None:
    _, _, check = checks["vadd"]
    oracle = Path(check.record.data["recorded"]).parent
    script = (oracle / "repro.py").read_text()
    env = interpreter_env()

    broken = oracle / "repro_undefined.py"
    broken.write_text(script.replace("    x = tl.load(x_ptr + offs, mask=mask)", "    x = tl.not_a_function(x_ptr)"))
    syntax = oracle / "repro_syntax.py"
    syntax.write_text(script.replace("    mask = offs < n_elements", "    mask = offs < < n_elements"))
    results = run_batch([Job("undefined", broken, ["--vectors", "recorded"], tmp_path / "undefined.json"),
                         Job("syntax", syntax, [], tmp_path / "syntax.json")], env=env)
    for result in results.values():
        assert (result.status, result.rc) == ("compile_error", 3), result.reason
    assert "not_a_function" in results["undefined"].reason
    assert "SyntaxError" in results["syntax"].reason

    hang = oracle / "repro_hang.py"
    hang.write_text(script.replace("    pid = tl.program_id(axis=0)", "    pid = tl.program_id(axis=0)\n    while True:\n        pass"))
    result = run_one(Job("hang", hang, ["--timeout", "4", "--vectors", "recorded"], tmp_path / "hang.json"), env=env)
    assert (result.status, result.rc) == ("timeout", 124), result.reason

    fake = tmp_path / "fake_torch" / "torch"
    fake.mkdir(parents=True)
    (fake / "__init__.py").write_text("raise ImportError('libtorch_cuda.so: cannot open shared object file')\n")
    env_broken = dict(env, PYTHONPATH=str(fake.parent))
    result = run_one(Job("env", oracle / "repro.py", [], tmp_path / "env.json"), env=env_broken)
    assert (result.status, result.rc) == ("env_unusable", 125), result.reason
    assert "libtorch_cuda" in result.reason


def test_missing_golden_is_a_usage_error(checks, tmp_path: Path) -> None:
    _, _, check = checks["transpose"]
    oracle = Path(check.record.data["recorded"]).parent
    result = run_one(Job("nogolden", oracle / "repro.py", ["--golden", str(tmp_path / "none.pt")],
                         tmp_path / "r.json"), env=interpreter_env())
    assert (result.status, result.rc) == ("usage_error", 2)
    assert "--record-golden" in result.reason


PROGRAM = '''
import torch, triton
import triton.language as tl

@triton.jit
def _scale(x, s):
    return x * s

@triton.heuristics({"BLOCK": lambda args: 128})
@triton.jit
def axpy_kernel(x_ptr, y_ptr, out_ptr, n, alpha, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    y = tl.load(y_ptr + offs, mask=mask, other=0.0)
    tl.store(out_ptr + offs, _scale(x, alpha) + y, mask=mask)

torch.manual_seed(0)
n = 1000
buf = torch.randn(2 * n + 7)
x, y = buf[3 : 3 + n], buf[n + 5 : 2 * n + 5]   # two views of one storage
out = torch.empty(n)
axpy_kernel[lambda m: (triton.cdiv(n, m["BLOCK"]),)](x, y, out, n, 0.5)
assert torch.allclose(out, 0.5 * x + y)
print("program done")
'''


def test_trace_command_under_the_interpreter(tmp_path: Path) -> None:
    """Triton's interpreter calls no launch hook: the tracer wraps its GridExecutor instead.
    The oracle then compares against the outputs the traced program itself produced."""
    (tmp_path / "prog.py").write_text(PROGRAM)
    other = tmp_path / "other_site"
    other.mkdir()
    marker = tmp_path / "chained"
    (other / "sitecustomize.py").write_text(f"open({str(marker)!r}, 'w').write('yes')\n")
    env = dict(interpreter_env(), PYTHONPATH=str(other))
    proc = cli("trace", "--out", str(tmp_path / "t"), "--", sys.executable, str(tmp_path / "prog.py"), env=env,
               timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "program done" in proc.stdout
    assert "1 compilations, 1 launches (1 with outputs after the launch) of axpy_kernel" in proc.stdout
    assert marker.read_text() == "yes"  # the program's own sitecustomize still ran

    proc = cli("repro", str(tmp_path / "t"), "--out", str(tmp_path / "o"))
    assert proc.returncode == 0, proc.stderr
    assert "share memory: rebuilt aliased" in proc.stdout
    ctx = json.loads((tmp_path / "o" / "context.json").read_text())
    assert ctx["kernel"]["dropped_decorators"] == ["triton.heuristics"] and ctx["kernel"]["helpers"] == ["_scale"]
    assert all(a.get("after") for a in ctx["args"] if a["kind"] == "tensor")

    good = run_one(Job("good", tmp_path / "o" / "repro.py", [], tmp_path / "good.json"), env=interpreter_env())
    assert good.status == "pass", good.reason
    assert good.data["reference"] == "outputs recorded in the trace after the original launch"
    script = (tmp_path / "o" / "repro.py").read_text()
    (tmp_path / "o" / "bad.py").write_text(script.replace("_scale(x, alpha) + y", "_scale(x, alpha) - y"))
    bad = run_one(Job("bad", tmp_path / "o" / "bad.py", [], tmp_path / "bad.json"), env=interpreter_env())
    assert (bad.status, bad.rc) == ("mismatch", 1), bad.reason
