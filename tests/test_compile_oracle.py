"""The compile oracle, for real: real traces from an H100, the real Triton of this Python
(cross-compiling for sm90 on a CPU), real ptxas/cuobjdump from the wheel, real child processes.

Planted Triton changes (tests/compile_support.py) make the compiler abort, segfault, die like
LLVM's report_fatal_error, hang, or cap registers; each must come out as its own outcome. A
harness problem must never pass for a compile error or a crash.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from compile_support import DATA, PLANTS, maxnreg_plant, needs_triton, plant, run_oracle
from oracle_support import cli, needs_traces, scenario, scenarios
from tritonbisect.oracles.compile.standalone import tb_runner
from tritonbisect.traces.reader import load_trace

pytestmark = needs_triton


def _repro(trace: Path, out: Path, *args: str) -> subprocess.CompletedProcess:
    proc = cli("repro", str(trace), "--mode", "compile", "--out", str(out), *args)
    assert proc.returncode == 0, proc.stderr
    return proc


@pytest.fixture(scope="module")
def compiled(tmp_path_factory):
    """Every shared trace (and the trimmed GPU captures in tests/data): oracle written, compiled once."""
    root = tmp_path_factory.mktemp("compile-oracles")
    jobs = [(p.name, p, load_trace(p / "logs").kernels()[0]) for p in scenarios()]
    for folder in sorted(p for p in DATA.iterdir() if p.is_dir()):
        for kernel in load_trace(folder).kernels():
            jobs.append((f"{folder.name}/{kernel}", folder, kernel))

    def work(job):
        name, trace, kernel = job
        out = root / name.replace("/", "__")
        args = ["--launch-id", "1"] if name == "vadd_zstd" else []  # the unaligned views' compile
        _repro(trace, out, "--kernel", kernel, *args)
        proc, result = run_oracle(out)
        return name, (out, proc, result)

    with ThreadPoolExecutor(max_workers=2) as pool:
        return dict(pool.map(work, jobs))


@needs_traces
def test_every_traced_kernel_compiles_for_its_traced_gpu(compiled) -> None:
    assert len(compiled) >= 7 + 5
    for name, (out, proc, result) in compiled.items():
        assert proc.returncode == 0, (name, proc.stdout, proc.stderr[-2000:])
        assert result["status"] == "pass" and result["oracle"] == "compile", name
        assert result["target"] == {"backend": "cuda", "arch": 90, "warp_size": 32}, name
        stats = result["stats"]
        assert stats["regs"] > 0 and stats["ptx.total"] > 0 and stats["sass.total"] > 0, name
        # the compile this Triton made asks for the shared memory the traced one used on the H100
        ctx = json.loads((out / "compile_context.json").read_text())
        assert stats["shared"] == ctx["compilation"]["traced"]["shared"], name
    # Hopper features reach the codegen: TMA descriptors and wgmma
    tma = compiled["tma_descriptors/tma_matmul"][2]["stats"]
    assert tma["ptx.wgmma"] > 0 and tma["sass.HGMMA"] > 0
    ctx = json.loads((compiled["tma_descriptors/tuple_axpy"][0] / "compile_context.json").read_text())
    assert ctx["signature"].startswith("ptrs=(ptrs[0]:*fp32/16, ptrs[1]:*fp32/16, ptrs[2]:*fp32/16)")
    # the unaligned launch compiled without the divisibility its views do not have
    ctx = json.loads((compiled["vadd_zstd"][0] / "compile_context.json").read_text())
    assert "x_ptr:*fp32," in ctx["signature"] + "," and "x_ptr:*fp32/16" not in ctx["signature"]


@needs_traces
def test_the_oracle_folder_is_self_contained_and_the_trace_untouched(tmp_path: Path) -> None:
    trace = scenario("softmax")
    before = {p: hashlib.sha256(p.read_bytes()).hexdigest() for p in trace.rglob("*") if p.is_file()}
    out = tmp_path / "oracle"
    proc = _repro(trace, out, "--kernel", "softmax_kernel")
    assert "compile once (no GPU needed)" in proc.stdout and "signature:" in proc.stdout
    after = {p: hashlib.sha256(p.read_bytes()).hexdigest() for p in trace.rglob("*") if p.is_file()}
    assert before == after
    moved = tmp_path / "elsewhere"
    out.rename(moved)  # copied to another machine: only the folder travels
    proc, result = run_oracle(moved, "--keep", str(tmp_path / "kept"))
    assert proc.returncode == 0, proc.stderr
    kept = {Path(p).suffix for p in result["artifacts"].values()}
    assert {".ttir", ".ttgir", ".llir", ".ptx", ".cubin"} <= kept


@needs_traces
def test_record_then_check_codegen_and_a_planted_spill_regression(compiled, tmp_path: Path) -> None:
    out = compiled["transpose"][0]
    golden = tmp_path / "golden.json"
    proc, result = run_oracle(out, "--record-golden", str(golden))
    assert proc.returncode == 0 and result["status"] == "pass" and "recorded golden" in result["reason"]
    assert json.loads(golden.read_text())["stats"]["spills"] == 0
    proc, result = run_oracle(out, "--golden", str(golden), "--check", "codegen")
    assert proc.returncode == 0 and "equal the golden" in result["reason"]

    env = plant(tmp_path / "cap24", maxnreg_plant(24))  # the real maxnreg option: ptxas spills
    proc, result = run_oracle(out, "--golden", str(golden), "--check", "codegen", env=env)
    assert proc.returncode == 1, proc.stdout + proc.stderr[-2000:]
    assert result["status"] == "codegen" and result["check"] == "codegen"
    assert "spills 0 → " in result["reason"] and "registers 32 → 24" in result["reason"]
    over = {d["metric"] for d in result["differences"] if d["over_threshold"]}
    assert {"spills", "regs", "sass.STL"} <= over
    # not checked: the same differences are only reported
    proc, result = run_oracle(out, "--golden", str(golden), env=env)
    assert proc.returncode == 0 and "(not checked)" in result["reason"]
    # checked, but only a metric that did not move past its limit
    proc, result = run_oracle(out, "--golden", str(golden), "--check", "codegen", "--threshold", "regs=50%", env=env)
    assert proc.returncode == 0 and "within thresholds" in result["reason"]


@needs_traces
def test_a_real_ptxas_failure_is_a_compile_error(compiled, tmp_path: Path) -> None:
    # wgmma needs more than 32 registers: capped, the real ptxas of the wheel refuses
    env = plant(tmp_path / "cap32", maxnreg_plant(32))
    proc, result = run_oracle(compiled["matmul"][0], env=env)
    assert proc.returncode == 3, proc.stdout + proc.stderr[-2000:]
    assert result["status"] == "compile_error" and result["compile"]["phase"] == "compile"
    assert "PTXAS" in result["reason"] and "Insufficient registers" in result["reason"]


@needs_traces
def test_a_kernel_that_does_not_compile_is_a_compile_error(compiled, tmp_path: Path) -> None:
    folder = tmp_path / "oracle"
    subprocess.run(["cp", "-r", str(compiled["vadd"][0]), str(folder)], check=True)
    source = folder / "kernel_source.py"
    source.write_text(source.read_text().replace("tl.arange(0, BLOCK_SIZE)", "tl.arange(0, 1000)"))
    proc, result = run_oracle(folder)
    assert proc.returncode == 3 and result["status"] == "compile_error", proc.stdout + proc.stderr[-2000:]
    assert "power of 2" in result["reason"]


@needs_traces
@pytest.mark.parametrize(("planted", "signal_name"), [("abort", "SIGABRT"), ("segfault", "SIGSEGV"), ("fatal", None)])
def test_a_compiler_that_dies_is_a_crash(compiled, tmp_path: Path, planted: str, signal_name: str | None) -> None:
    env = plant(tmp_path / planted, PLANTS[planted])
    proc, result = run_oracle(compiled["vadd"][0], env=env)
    assert proc.returncode == 4, proc.stdout + proc.stderr[-2000:]
    assert result["status"] == "crash" and result["compile"]["phase"] == "compile"
    assert result["compile"]["signal"] == signal_name
    if planted == "abort":
        assert "SIGABRT" in result["reason"] and "Assertion `isLegal()' failed" in result["reason"]
    if planted == "fatal":
        assert "LLVM ERROR: Cannot select" in result["reason"]


@needs_traces
def test_a_hanging_compiler_times_out(compiled, tmp_path: Path) -> None:
    env = plant(tmp_path / "hang", PLANTS["hang"])
    proc, result = run_oracle(compiled["vadd"][0], "--timeout", "4", env=env)
    assert proc.returncode == 124 and result["status"] == "timeout", proc.stdout + proc.stderr[-2000:]
    assert "phase 'compile'" in result["reason"]


@needs_traces
def test_harness_problems_are_usage_errors_never_compile_errors(compiled, tmp_path: Path) -> None:
    folder = tmp_path / "oracle"
    subprocess.run(["cp", "-r", str(compiled["vadd"][0]), str(folder)], check=True)
    proc, result = run_oracle(folder, "--check", "codegen")
    assert proc.returncode == 2 and "needs a golden" in result["reason"]
    proc, result = run_oracle(folder, "--golden", str(tmp_path / "missing.json"))
    assert proc.returncode == 2 and result["status"] == "usage_error"
    proc, result = run_oracle(folder, "--threshold", "spills=0")
    assert proc.returncode == 2 and "goes with --check codegen" in result["reason"]
    proc, result = run_oracle(folder, "--target", "cuda")
    assert proc.returncode == 2 and "--compile-target" in result["reason"]
    # a job that does not fit the kernel (our bug, not the compiler's)
    ctx_path = folder / "compile_context.json"
    ctx = json.loads(ctx_path.read_text())
    ctx["job"]["what"]["params"][0]["name"] = "renamed"
    ctx_path.write_text(json.dumps(ctx))
    proc, result = run_oracle(folder)
    assert proc.returncode == 2 and result["status"] == "usage_error", proc.stdout
    assert "(bridge phase)" in result["reason"]
    ctx_path.write_text("{not json")
    proc, result = run_oracle(folder)
    assert proc.returncode == 2 and result["status"] == "usage_error"


@needs_traces
def test_a_triton_that_does_not_import_is_an_unusable_environment(compiled, tmp_path: Path) -> None:
    broken = tmp_path / "broken" / "triton"
    broken.mkdir(parents=True)
    (broken / "__init__.py").write_text("raise ImportError('libtriton.so: undefined symbol: planted')\n")
    env = dict(os.environ, PYTHONPATH=str(broken.parent))
    proc, result = run_oracle(compiled["vadd"][0], env=env)
    assert proc.returncode == 125 and result["status"] == "env_unusable", proc.stdout
    assert "undefined symbol: planted" in result["reason"]


@needs_traces
def test_bad_input_is_one_line_and_exit_2(tmp_path: Path) -> None:
    trace = scenario("vadd")
    proc = cli("repro", str(trace), "--kernel", "add_kernel", "--target", "cuda:90", "--out", str(tmp_path / "o"))
    assert proc.returncode == 2 and "--compile-target goes with --mode compile" in proc.stderr
    proc = cli("repro", str(trace), "--kernel", "add_kernel", "--mode", "compile", "--target", "cuda:sm90",
               "--out", str(tmp_path / "o"))
    assert proc.returncode == 2 and "a CUDA arch is a number" in proc.stderr
    assert "Traceback" not in proc.stderr and len(proc.stderr.strip().splitlines()) == 1
    # launches without their compilation event: nothing to compile from
    only_launches = tmp_path / "launches.ndjson"
    lines = [line for f in sorted((trace / "logs").glob("*.ndjson")) for line in f.read_text().splitlines()
             if '"event_type": "launch"' in line or '"event_type":"launch"' in line]
    only_launches.write_text("\n".join(lines) + "\n")
    proc = cli("repro", str(only_launches), "--kernel", "add_kernel", "--mode", "compile", "--out", str(tmp_path / "o"))
    assert proc.returncode == 2 and "no compilation event" in proc.stderr, proc.stderr
    assert "Traceback" not in proc.stderr and len(proc.stderr.strip().splitlines()) == 1
    # a compilation event without a target, or without the kernel's source
    for name, drop, message in (("notarget", ("target", "backend_name", "arch"), "names no GPU target"),
                                ("nosource", ("python_source",), "no Python source")):
        edited = tmp_path / f"{name}.ndjson"
        lines = []
        for f in sorted((trace / "logs").glob("*.ndjson")):
            for line in f.read_text().splitlines():
                rec = json.loads(line)
                if rec.get("event_type") == "compilation":
                    for key in drop:
                        rec["payload"]["metadata"].pop(key, None)
                        rec["payload"].pop(key, None)
                if rec.get("event_type") == "launch":
                    for key in drop:
                        rec.get("compilation_metadata", {}).pop(key, None)
                lines.append(json.dumps(rec))
        edited.write_text("\n".join(lines) + "\n")
        proc = cli("repro", str(edited), "--kernel", "add_kernel", "--mode", "compile", "--out", str(tmp_path / name))
        assert proc.returncode == 2 and message in proc.stderr, proc.stderr
        assert "Traceback" not in proc.stderr and len(proc.stderr.strip().splitlines()) == 1


def test_an_interpreter_trace_needs_a_target_then_compiles(tmp_path: Path) -> None:
    pytest.importorskip("torch")
    program = tmp_path / "prog.py"
    program.write_text(
        "import torch, triton, triton.language as tl\n"
        "@triton.jit\n"
        "def scale(x_ptr, out_ptr, n, s, BLOCK: tl.constexpr):\n"
        "    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)\n"
        "    m = offs < n\n"
        "    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=m) * s, mask=m)\n"
        "x = torch.randn(1000); out = torch.empty_like(x)\n"
        "scale[(4,)](x, out, 1000, 2.0, BLOCK=256)\n"
    )
    env = dict(os.environ, TRITON_INTERPRET="1")
    traced = tmp_path / "trace"
    proc = cli("trace", "--out", str(traced), "--", sys.executable, str(program), env=env)
    assert proc.returncode == 0, proc.stderr
    proc = cli("repro", str(traced), "--kernel", "scale", "--mode", "compile", "--out", str(tmp_path / "o"))
    assert proc.returncode == 2 and "TRITON_INTERPRET=1" in proc.stderr and "--compile-target" in proc.stderr
    proc = _repro(traced, tmp_path / "o", "--kernel", "scale", "--target", "cuda:80")
    assert "x_ptr:*fp32/16, out_ptr:*fp32/16, n:i32, s:fp32, BLOCK=256" in proc.stdout
    run, result = run_oracle(tmp_path / "o", env={k: v for k, v in env.items() if k != "TRITONBISECT_RESULT"})
    assert run.returncode == 0, run.stdout + run.stderr[-2000:]
    assert result["target"]["arch"] == 80 and result["stats"]["sass.total"] > 0


@needs_traces
def test_the_runner_compiles_ir_files_too(tmp_path: Path) -> None:
    """The API the IR-level oracle builds on: a job may be a TTIR/TTGIR file."""
    comp = next(iter(load_trace(scenario("vadd") / "logs").compilations.values()))
    ttir = tmp_path / "add_kernel.ttir"
    ttir.write_text(comp.ttir)
    job = {"what": {"kind": "ir", "file": str(ttir)}, "target": {"backend": "cuda", "arch": 90, "warp_size": 32},
           "options": {"num_warps": 4, "num_stages": 3}}
    res = tb_runner.compile_in_child(job, tmp_path / "work", timeout=300)
    assert res.status == "pass", res.reason + res.stderr_tail
    assert {"ttgir", "llir", "ptx", "cubin"} <= set(res.artifacts)
    ttir.write_text(comp.ttir.replace("tt.get_program_id", "tt.get_program_idd"))
    res = tb_runner.compile_in_child(job, tmp_path / "work", timeout=300)
    # IR this Triton cannot parse is unreadable (a skip), not a compile error of the commit
    assert res.status == "unreadable_ir" and res.phase == "parse", res.reason
