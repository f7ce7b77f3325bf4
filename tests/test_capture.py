"""`trace` in the state users run torch.compile programs in: warm Inductor caches, the static
CUDA launcher, CUDA graphs, kernels that ran only in an autotuner's benchmark.

The traces under tests/data/capture/ were recorded on an H100 (torch 2.11, Triton 3.6) by
bench/capture_gpu_check.py (see the README there); the tests read them, plan replays and
oracles from them, and run what can run without a GPU (the replay, under Triton's interpreter).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from oracle_support import cli, needs_torch_triton
from tritonbisect.core.errors import InputError
from tritonbisect.oracles.replay import benchmark_only, generate_replay, plan_capture
from tritonbisect.oracles.runtime import generate_oracle
from tritonbisect.traces.capture import TraceRun, env_changes, read_processes, trace_env
from tritonbisect.traces.capture_summary import summary_lines
from tritonbisect.traces.reader import load_trace
from tritonbisect.traces.replayable import refuse_reason

DATA = Path(__file__).resolve().parent / "data" / "capture"
MLP = DATA / "mlp_reduce_overhead"  # mode="reduce-overhead": eager warm-up, then capture
MLP_TP = DATA / "mlp_reduce_overhead_tritonparse"  # the same program under tritonparse 0.6
SCAN_STATIC = DATA / "scan_static_on"  # warm caches, static launcher left on: nothing recorded
MM_STATIC = DATA / "mm_static_on"  # warm caches, static launcher left on: Inductor's kernels lost
MM_COLD = DATA / "mm_autotune_cold"  # max-autotune-no-cudagraphs, cold: triton_mm only benchmarked
MLP_KERNEL = "triton_per_fused_addmm_gelu_native_layer_norm_0"
STATIC = "TORCHINDUCTOR_USE_STATIC_CUDA_LAUNCHER"


def recorded_run(folder: Path) -> TraceRun:
    """The TraceRun `trace` had for a recorded folder (its processes log names the run)."""
    log = folder / "tracer_processes.log"
    token = json.loads(log.read_text().splitlines()[0])["run"]
    files = sorted(p for p in folder.iterdir() if p.name.endswith(".ndjson"))
    return TraceRun(returncode=0, out=folder, files=files, processes=read_processes(folder, token))


def said(run: TraceRun) -> str:
    return "\n".join(line for line, _ in summary_lines(run))


# --- the environment `trace` sets --------------------------------------------------------


def test_trace_env_turns_the_static_launcher_off_and_says_what_it_was(tmp_path):
    env = trace_env({"PATH": "/bin"}, tmp_path, tmp_path / "t")
    assert env[STATIC] == "0"
    (change,) = env_changes({})
    assert (change.name, change.value, change.before) == (STATIC, "0", None)
    assert "unset" in change.line() and "Triton's launcher" in change.line()
    (change,) = env_changes({STATIC: "1"})
    assert change.before == "1" and "was '1'" in change.line()
    assert trace_env({STATIC: "1"}, tmp_path, tmp_path / "t")[STATIC] == "0"
    assert env_changes({STATIC: "0"}) == []  # nothing changed: nothing printed


def test_trace_prints_the_change_and_the_program_sees_it(tmp_path):
    proc = cli("trace", "--out", str(tmp_path / "t"), "--", sys.executable, "-c",
               f"import os; print('seen', os.environ.get('{STATIC}'))")
    assert proc.returncode == 0, proc.stderr
    assert "seen 0" in proc.stdout
    assert f"for the traced program, {STATIC}=0 (unset)" in proc.stderr
    assert "launched no Triton kernel" not in proc.stderr
    assert "no process that the tracer ran in imported Triton" in proc.stderr


@needs_torch_triton
@pytest.mark.parametrize("how", ["config", "env"])
def test_a_program_that_turns_the_static_launcher_back_on_is_told_so(tmp_path, how):
    """A real program imports Inductor and Triton, turns the launcher on again and launches
    nothing: `trace` says what it knows, never that no kernel ran."""
    code = "import triton, torch._inductor.config as c\n"
    cmd = [sys.executable, "-c"]
    if how == "config":
        code += "c.use_static_cuda_launcher = True\n"
    else:
        cmd = ["env", f"{STATIC}=1", *cmd]
    proc = cli("trace", "--out", str(tmp_path / "t"), "--", *cmd, code, timeout=300)
    assert proc.returncode == 0, proc.stderr
    err = proc.stderr
    assert "Triton was imported in 1 process, but no kernel compilation" in err
    assert "Inductor's static CUDA launcher was on in 1 process: its launches never reach" in err
    if how == "config":
        assert "the program sets torch._inductor.config.use_static_cuda_launcher = True itself" in err
    else:
        assert f"the program's own environment sets {STATIC}=1 again" in err
    assert "launched no Triton kernel" not in err


@needs_torch_triton
def test_the_static_launcher_is_off_in_the_traced_program(tmp_path):
    """What Inductor itself decides in the traced program (the real torch's config)."""
    code = "import torch._inductor.config as c; print('static', c.use_static_cuda_launcher)"
    plain = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                           env={k: v for k, v in os.environ.items() if k != STATIC}, timeout=300)
    traced = cli("trace", "--out", str(tmp_path / "t"), "--", sys.executable, "-c", code, timeout=300)
    assert "static True" in plain.stdout  # the default this guards against
    assert "static False" in traced.stdout, traced.stderr


# --- what `trace` said on the GPU runs ----------------------------------------------------


def test_nothing_recorded_with_the_static_launcher_on_is_explained():
    text = said(recorded_run(SCAN_STATIC))
    assert "no trace written" in text
    assert "Triton was imported in 2 processes, but no kernel compilation, cache load or launch reached" in text
    assert ("Inductor's static CUDA launcher was on in 2 processes (1 kernel loaded for it from Inductor's "
            "FX graph cache)") in text
    assert "launched no Triton kernel" not in text


def test_a_partial_trace_with_the_static_launcher_on_says_what_is_missing():
    lines = list(summary_lines(recorded_run(MM_STATIC)))
    assert lines[0][0].startswith("trace written to")
    static = [line for line, to_stderr in lines if "static CUDA launcher was on" in line and to_stderr]
    assert static and "2 kernels loaded for it from Inductor's FX graph cache" in static[0]


def test_cuda_graphs_and_captured_launches_are_reported():
    text = said(recorded_run(MLP))
    assert "1 launch recorded during CUDA-graph capture" in text
    assert "the program used CUDA graphs" in text
    assert "static CUDA launcher" not in text  # off in that run: nothing said about it


def test_benchmark_only_kernels_are_named_in_the_summary():
    text = said(recorded_run(MM_COLD))
    assert "ran only while an autotuner benchmarked them" in text and "triton_mm" in text
    assert "triton_poi_fused_add_relu_1" not in text.split("benchmarked them")[1]


# --- CUDA graphs: replay planning -----------------------------------------------------------


def test_the_captured_launch_keeps_where_its_tensors_were():
    tr = load_trace(MLP)
    warm, captured = tr.launches_of(MLP_KERNEL)
    assert captured.graph_capture and not warm.graph_capture and captured.by_tritonbisect
    layout = captured.layout()
    assert layout is not None and layout["in_out_ptr0"][0] == "tensor"
    assert captured.after == {}  # nothing read during the capture


def test_replay_leaves_the_captured_launch_out_and_replays_its_warmup(tmp_path):
    tr = load_trace(MLP)
    oracle = generate_replay(tr, "all", tmp_path / "r")
    assert [spec["index"] for spec in oracle.context["launches"]] == [0]
    (left,) = oracle.not_replayed
    assert left.launches == [1] and left.stand_ins == [(0, ["in_out_ptr0"])]
    line = left.line()
    assert "where tensors cannot be read" in line and "tritonparse" not in line
    assert "eager warm-up launch 0, the same arguments (in_out_ptr0 at another address)" in line
    assert json.loads((tmp_path / "r" / "replay_context.json").read_text())["not_replayed"][0]["launches"] == [1]


def test_repro_launches_all_prints_what_it_left_out(tmp_path):
    proc = cli("repro", str(MLP), "--launches", "all", "--out", str(tmp_path / "r"))
    assert proc.returncode == 0, proc.stderr
    assert f"not replayed: 1 launch of '{MLP_KERNEL}' (1): recorded during CUDA-graph capture" in proc.stdout
    assert "tritonparse skipped" not in proc.stdout + proc.stderr


@needs_torch_triton
def test_the_replay_of_a_reduce_overhead_program_passes_under_the_interpreter(tmp_path):
    """The warm-up launch, rebuilt from the GPU's blobs, matches the outputs the GPU recorded."""
    generate_replay(MLP, "all", tmp_path / "r")
    env = dict(os.environ, TRITON_INTERPRET="1")
    proc = subprocess.run([sys.executable, str(tmp_path / "r" / "replay.py")], capture_output=True, text=True,
                          env=env, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "1 launches replayed: 1 pass" in proc.stdout


def test_a_captured_launch_asked_for_alone_points_to_its_warmup(tmp_path):
    tr = load_trace(MLP)
    with pytest.raises(InputError) as err:
        generate_oracle(tr, MLP_KERNEL, tmp_path / "o", launch_id=1)
    text = str(err.value)
    assert "where tensors cannot be read" in text and "use --launch-id 0" in text
    assert "tritonparse" not in text
    assert not (tmp_path / "o").exists()


def test_tritonparse_traces_keep_their_own_reason_and_claim_no_warmup():
    tr = load_trace(MLP_TP)
    captured = [launch for launch in tr.launches if launch.graph_capture]
    assert captured and not captured[0].by_tritonbisect
    assert "tritonparse skipped its arguments" in (refuse_reason(tr, captured[0]) or "")
    kept, left = plan_capture(tr, tr.launches)
    assert len(kept) == len(tr.launches) - len(captured)
    (entry,) = left
    assert entry.stand_ins == [] and not entry.layout_known
    assert "tritonparse skipped its arguments" in entry.line() and "no eager launch" not in entry.line()


# --- kernels that ran only in an autotuner's benchmark ------------------------------------


def test_the_oracle_of_a_benchmark_only_kernel_says_it_needs_a_golden(tmp_path):
    tr = load_trace(MM_COLD)
    oracle = generate_oracle(tr, "triton_mm", tmp_path / "o")
    (note,) = [w for w in oracle.warnings if "autotuner benchmarked" in w]
    assert "the kernel ran only there" in note and "record a golden at a good Triton first" in note


def test_a_benchmark_launch_of_a_kernel_that_also_ran_for_real_points_to_the_real_one(tmp_path):
    tr = load_trace(MM_COLD)
    oracle = generate_oracle(tr, "triton_poi_fused_add_relu_1", tmp_path / "o", launch_id=0)
    (note,) = [w for w in oracle.warnings if "autotuner benchmarked" in w]
    assert "pick a real launch (--launch-id 2)" in note
    default = generate_oracle(tr, "triton_poi_fused_add_relu_1", tmp_path / "d")
    assert default.launch.index == 2 and not [w for w in default.warnings if "benchmarked" in w]
    # its outputs were recorded, but this copy of the trace keeps no blobs: said as it is
    (note,) = [w for w in default.warnings if "golden" in w]
    assert note.startswith("the outputs recorded after launch 2 of 'triton_poi_fused_add_relu_1' have no data here")


def test_repro_prints_the_note_when_it_writes_the_oracle(tmp_path):
    proc = cli("repro", str(MM_COLD), "--kernel", "triton_mm", "--out", str(tmp_path / "o"))
    assert proc.returncode == 0, proc.stderr
    assert "note: launch 0 of 'triton_mm' was made while an autotuner benchmarked configs" in proc.stdout
    assert "record at a good Triton:" in proc.stdout


def test_the_replay_says_which_kernels_ran_only_in_a_benchmark():
    tr = load_trace(MM_COLD)
    (entry,) = benchmark_only(tr, None)
    assert entry.kernel == "triton_mm" and entry.launches == [0, 1, 2]
    assert "ran only while an autotuner benchmarked it" in entry.line()


def test_info_names_the_warmup_of_a_captured_launch():
    from tritonbisect.traces.info import render_info

    text = render_info(load_trace(MLP), MLP_KERNEL)
    assert "[CUDA-graph capture: cannot reproduce; its eager warm-up is launch 0]" in text
    assert "_note" not in text
    assert "its eager warm-up" not in render_info(load_trace(MLP_TP), MLP_KERNEL)
