"""Tracing never breaks the traced program: real programs, each run twice as real
subprocesses, untraced and under `tritonbisect trace`, must end with the same exit status,
print the same and save the same outputs, and leave a readable trace from every process that
launched a kernel.

The programs are in tests/tracer_programs/. Kernels run in Triton's interpreter, or are
compiled for sm90 for real (no GPU needed to compile) and launched through a stand-in for the
GPU driver (tracer_programs/fake_gpu.py); Inductor's compile workers are Inductor's own.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import pytest

from oracle_support import REPO, cli, needs_torch_triton
from real_triton import triton_release_python
from tritonbisect.traces.capture import exit_status
from tritonbisect.traces.reader import load_trace, resolve_blob

pytestmark = needs_torch_triton

PROGRAMS = Path(__file__).resolve().parent / "tracer_programs"


@dataclass
class Pair:
    untraced: subprocess.CompletedProcess
    traced: subprocess.CompletedProcess
    trace: Path
    out_untraced: Path
    out_traced: Path


def _env(tmp: Path, way: str, interpret: bool) -> dict:
    env = dict(os.environ)
    env.pop("TRITON_INTERPRET", None)
    if interpret:
        env["TRITON_INTERPRET"] = "1"
    env.update(
        PYTHONPATH=os.pathsep.join([str(PROGRAMS), str(REPO / "src")]),
        TRITON_CACHE_DIR=str(tmp / f"triton-cache-{way}"),
        TORCHINDUCTOR_CACHE_DIR=str(tmp / f"inductor-cache-{way}"),
        TRITON_DEFAULT_FP_FUSION="1",
    )
    return env


def run_both(tmp: Path, program: str, *args: str, interpret: bool = True, timeout: float = 240,
             python: str = sys.executable) -> Pair:
    """The program untraced and traced, side by side (two processes at once), run by `python`."""
    trace = tmp / "trace"
    out_u, out_t = tmp / "untraced.pt", tmp / "traced.pt"
    script = str(PROGRAMS / program)

    def untraced():
        return subprocess.run([python, script, str(out_u), *args], capture_output=True, text=True,
                              env=_env(tmp, "untraced", interpret), timeout=timeout, cwd=tmp)

    def traced():
        return cli("trace", "--out", str(trace), "--", python, script, str(out_t), *args,
                   env=_env(tmp, "traced", interpret), timeout=timeout)

    with ThreadPoolExecutor(2) as pool:
        u, t = pool.submit(untraced), pool.submit(traced)
        return Pair(u.result(), t.result(), trace, out_u, out_t)


def assert_same_program(pair: Pair, returncode: int, same_stderr: bool = True) -> dict:
    """Same exit status, same stdout and stderr (the traced run adds `trace`'s own lines after
    them), same outputs. Returns the outputs."""
    import torch

    assert exit_status(pair.untraced.returncode) == returncode, pair.untraced.stderr[-3000:]
    assert pair.traced.returncode == returncode, pair.traced.stdout[-2000:] + pair.traced.stderr[-3000:]
    assert pair.traced.stdout.startswith(pair.untraced.stdout), (pair.untraced.stdout, pair.traced.stdout)
    assert "trace written to" in pair.traced.stdout[len(pair.untraced.stdout):]
    if same_stderr:  # not where several processes write to it at once
        assert pair.traced.stderr.startswith(pair.untraced.stderr), (pair.untraced.stderr, pair.traced.stderr)
    expected, got = torch.load(pair.out_untraced), torch.load(pair.out_traced)
    assert sorted(expected) == sorted(got)
    for key in expected:
        assert torch.equal(expected[key], got[key]), key
    return got


def blob(record: dict, trace: Path):
    import torch

    path = resolve_blob(record["blob_path"], trace / "x", trace)
    assert path is not None, record["blob_path"]
    return torch.load(path)


def files_with_launches(trace: Path) -> dict[int, Path]:
    found = {}
    for path in sorted(trace.glob("*.ndjson")):
        tr = load_trace(path)  # every file is readable on its own ...
        if tr.launches:
            for launch in tr.launches:  # ... and holds the compilation of each of its launches
                assert tr.compilation_of(launch) is not None, (path, launch.name)
            found[tr.files[0].pid] = path
    return found


def test_inductor_compile_workers_pickle_traced_kernels(tmp_path: Path) -> None:
    """Issue 13's crash: Inductor's compile worker pickles the kernel it compiled back to the
    parent. Traced, the program runs as untraced: the kernel, recompiled nowhere, pickles
    without a trace of the tracer; the parent launches it through Inductor's own launcher
    and the trace has that launch, its inputs and its outputs after the launch."""
    pair = run_both(tmp_path, "inductor_workers.py", interpret=False)
    outputs = assert_same_program(pair, 0, same_stderr=False)
    assert "mentions the tracer: False" in pair.traced.stdout
    assert "launch metadata pickles: True" in pair.traced.stdout
    assert not (pair.trace / "tracer_errors.log").exists()

    tr = load_trace(pair.trace)
    assert len(tr.files) >= 2  # the parent and at least one compile worker
    launching = files_with_launches(pair.trace)
    assert len(launching) == 1  # the workers compiled, only the parent launched
    only_compiled = [f for f in tr.files if f.path not in launching.values()]
    assert only_compiled and all(load_trace(f.path).compilations for f in only_compiled)
    assert len(tr.launches) == 2
    for i, launch in enumerate(tr.launches):
        assert launch.name == "triton_poi_fused_add_cos_mul_sin_0"
        comp = tr.compilation_of(launch)
        assert "function_start_line" in comp.python_source  # the whole generated module
        assert comp.metadata["target"]["arch"] == 90
        assert launch.args["xnumel"] == {"type": "int", "value": 77100}
        assert blob(launch.args["in_ptr0"], pair.trace).equal(outputs["x"])
        assert not blob(launch.args["out_ptr0"], pair.trace).any()  # before the launch: zeros
        assert blob(launch.after["out_ptr0"], pair.trace).equal(outputs[f"out{i}"])


def test_multiprocessing_children_fork_and_spawn(tmp_path: Path) -> None:
    """Pools and Processes under fork and spawn, one child reloading the kernels' module:
    each process that launched has its own readable, self-contained trace file."""
    pair = run_both(tmp_path, "mp_children.py")
    assert_same_program(pair, 0, same_stderr=False)
    assert not (pair.trace / "tracer_errors.log").exists()
    launching = files_with_launches(pair.trace)
    pids = json.loads(Path(str(pair.out_traced) + ".pids").read_text())
    assert sorted(launching) == pids
    assert len(pids) >= 5  # the parent, a fork and a spawn Process, at least one worker of each Pool
    tr = load_trace(pair.trace)
    assert len(tr.launches) == 7 and all(launch.after for launch in tr.launches)


def test_programs_own_hooks_raise(tmp_path: Path) -> None:
    """The program's own listener and launch hooks raise, and it finally replaces Triton's
    launch hook with its own: it sees exactly what it sees untraced; the tracer counts the
    launches it could no longer see."""
    pair = run_both(tmp_path, "own_hooks.py", interpret=False)
    assert_same_program(pair, 3)
    for line in ("caught: the program's listener refuses shift_kernel",
                 "launch 1 caught: the program's enter hook fails once",
                 "launch 2 caught: the program's exit hook fails once"):
        assert line in pair.traced.stdout
    tr = load_trace(pair.trace)
    assert [launch.name for launch in tr.launches] == ["scale_kernel", "shift_kernel"] * 2
    # launches 1 and 2 never reached the tracer's exit hook (the program's hook raised first)
    assert [bool(launch.after) for launch in tr.launches] == [True, False, False, True]
    assert "the tracer lost 2 records" in pair.traced.stderr
    assert "launch records (the program replaced Triton's launch hook)" in pair.traced.stderr


@pytest.mark.parametrize("how, status", [("exit", 7), ("segv", 128 + signal.SIGSEGV)])
def test_program_ending_without_shutdown(tmp_path: Path, how: str, status: int) -> None:
    """os._exit and a fatal signal: no atexit, no flush; the trace is whole and `trace`
    exits with the program's status (a signal as 128+N, as a shell shows it)."""
    pair = run_both(tmp_path, "ends_abruptly.py", how)
    outputs = assert_same_program(pair, status)
    tr = load_trace(pair.trace)
    assert len(tr.launches) == 2 and all(launch.after for launch in tr.launches)
    assert blob(tr.launches[0].after["out_ptr"], pair.trace).equal(outputs["first"])


@pytest.mark.parametrize("interpret", [True, False], ids=["interpreter", "compiled"])
def test_descriptor_and_tuple_arguments(tmp_path: Path, interpret: bool) -> None:
    """Host-side TensorDescriptors as tritonparse 0.6 records them (base tensor with its blob,
    shape, strides, block_shape, padding), tuples with the record of each element, and
    both recorded again after the launch."""
    pair = run_both(tmp_path, "descriptors.py", interpret=interpret)
    outputs = assert_same_program(pair, 0)
    tr = load_trace(pair.trace)
    tma, tup = tr.launches_of("tma_scale")[0], tr.launches_of("tuple_axpy")[0]

    desc = tma.args["a_desc"]
    assert desc["type"] == "TensorDescriptor"
    assert (desc["shape"], desc["strides"], desc["block_shape"], desc["padding"]) == ([64, 48], [48, 1], [32, 16],
                                                                                       "zero")
    assert desc["round_f32_to_tf32"] is False
    assert desc["base"]["type"] == "tensor" and desc["base"]["shape"] == [64, 48]
    assert blob(desc["base"], pair.trace).equal(outputs["a"])
    assert not blob(tma.args["c_desc"]["base"], pair.trace).any()
    assert blob(tma.after["c_desc"]["base"], pair.trace).equal(outputs["c"])
    assert "s" not in tma.after  # only arguments that hold tensors are recorded after

    ptrs = tup.args["ptrs"]
    assert ptrs["type"] == "tuple" and ptrs["repr"].startswith("(tensor(shape=[300]")
    assert [e["type"] for e in ptrs["elements"]] == ["tensor"] * 3
    assert blob(ptrs["elements"][0], pair.trace).equal(outputs["x"])
    assert blob(tup.after["ptrs"]["elements"][2], pair.trace).equal(outputs["out"])
    assert tup.args["alpha"] == {"type": "float", "value": 0.25}


def test_tracer_failures_are_counted_not_raised(tmp_path: Path) -> None:
    """An argument the tracer cannot record, and a trace folder that takes no tensor data:
    the program runs as untraced, and `trace` says what was lost, and why."""
    (tmp_path / "trace").mkdir()
    (tmp_path / "trace" / "saved_tensors").write_text("not a folder")
    pair = run_both(tmp_path, "tracer_failures.py")
    assert_same_program(pair, 0)
    assert "sparse launch failed: NotImplementedError" in pair.traced.stdout
    err = pair.traced.stderr
    assert "the tracer lost 13 records" in err
    assert "12 tensor blobs (their statistics were kept): NotADirectoryError" in err
    assert "1 launch records: RuntimeError: Cannot access data pointer" in err
    lines = [json.loads(line) for line in (pair.trace / "tracer_errors.log").read_text().splitlines()]
    assert {line["stage"] for line in lines} == {"blob", "interpreter"}
    assert "Traceback" in lines[0]["traceback"]
    tr = load_trace(pair.trace)  # still readable, the statistics are there
    assert len(tr.launches) == 2 and "mean" in tr.launches[0].args["x_ptr"]


def test_sigterm_reaches_the_program_and_its_status_is_returned(tmp_path: Path) -> None:
    prog = tmp_path / "sleeper.py"
    prog.write_text("import time\nprint('ready', flush=True)\ntime.sleep(60)\n")
    proc = subprocess.Popen([sys.executable, "-m", "tritonbisect.cli", "trace", "--out", str(tmp_path / "t"), "--",
                             sys.executable, str(prog)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            cwd=REPO)
    assert proc.stdout.readline().strip() == "ready"
    time.sleep(0.2)
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 128 + signal.SIGTERM, err
    assert "no trace written" in err


def test_triton_state_pickles_and_survives_a_reload_of_the_tracer(tmp_path: Path) -> None:
    """What the tracer installs in Triton pickles (module-level functions, partials of them),
    also after the tracer's modules are reloaded, and a reload does not double the records.
    (And a one-element tensor, whose standard deviation torch warns about, warns nothing.)"""
    pair = run_both(tmp_path, "reload_and_pickle.py")
    assert_same_program(pair, 0)
    assert "pickles before: True" in pair.traced.stdout and "pickles after a reload: True" in pair.traced.stdout
    tr = load_trace(pair.trace)
    assert len(tr.launches) == 3 and all(launch.after for launch in tr.launches)
    assert tr.launches[2].args["x_ptr"]["std"] == 0.0
    assert not (pair.trace / "tracer_errors.log").exists()


RELEASE_PROGRAMS = [
    ("3.3.1", "ends_abruptly.py", ("exit",), True, 7),
    ("3.3.1", "compiled_launches.py", (), False, 0),  # before knobs: hooks are CompiledKernel's, no listener
    ("3.6.0", "ends_abruptly.py", ("segv",), True, 128 + signal.SIGSEGV),
    ("3.6.0", "own_hooks.py", (), False, 3),  # the Triton of the H100 captures, compiled path
    ("3.6.0", "descriptors.py", (), False, 0),
]


@pytest.mark.slow
@pytest.mark.parametrize("version, program, args, interpret, status", RELEASE_PROGRAMS,
                         ids=[f"{v}-{p[:-3]}-{'interp' if i else 'compiled'}" for v, p, _a, i, _s in RELEASE_PROGRAMS])
def test_real_triton_releases(tmp_path: Path, version: str, program: str, args: tuple, interpret: bool,
                              status: int) -> None:
    """The same programs on other real Triton releases (their own hooks API and launcher)."""
    python = str(triton_release_python(version))
    pair = run_both(tmp_path, program, *args, interpret=interpret, python=python)
    assert_same_program(pair, status)
    tr = load_trace(pair.trace)
    assert tr.launches and all(tr.compilation_of(launch) for launch in tr.launches)
    assert any(launch.after for launch in tr.launches)
