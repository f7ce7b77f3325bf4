"""Pass-level narrowing on the toy pass-pipeline Triton (toyworld/pass_triton.py).

The toy is a pure-Python `triton` whose compile runs named passes and dumps the IR before each
one under MLIR_ENABLE_DUMP=1 in MLIR's format. Its culprit commit changes TritonGPUCoalesce
(sizePerThread [4] -> [1]); a later pass rejects that (compile error) or aborts (crash); the
same commit renames SSA values and moves locations in an earlier pass, which must not count.
`run --oracle ir --narrow` (and `narrow SESSION`) must name TritonGPUCoalesce from the cached
builds, without building anything.
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from testing.toyworld.pass_triton import FAILING_PASS, PLANTED_PASS, make_pass_triton
from tritonbisect.mlir.normalise import normalise
from tritonbisect.mlir.passes import parse_dumps
from tritonbisect.narrow.compare import compare_pipelines

DUMP = """\
// -----// IR Dump Before TritonCombineOps (triton-combine) ('builtin.module' operation) //----- //
#loc = loc("/k.py":7:0)
module {
  tt.func public @k(%x_ptr: !tt.ptr<f32> loc("x_ptr"(#loc))) {
    %c1_i32 = arith.constant 1 : i32 loc(#loc1)
    tt.return loc(#loc2)
  } loc(#loc)
} loc(#loc)
#loc1 = loc("/k.py":8:0)


// -----// IR Dump Before TritonLoopUnroll (triton-loop-unroll) ('tt.func' operation: @k) //----- //
module {
  tt.func public @k(%arg0: !tt.ptr<f32>) {
    %c1 = arith.constant 1 : i32
    tt.return
  }
}

Traceback (most recent call last):
  File "x.py", line 1
"""


def test_parse_dumps_reads_the_real_header_forms() -> None:
    dumps = parse_dumps(DUMP)
    assert [(d.name, d.arg, d.op) for d in dumps] == [
        ("TritonCombineOps", "triton-combine", "builtin.module"),
        ("TritonLoopUnroll", "triton-loop-unroll", "tt.func"),
    ]
    assert "Traceback" not in dumps[1].ir
    # SSA names and locations do not count
    assert normalise(dumps[0].ir) == normalise(dumps[1].ir)


def _dumps(*stages: tuple[str, str]) -> list:
    text = "".join(f"// -----// IR Dump Before {n} ({n.lower()}) ('builtin.module' operation) //----- //\n{ir}\n\n"
                   for n, ir in stages)
    return parse_dumps(text)


def test_compare_names_added_passes_and_the_first_difference() -> None:
    parent = _dumps(("A", "x"), ("B", "x"), ("C", "y"), ("D", "y"))
    culprit = _dumps(("A", "x"), ("New", "x"), ("B", "x"), ("C", "z"), ("D", "z"))
    result = compare_pipelines(parent, culprit)
    assert result["added"] == ["New (new)"] and result["removed"] == []
    assert result["first_difference"]["pass"] == "B (b)"
    assert "-y" in result["first_difference"]["output_diff"] and "+z" in result["first_difference"]["output_diff"]
    assert result["last_agreeing"] == "A (a)"
    same = compare_pipelines(parent, parent)
    assert same["first_difference"] is None and same["last_agreeing"] == "C (c)"


def _cli(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("TRITONBISECT_RESULT", "TRITON_INTERPRET")}
    return subprocess.run([sys.executable, "-m", "tritonbisect.cli", *args], capture_output=True, text=True,
                          env=env, timeout=300, check=False, cwd=cwd)


def _bisect(tmp_path: Path, planted: str, *extra: str) -> tuple[dict, dict, Path]:
    truth = make_pass_triton(tmp_path / "toy" / "repo", planted=planted)
    home = tmp_path / "home"
    proc = _cli("run", "--repo", str(tmp_path / "toy" / "repo"), "--good", truth["order"][0], "--bad",
                truth["order"][-1], "--build", truth["build"], "--artifact", truth["artifact"], "--repro",
                truth["ttir"], "--oracle", "ir", "--compile-target", "cuda:90", "--env", "PYTHONPATH=build",
                "--workdir", str(home), "--json", *extra)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    assert result["status"] == "found" and result["culprit"] == truth["culprit"]
    return truth, result, home


def test_run_narrow_names_the_planted_pass_from_cached_builds(tmp_path: Path) -> None:
    truth, result, home = _bisect(tmp_path, "error", "--narrow")
    narrowed = result["narrow"]
    assert narrowed["builds"] == 0 and narrowed["parent"] == truth["parent"]
    assert narrowed["first_difference"]["pass"].startswith(PLANTED_PASS)
    assert "sizePerThread = [1]" in narrowed["first_difference"]["output_diff"]
    # the renamed SSA values and moved locations of the pass before it are not a difference
    assert narrowed["last_agreeing"].startswith("ConvertTritonToTritonGPU")
    assert narrowed["running_pass"].startswith(FAILING_PASS)
    assert narrowed["compiles"]["culprit"]["status"] == "compile_error"
    assert narrowed["removed"] == [] and narrowed["added"] == []
    report = _cli("report", result["session"], "--workdir", str(home))
    assert report.returncode == 0, report.stderr
    as_json = _cli("report", result["session"], "--workdir", str(home), "--format", "json")
    assert json.loads(as_json.stdout)["narrow"]["first_difference"]["pass"].startswith(PLANTED_PASS)
    assert "### Where in the compiler" in report.stdout
    assert f"**First pass whose output differs:** `{PLANTED_PASS}" in report.stdout


def test_narrow_session_names_the_running_pass_of_a_crash(tmp_path: Path) -> None:
    truth, result, home = _bisect(tmp_path, "crash")
    proc = _cli("narrow", result["session"], "--workdir", str(home), "--keep", str(tmp_path / "dumps"))
    assert proc.returncode == 0, proc.stderr
    kept = list((tmp_path / "dumps").glob("*/culprit-work/child.stderr"))
    assert kept and "IR Dump Before TritonGPUCoalesce" in kept[0].read_text()
    assert f"first pass whose output differs: {PLANTED_PASS}" in proc.stdout
    assert f"running when the culprit failed:  {FAILING_PASS}" in proc.stdout
    assert "builds: 0" in proc.stdout
    session = json.loads((home / "sessions" / result["session"] / "session.json").read_text())
    assert session["extra"]["narrow"]["compiles"]["culprit"]["status"] == "crash"


def test_narrow_input_errors_are_one_line(tmp_path: Path) -> None:
    proc = _cli("narrow", "--workdir", str(tmp_path / "empty"))
    assert proc.returncode == 2 and len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    proc = _cli("run", "--repo", ".", "--good", "HEAD", "--bad", "HEAD", "--test", "true", "--narrow",
                "--workdir", str(tmp_path / "w"))
    assert proc.returncode == 2 and "--narrow goes with --oracle" in proc.stderr


@pytest.mark.parametrize("planted", ["nope"])
def test_the_toy_refuses_an_unknown_plant(tmp_path: Path, planted: str) -> None:
    with pytest.raises(ValueError):
        make_pass_triton(tmp_path / "r", planted=planted)


def test_a_wheel_is_found_by_its_triton_or_its_llvm_commit(tmp_path: Path) -> None:
    from types import SimpleNamespace

    from tritonbisect.builds.cache import ArtifactCache
    from tritonbisect.core.errors import InputError
    from tritonbisect.executors.pool_settings import ExecutorSettings
    from tritonbisect.narrow.compilers import WheelBuild
    from tritonbisect.session.settings import BisectSettings

    cache = ArtifactCache(tmp_path / "cache")
    for name, meta in (("a", {"commit": "t1" * 20, "recipe": "triton"}),
                       ("b", {"commit": "t2" * 20, "recipe": "triton", "extra": {"llvm": "l1" * 20}})):
        wheel = tmp_path / f"triton-3.6.0+{name}-py3-none-any.whl"
        wheel.write_bytes(b"zip")
        cache.put(ArtifactCache.key("r", meta["commit"], "triton", {"n": name}, "cp3", ""), wheel, meta)
    phase = SimpleNamespace(spec=SimpleNamespace(recipe_config={}, recipe_name="triton", repo=tmp_path))
    settings = BisectSettings(workdir=tmp_path, executor=ExecutorSettings(cache_dir=str(tmp_path / "cache")))
    session = SimpleNamespace(settings=settings)
    builds = WheelBuild(session, phase)  # type: ignore[arg-type]
    assert builds._wheel("t1" * 20).name.endswith("+a-py3-none-any.whl")
    assert builds._wheel("l1" * 20).name.endswith("+b-py3-none-any.whl")
    with pytest.raises(InputError, match="narrow never builds"):
        builds._wheel("ff" * 20)


def test_narrow_prints_the_next_command_with_the_pass_as_a_hint(tmp_path: Path) -> None:
    """The toy's culprit changes TritonGPUCoalesce; narrow names it, weighs the commits that touch
    its Passes.td and Coalesce.cpp, and the command it prints finds the culprit with fewer builds."""
    truth = make_pass_triton(tmp_path / "toy" / "repo", commits=48, culprit=29, touch_pass=(6, 17, 40))
    home = tmp_path / "home"
    proc = _cli("run", "--repo", str(tmp_path / "toy" / "repo"), "--good", truth["order"][0], "--bad",
                truth["order"][-1], "--build", truth["build"], "--artifact", truth["artifact"], "--repro",
                truth["ttir"], "--oracle", "ir", "--compile-target", "cuda:90", "--env", "PYTHONPATH=build",
                "--workdir", str(home), "--json", "--narrow")
    assert proc.returncode == 0, proc.stderr[-2000:]
    first = json.loads(proc.stdout.strip().splitlines()[-1])
    hint = first["narrow"]["prefer_pass"]
    assert hint["passes"] == [PLANTED_PASS]
    assert hint["files"] == ["include/triton/Dialect/TritonGPU/Transforms/Passes.td",
                             "lib/Dialect/TritonGPU/Transforms/Coalesce.cpp"]
    assert hint["commits"] == len(truth["pass_commits"])
    assert hint["command"].endswith(f"--prefer-pass {PLANTED_PASS}") and "--narrow" in hint["command"]
    printed = _cli("narrow", first["session"], "--workdir", str(home))
    assert f"next, with the pass as a hint (weighs {hint['commits']} commits" in printed.stdout
    argv = shlex.split(hint["command"])[1:]
    argv[argv.index("--workdir") + 1] = str(tmp_path / "home2")
    again = _cli(*argv)
    assert again.returncode == 0, again.stderr[-2000:]
    second = json.loads(again.stdout.strip().splitlines()[-1])
    assert second["culprit"] == truth["culprit"]
    assert second["builds"] < first["builds"], (second["builds"], first["builds"])


def test_a_crash_after_the_mlir_pipeline_is_placed_in_its_stage_not_in_the_last_pass() -> None:
    from tritonbisect.narrow.failure import failure, failure_line, stage_of

    # what the child's stderr holds when LLVM's NVPTX backend aborts (faulthandler's stack)
    crashed = (DUMP + "LLVM ERROR: Cannot select: intrinsic %llvm.nvvm.tcgen05.wait.st\nFatal Python error: Aborted\n\n"
               "Current thread 0x00007f (most recent call first):\n"
               '  File "/v/triton/backends/nvidia/compiler.py", line 419 in make_ptx\n'
               '  File "/v/triton/backends/nvidia/compiler.py", line 519 in <lambda>\n'
               '  File "/v/triton/compiler/compiler.py", line 320 in compile\n')
    assert stage_of(crashed) == "make_ptx"
    failed = failure(stage_of(crashed), "LLVM ERROR: Cannot select", "LLVMDIScope (enable-line-info)")
    assert failed["after_mlir"] and failed["where"] == "LLVM's backend (LLVM IR to PTX)"
    assert failure_line(failed).startswith("after the MLIR pipeline, in LLVM's backend (LLVM IR to PTX), "
                                           "Triton's make_ptx stage: LLVM ERROR: Cannot select")
    # an exception's traceback names the stage the same way; ptxas is after LLVM
    raised = 'Traceback (most recent call last):\n  File "/v/compiler.py", line 88, in make_cubin\n'
    assert failure(stage_of(raised), "PTXASError", None)["where"] == "ptxas (PTX to cubin)"
    # a failure inside an MLIR pass: its stage is an MLIR one, and the running pass stands
    in_pass = '  File "/v/compiler.py", line 300 in make_ttgir\n'
    assert stage_of(in_pass) == "make_ttgir" and not failure("make_ttgir", "boom", "X")["after_mlir"]
    assert stage_of("no stack at all") is None and not failure(None, "killed", "X")["after_mlir"]
