"""Whole-program replay (`repro --launches`), run for real on the CPU under TRITON_INTERPRET=1.

A small program (tests/replay_programs/chain3.py: scale -> add -> row sum, a host write, scale
again) is traced with `tritonbisect trace`; the replay oracle passes against the outputs the
trace recorded and against a golden; a planted bug in one kernel is a mismatch of that kernel
only; a kernel whose source calls a function that aborts is a `crash` of that kernel while
the others still pass. Also: the real H100 traces' chains plan their buffers as recorded.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from gpu_traces import gpu_traces  # noqa: F401  (fixture)
from oracle_support import cli, needs_torch_triton
from tritonbisect.oracles.mutations import mutate
from tritonbisect.oracles.selfcheck import interpreter_env

pytestmark = needs_torch_triton

PROGRAM = Path(__file__).resolve().parent / "replay_programs" / "chain3.py"
REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def oracle(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("replay")
    env = dict(interpreter_env(), PYTHONPATH=str(REPO / "src"))
    proc = cli("trace", "--out", str(root / "trace"), "--", sys.executable, str(PROGRAM), str(root / "out.pt"),
               env=env, timeout=240)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    proc = cli("repro", str(root / "trace"), "--launches", "all", "--out", str(root / "oracle"))
    assert proc.returncode == 0, proc.stderr
    assert "4 launches of 3 kernels" in proc.stdout and "1 reloaded from their blobs" in proc.stdout
    return root / "oracle"


def run(folder: Path, *args: str) -> tuple[int, dict]:
    result = folder / f"result-{len(list(folder.glob('result-*')))}.json"
    proc = subprocess.run([sys.executable, str(folder / "replay.py"), "--result", str(result), *args],
                          env=interpreter_env(), capture_output=True, text=True, timeout=300)
    assert result.is_file(), proc.stdout + proc.stderr
    return proc.returncode, json.loads(result.read_text())


def variant(oracle: Path, tmp: Path, kernel: str, edit) -> Path:
    """A copy of the oracle with the embedded source of `kernel` edited."""
    folder = tmp / "variant"
    shutil.copytree(oracle, folder)
    path = folder / "replay_context.json"
    ctx = json.loads(path.read_text())
    ctx["kernels"][kernel]["source"] = edit(ctx["kernels"][kernel]["source"])
    path.write_text(json.dumps(ctx))
    return folder


def test_replay_passes_against_the_traced_outputs_with_data_flowing(oracle: Path) -> None:
    ctx = json.loads((oracle / "replay_context.json").read_text())
    modes = {(launch["order"], a["name"]): a["mode"] for launch in ctx["launches"] for a in launch["args"]
             if a["kind"] == "tensor"}
    assert modes[(1, "a_ptr")] == "flow"  # add reads what scale wrote
    assert modes[(2, "x_ptr")] == "flow"  # row sum reads what add wrote
    assert modes[(3, "x_ptr")] == "host_write"  # x.mul_(2) on the host in between
    rc, data = run(oracle)
    assert rc == 0 and data["status"] == "pass", data["reason"]
    assert [e["status"] for e in data["launches"]] == ["pass"] * 4
    assert data["reference"].startswith("outputs recorded in the trace")
    assert data["workers_started"] == 1  # one long-lived worker for every launch


def test_golden_recorded_then_compared_with_each_isolation(oracle: Path, tmp_path: Path) -> None:
    golden = tmp_path / "golden.pt"
    rc, data = run(oracle, "--record-golden", str(golden))
    assert rc == 0 and golden.is_file(), data["reason"]
    for isolation in ("fork", "spawn", "none"):
        rc, data = run(oracle, "--golden", str(golden), "--isolation", isolation)
        assert rc == 0, (isolation, data["reason"])


def test_a_planted_bug_is_a_mismatch_of_that_kernel_only(oracle: Path, tmp_path: Path) -> None:
    folder = variant(oracle, tmp_path, "add_kernel", lambda src: mutate(src, "add_kernel", "op_swap"))
    rc, data = run(folder)
    assert rc == 1 and data["status"] == "mismatch"
    assert [(e["kernel"], e["status"]) for e in data["launches"]] == [
        ("scale_kernel", "pass"), ("add_kernel", "mismatch"), ("rowsum_kernel", "pass"), ("scale_kernel", "pass")]
    assert "add_kernel" in data["reason"] and "out_ptr" in data["reason"]
    # one case per kernel, for a bisect that finds each kernel's culprit
    assert data["cases"] == {"scale_kernel": "pass", "add_kernel": "mismatch", "rowsum_kernel": "pass"}


def test_a_stray_write_fails_that_launch_only(oracle: Path, tmp_path: Path) -> None:
    """scale_kernel writes one element past its output (mask_grow): its own launches mismatch on
    the guard bytes; the launches after it get the guard bytes back and pass."""
    folder = variant(oracle, tmp_path, "scale_kernel", lambda src: mutate(src, "scale_kernel", "mask_grow"))
    rc, data = run(folder)
    assert rc == 1 and data["status"] == "mismatch", data["reason"]
    statuses = [(e["kernel"], e["status"]) for e in data["launches"]]
    assert statuses[1:3] == [("add_kernel", "pass"), ("rowsum_kernel", "pass")], data["launches"]
    assert statuses[0] == ("scale_kernel", "mismatch") and "#guard" in data["launches"][0]["reason"]
    assert data["cases"]["scale_kernel"] == "mismatch" and data["cases"]["add_kernel"] == "pass"


def _abort_at_jit_time(source: str) -> str:
    """The kernel calls a `@triton.constexpr_function` (evaluated by the JIT while it compiles the
    kernel; under the interpreter, when it runs) that kills the process, as a compiler assertion would."""
    body = "    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)\n"
    assert body in source and "@triton.jit" in source
    source = source.replace(body, "    _specialize_check(BLOCK)\n" + body, 1)
    at = source.index("@triton.jit")
    helper = "import os\n\n\n@triton.constexpr_function\ndef _specialize_check(block):\n    os.abort()\n\n\n"
    return source[:at] + helper + source[at:]


def test_a_kernel_that_aborts_is_a_crash_and_the_others_go_on(oracle: Path, tmp_path: Path) -> None:
    folder = variant(oracle, tmp_path, "add_kernel", _abort_at_jit_time)
    rc, data = run(folder)
    assert rc == 5 and data["status"] == "crash", data["reason"]
    launches = {e["order"]: e for e in data["launches"]}
    assert launches[1]["status"] == "crash" and "SIGABRT" in launches[1]["reason"]
    assert [launches[i]["status"] for i in (0, 2, 3)] == ["pass"] * 3  # row sum got add's recorded outputs
    assert data["workers_started"] == 2  # a new worker after the crash, forked from the fork server


def test_bad_launch_list_is_one_line(oracle: Path, tmp_path: Path) -> None:
    trace = oracle.parent / "trace"
    proc = cli("repro", str(trace), "--launches", "nope", "--out", str(tmp_path / "o"))
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert proc.stderr.strip().count("\n") == 0 and "available kernels" in proc.stderr
    proc = cli("repro", str(trace), "--launches", "all", "--kernel", "add_kernel", "--out", str(tmp_path / "o"))
    assert proc.returncode == 2 and "--launches" in proc.stderr
    assert proc.stderr.strip().count("\n") == 0 and "Traceback" not in proc.stderr
    proc = cli("repro", str(trace), "--launches", " , ", "--out", str(tmp_path / "o"))
    assert proc.returncode == 2 and "wants 'all' or a comma list" in proc.stderr
    assert not (tmp_path / "o").exists()  # nothing written on a refusal


def test_no_reference_is_a_usage_error(oracle: Path, tmp_path: Path) -> None:
    rc, data = run(oracle, "--golden", str(tmp_path / "missing.pt"))
    assert rc == 2 and data["status"] == "usage_error"
    assert all(os.path.exists(oracle / name) for name in ("oracle_core.py", "oracle_compare.py", "replay_workers.py"))


def test_real_h100_chain_replays_on_the_cpu(gpu_traces: Path, tmp_path: Path) -> None:  # noqa: F811
    """autotune_chain (H100, Triton 3.6): the autotuner's ~900 benchmark launches are left out;
    finalize reads the accumulator the (not replayed) autotuned kernel wrote: loaded from the trace."""
    for way in ("tritonbisect", "tritonparse"):
        out = tmp_path / way
        proc = cli("repro", str(gpu_traces / "autotune_chain" / way / "trace"), "--launches", "scale_kernel,finalize_kernel",
                   "--out", str(out))
        assert proc.returncode == 0, proc.stderr
        assert "2 launches of 2 kernels" in proc.stdout
        if way == "tritonparse":  # no outputs after the launches: a golden first
            rc, data = run(out, "--record-golden", str(out / "golden_replay.pt"))
            assert rc == 0, data["reason"]
        rc, data = run(out)
        assert rc == 0 and [e["kernel"] for e in data["launches"]] == ["scale_kernel", "finalize_kernel"], data["reason"]


def test_shared_trace_recompiled_launch_on_views(tmp_path: Path) -> None:
    from oracle_support import scenario

    out = tmp_path / "vadd"
    proc = cli("repro", str(scenario("vadd")), "--launches", "add_kernel", "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    ctx = json.loads((out / "replay_context.json").read_text())
    assert len(ctx["launches"]) == 2 and len(ctx["kernels"]) == 2  # two compilations (storage_offset=3)
    rc, data = run(out, "--record-golden", str(out / "golden_replay.pt"))
    assert rc == 0, data["reason"]
    second = ctx["launches"][1]["kernel"]
    folder = variant(out, tmp_path, second, lambda src: mutate(src, "add_kernel", "mask_grow"))
    rc, data = run(folder)
    assert [e["status"] for e in data["launches"]] == ["pass", "mismatch"] and rc == 1, data["reason"]


@pytest.mark.parametrize(("program", "expected"), [
    ("inductor_ln_gelu", ["triton_per_fused_add_gelu_native_layer_norm_0",
                          "triton_per_fused__softmax_exp_mul_prepare_softmax_online_sub_sum_0"]),
    ("tma_descriptors", ["tma_matmul", "device_desc_scale", "tuple_axpy"]),
])
def test_real_torch_compile_and_descriptor_programs_replay_against_the_h100(
        gpu_traces: Path, tmp_path: Path, program: str, expected: list[str]) -> None:  # noqa: F811
    """Whole real programs traced on the H100: Inductor's kernels, and host-side descriptors, a
    kernel building device-side descriptors and a tuple argument. The tma program frees its
    tensors between launches, so the allocator hands the same memory out again as other views:
    those inputs are reloaded from their blobs, not taken as flowing from the earlier launch."""
    out = tmp_path / program
    proc = cli("repro", str(gpu_traces / program / "tritonbisect" / "trace"), "--launches", "all", "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    rc, data = run(out)
    assert data["reference"].startswith("outputs recorded in the trace"), data
    assert rc == 0 and [e["kernel"] for e in data["launches"]] == expected, data["reason"]
    assert all(e["status"] == "pass" for e in data["launches"])
