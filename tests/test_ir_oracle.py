"""The IR oracle: compile a trace's recorded TTIR/TTGIR, or an IR file, with the
Triton of the machine (the PyPI wheel, a CPU compile for sm90).

The recorded IR is the H100 trace's (Triton 3.6.0). Outcomes: it compiles (pass); an IR the
Triton cannot parse is `unreadable_ir` (exit 5, verdict skip under every policy); a pass that
raises is `compile_error`; a pass that aborts is `crash`.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from compile_support import PLANTS, needs_triton, plant, run_oracle
from oracle_support import cli, needs_traces, scenario
from tritonbisect.core.outcome import (
    METRIC_MODES,
    REGRESS_MODES,
    Kind,
    Policy,
    Verdict,
    classify_test,
)
from tritonbisect.core.perf import PerfSettings
from tritonbisect.oracles.compile.standalone import tb_runner
from tritonbisect.reports.session_report import unreadable_ir_lines

RAISE_IN_LLIR = '''"""Planted: a pass of the llir stage fails with an MLIR error."""
from triton.backends.nvidia import compiler as _nv

_add_stages = _nv.CUDABackend.add_stages


def add_stages(self, stages, options, *args, **kwargs):
    _add_stages(self, stages, options, *args, **kwargs)

    def planted(src, metadata):
        raise RuntimeError("PassManager::run failed (planted: failed to legalize operation 'tt.load')")

    stages["llir"] = planted


_nv.CUDABackend.add_stages = add_stages
'''


@pytest.fixture(scope="module")
def vadd_ir(tmp_path_factory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("ir-oracles")
    out = {}
    for stage in ("ttir", "ttgir"):
        proc = cli("repro", str(scenario("vadd")), "--kernel", "add_kernel", "--from", stage, "--out",
                   str(root / stage))
        assert proc.returncode == 0, proc.stderr
        assert "IR oracle" in proc.stdout
        out[stage] = root / stage
    return out


@needs_traces
def test_the_folder_holds_the_recorded_ir(vadd_ir: dict[str, Path]) -> None:
    ctx = json.loads((vadd_ir["ttgir"] / "compile_context.json").read_text())
    assert ctx["oracle"] == "ir" and ctx["stage"] == "ttgir"
    assert ctx["job"]["what"] == {"kind": "ir", "file": "add_kernel.ttgir"}
    assert ctx["job"]["target"] == {"backend": "cuda", "arch": 90, "warp_size": 32}
    text = (vadd_ir["ttgir"] / "add_kernel.ttgir").read_text()
    assert 'ttg.target = "cuda:90"' in text and "tt.func public @add_kernel" in text


@needs_traces
@needs_triton
@pytest.mark.parametrize("stage", ["ttir", "ttgir"])
def test_recorded_ir_compiles_with_this_triton(vadd_ir: dict[str, Path], stage: str) -> None:
    proc, result = run_oracle(vadd_ir[stage])
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert result["status"] == "pass" and result["oracle"] == "ir"
    assert result["stats"]["ptx.total"] > 0


@needs_traces
@needs_triton
def test_ir_this_triton_cannot_read_is_unreadable_not_a_compile_error(vadd_ir: dict[str, Path], tmp_path) -> None:
    folder = tmp_path / "drift"
    folder.mkdir()
    for f in vadd_ir["ttir"].iterdir():
        (folder / f.name).write_bytes(f.read_bytes())
    ir = folder / "add_kernel.ttir"
    # an op of a future dialect version
    ir.write_text(re.sub(r"tt\.get_program_id x", "tt.get_program_id_v2 x", ir.read_text(), count=1))
    proc, result = run_oracle(folder)
    assert proc.returncode == 5, proc.stdout + proc.stderr
    assert result["status"] == "unreadable_ir"
    assert "tt.get_program_id_v2" in result["reason"]
    cls = classify_test(proc.returncode, proc.stdout, result=result)
    assert cls.kind is Kind.UNREADABLE_IR


@needs_traces
@needs_triton
def test_a_failing_pass_is_a_compile_error_and_an_abort_a_crash(vadd_ir: dict[str, Path], tmp_path) -> None:
    proc, result = run_oracle(vadd_ir["ttgir"], env=plant(tmp_path / "raise", RAISE_IN_LLIR))
    assert proc.returncode == 3 and result["status"] == "compile_error", proc.stdout
    assert "planted" in result["reason"]
    proc, result = run_oracle(vadd_ir["ttgir"], env=plant(tmp_path / "abort", PLANTS["abort"]))
    assert proc.returncode == 4 and result["status"] == "crash", proc.stdout
    assert "SIGABRT" in result["reason"]


@needs_triton
def test_repro_ir_file_without_a_trace(tmp_path) -> None:
    ttgir = tmp_path / "k.ttgir"
    src = Path(__file__).resolve().parent / "data" / "ir" / "add_kernel.ttgir"
    ttgir.write_text(src.read_text())
    proc = cli("repro", "--ir", str(ttgir), "--target", "cuda:90", "--out", str(tmp_path / "o"))
    assert proc.returncode == 0, proc.stderr
    ctx = json.loads((tmp_path / "o" / "compile_context.json").read_text())
    assert ctx["kernel"] == "add_kernel" and ctx["job"]["options"] == {"num_warps": 4}
    proc, result = run_oracle(tmp_path / "o")
    assert proc.returncode == 0 and result["status"] == "pass", proc.stdout + proc.stderr


def test_input_errors_are_one_line(tmp_path) -> None:
    for args, words in (
        (["--ir", str(tmp_path / "k.ttgir"), "--out", str(tmp_path / "o")], "--compile-target"),
        (["--ir", str(tmp_path / "k.ptx"), "--target", "cuda:90", "--out", str(tmp_path / "o")], ".ttir or .ttgir"),
        (["--ir", str(tmp_path / "missing.ttir"), "--target", "cuda:90", "--out", str(tmp_path / "o")], "cannot read"),
        (["--from", "ttir", "--out", str(tmp_path / "o")], "needs a TRACE"),
    ):
        proc = cli("repro", *args)
        assert proc.returncode == 2, proc.stderr
        assert words in proc.stderr and len(proc.stderr.strip().splitlines()) == 1, proc.stderr


def test_bisector_options_for_the_ir_oracle() -> None:
    from tritonbisect.core.errors import InputError
    from tritonbisect.options.bisect_options import compile_oracle_settings

    assert compile_oracle_settings({"oracle": "ir", "repro": "t"})["ir_from"] == "ttir"
    assert compile_oracle_settings({"oracle": "ir", "repro": "t", "ir_from": "ttgir"})["ir_from"] == "ttgir"
    assert compile_oracle_settings({"oracle": "compile", "repro": "t"})["ir_from"] == "source"
    with pytest.raises(InputError, match="--from goes with --oracle ir"):
        compile_oracle_settings({"oracle": "compile", "repro": "t", "ir_from": "ttir"})
    with pytest.raises(InputError, match="--oracle ir goes with --repro"):
        compile_oracle_settings({"oracle": "ir"})


def test_unreadable_ir_is_a_skip_under_every_policy() -> None:
    for regress in REGRESS_MODES:
        perf = PerfSettings(samples=5, max_samples=20, threshold=0.05, significance=0.01,
                            higher_is_better=False) if regress in METRIC_MODES else None
        for on_build_failure in ("skip", "abort", "bad"):
            policy = Policy(regress=regress, on_build_failure=on_build_failure, perf=perf)
            assert policy.verdict(Kind.UNREADABLE_IR) is Verdict.SKIP


def test_the_child_classifies_the_parse_phase() -> None:
    child = {"ok": False, "phase": "parse", "error_type": "RuntimeError", "message": "Parse MLIR file failed."}
    stderr = 'loc("k.ttgir":1:17): error: custom op \'tt.foo\' is unknown\n'
    status, reason = tb_runner.classify(child, 3, "done", stderr, False, 60)
    assert status == "unreadable_ir" and "custom op 'tt.foo' is unknown" in reason
    status, reason = tb_runner.classify(None, -6, "parse", "", False, 60)
    assert status == "unreadable_ir" and "SIGABRT" in reason
    status, _ = tb_runner.classify(None, -6, "compile", "", False, 60)
    assert status == "crash"


def test_the_report_counts_unreadable_ir_and_suggests_source() -> None:
    steps = [{"kind": "unreadable_ir"}] * 3 + [{"kind": "pass"}, {"kind": "compile_error"}]
    (line,) = unreadable_ir_lines(steps)
    assert "3 of 5 commits" in line and "--from source" in line
    (line,) = unreadable_ir_lines(steps[2:])
    assert "1 of 3" in line and "--from source" not in line
    assert unreadable_ir_lines(steps[3:]) == []


if __name__ == "__main__":  # pragma: no cover
    sys.exit(pytest.main([__file__, "-q"]))


@needs_traces
@needs_triton
def test_step_exits_125_for_unreadable_ir_under_every_policy(vadd_ir: dict[str, Path], tmp_path) -> None:
    """`git bisect run tritonbisect step`: an unreadable IR is a skip, even with --on-build-failure bad."""
    import subprocess

    checkout = tmp_path / "co"
    checkout.mkdir()
    subprocess.run(["git", "init", "-q"], cwd=checkout, check=True)
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@x", "commit", "-q", "--allow-empty", "-m", "x"],
                   cwd=checkout, check=True)
    drift = tmp_path / "drift"
    drift.mkdir()
    (drift / "sitecustomize.py").write_text(
        "from triton._C.libtriton import ir as _ir\n\n\n"
        "def parse_mlir_module(path, context):\n    raise RuntimeError('Parse MLIR file failed.')\n\n\n"
        "_ir.parse_mlir_module = parse_mlir_module\n")
    for extra in ([], ["--on-build-failure", "bad"], ["--regress", "compile_error"]):
        proc = subprocess.run(
            [sys.executable, "-m", "tritonbisect.cli", "step", "--test", f"python {vadd_ir['ttgir'] / 'compile_repro.py'}",
             "--env", f"PYTHONPATH={drift}", "--workdir", str(tmp_path / "w"), *extra],
            cwd=checkout, capture_output=True, text=True, timeout=300, check=False)
        assert proc.returncode == 125, proc.stderr
        assert "unreadable_ir -> skip" in proc.stderr


@needs_traces
def test_runtime_ir_oracle_carries_the_ir_and_needs_a_gpu(tmp_path) -> None:
    """`--from ttgir --mode runtime`: the runtime oracle, with the recorded TTGIR beside it for
    the JIT to compile (checked on the H100: bench/ir_runtime_gpu_check.py). Without a GPU it
    is a usage error (the interpreter runs Python source), never a verdict on the kernel."""
    out = tmp_path / "rt"
    proc = cli("repro", str(scenario("vadd")), "--kernel", "add_kernel", "--from", "ttgir", "--mode", "runtime",
               "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    ctx = json.loads((out / "context.json").read_text())
    assert ctx["ir"] == {"stage": "ttgir", "file": "add_kernel.ttgir"}
    assert (out / "add_kernel.ttgir").read_text().lstrip().startswith(("#", "module"))
    result = tmp_path / "r.json"
    run = subprocess.run([sys.executable, str(out / "repro.py"), "--record-golden", str(tmp_path / "g.pt"),
                          "--result", str(result)], capture_output=True, text=True, timeout=300,
                         env={**os.environ, "CUDA_VISIBLE_DEVICES": ""})
    data = json.loads(result.read_text())
    assert run.returncode == 2 and data["status"] == "usage_error" and "needs a GPU" in data["reason"]
    # an IR file alone has no arguments to launch with; --launches replays source
    ir = tmp_path / "k.ttgir"
    ir.write_text((out / "add_kernel.ttgir").read_text())
    for argv in (["--ir", str(ir), "--target", "cuda:90", "--mode", "runtime"],
                 [str(scenario("vadd")), "--from", "ttir", "--mode", "runtime", "--launches", "all"]):
        proc = cli("repro", *argv, "--out", str(tmp_path / "x"))
        assert proc.returncode == 2 and proc.stderr.strip().count("\n") == 0, proc.stderr


@needs_traces
def test_a_stage_the_trace_lacks_is_one_line_and_writes_nothing(tmp_path) -> None:
    """A trace whose compilation events carry no TTIR: both IR oracles refuse before writing."""
    trace = tmp_path / "vadd"
    shutil.copytree(scenario("vadd") / "logs", trace)
    for log in trace.glob("*.ndjson"):
        lines = []
        for line in log.read_text().splitlines():
            event = json.loads(line)
            files = event.get("payload", {}).get("file_content") if isinstance(event.get("payload"), dict) else None
            if isinstance(files, dict):
                for name in [n for n in files if n.endswith(".ttir")]:
                    del files[name]
            lines.append(json.dumps(event))
        log.write_text("\n".join(lines) + "\n")
    for mode in ("runtime", "compile"):
        out = tmp_path / f"out-{mode}"
        proc = cli("repro", str(trace), "--kernel", "add_kernel", "--from", "ttir", "--mode", mode, "--out", str(out))
        assert proc.returncode == 2 and proc.stderr.strip().count("\n") == 0, proc.stderr
        assert "has no ttir" in proc.stderr and "--from ttgir or --from source" in proc.stderr, proc.stderr
        assert not out.exists() or not any(out.iterdir()), sorted(out.rglob("*"))
