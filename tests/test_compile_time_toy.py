"""`--regress compile-time` and `narrow --time` on the toy pass-pipeline Triton
(toyworld/pass_triton.py, planted="slow"): its culprit compiles the same IR, but one pass,
TritonGPURemoveLayoutConversions, does as much work again as the whole pipeline. Every pass
does real CPU work, and under MLIR_ENABLE_TIMING=1 each stage prints MLIR's execution time
report, as the real pass managers do.

A `run` session judges each commit by the compile oracle's compile time (a fresh process, a
fresh cache, CPU seconds) against the good endpoint's with the `--regress perf` statistics,
names the culprit, and narrowing names the pass whose time grew; `hunt --regress compile-time`
does the same as a nightly watch.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from testing.toyworld.pass_triton import SLOW_PASS, make_pass_triton


def _cli(*args: str, cwd: Path | None = None, timeout: float = 600) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("TRITONBISECT_RESULT", "TRITON_INTERPRET")}
    return subprocess.run([sys.executable, "-m", "tritonbisect.cli", *args], capture_output=True, text=True,
                          env=env, timeout=timeout, check=False, cwd=cwd)


def _toy_args(truth: dict, *, artifact: bool = True) -> list[str]:
    kept = ["--artifact", truth["artifact"]] if artifact else []
    return ["--build", truth["build"], *kept, "--repro", truth["ttir"], "--oracle", "ir", "--compile-target", "cuda:90",
            "--env", "PYTHONPATH=build"]


def _last_json(proc: subprocess.CompletedProcess) -> dict:
    lines = [line for line in proc.stdout.splitlines() if line.startswith("{")]
    assert lines, proc.stdout[-2000:] + proc.stderr[-3000:]
    return json.loads(lines[-1])


def test_run_names_the_culprit_and_the_pass_whose_time_grew(tmp_path: Path) -> None:
    truth = make_pass_triton(tmp_path / "toy" / "repo", planted="slow", slow=1.0)
    home = tmp_path / "home"
    proc = _cli("run", "--repo", str(tmp_path / "toy" / "repo"), "--good", truth["order"][0], "--bad",
                truth["order"][-1], *_toy_args(truth), "--regress", "compile-time", "--perf-threshold", "20%",
                "--narrow", "--workdir", str(home), "--json")
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-3000:]
    result = _last_json(proc)
    assert result["status"] == "found" and result["culprit"] == truth["culprit"]
    timed = result["narrow"]
    grew = timed["grew_most"]
    assert (grew["name"], grew["kind"], grew["stage"]) == (SLOW_PASS, "mlir", "ttgir")
    assert grew["culprit"] > grew["parent"] * 3 and timed["builds"] == 0
    assert timed["samples"] == {"parent": 5, "culprit": 5}
    compile_ = timed["compile"]
    assert compile_["culprit"]["cpu_seconds"] > compile_["parent"]["cpu_seconds"] * 1.5

    session = result["session"]
    journal = [json.loads(line) for line in (home / "sessions" / session / "journal.jsonl").read_text().splitlines()]
    bad = next(r for r in journal if r["role"] == "endpoint" and r["commit"] == truth["order"][-1])
    assert bad["kind"] == "perf" and bad["perf"]["samples"] and bad["perf"]["change"] > 0.5
    test_log = next((home / "sessions" / session).rglob("test-1.log")).read_text()
    assert "TRITONBISECT_METRIC=" in test_log and "--check compile-time" in test_log

    report = _cli("report", session, "--workdir", str(home))
    assert report.returncode == 0, report.stderr
    assert "### Where the compile time grew" in report.stdout
    assert f"**Grew most:** {SLOW_PASS} (MLIR pass, ttgir stage)" in report.stdout
    as_json = json.loads(_cli("report", session, "--workdir", str(home), "--format", "json").stdout)
    assert as_json["narrow_time"]["grew_most"]["name"] == SLOW_PASS

    # narrow again by hand: a compile-time session is timed by default; --no-time asks for the IR
    again = _cli("narrow", session, "--workdir", str(home), "--samples", "2")
    assert again.returncode == 0, again.stderr
    assert f"grew most: {SLOW_PASS} (MLIR pass, ttgir stage)" in again.stdout
    assert "fastest of 2 and 2 compiles" in again.stdout
    ir = _cli("narrow", session, "--workdir", str(home), "--no-time")
    assert ir.returncode == 0, ir.stderr
    assert "first pass whose output differs: none" in ir.stdout  # the slow culprit's IR is the same
    wrong = _cli("narrow", session, "--workdir", str(home), "--no-time", "--samples", "2")
    assert wrong.returncode == 2 and "--samples goes with --time" in wrong.stderr


def test_a_compile_time_within_the_threshold_is_good(tmp_path: Path) -> None:
    # 5% more work in one pass: inside a 30% threshold, so the bad endpoint is no regression
    truth = make_pass_triton(tmp_path / "toy" / "repo", planted="slow", slow=0.05)
    proc = _cli("run", "--repo", str(tmp_path / "toy" / "repo"), "--good", truth["order"][0], "--bad",
                truth["order"][-1], *_toy_args(truth), "--regress", "compile-time", "--perf-threshold", "30%",
                "--workdir", str(tmp_path / "home"), "--json")
    result = _last_json(proc)
    assert proc.returncode == 3 and result["status"] != "found", proc.stderr[-3000:]  # endpoints invalid
    journal = [json.loads(line) for line in (Path(result["session_dir"]) / "journal.jsonl").read_text().splitlines()]
    bad = next(r for r in journal if r["role"] == "endpoint" and r["commit"] == truth["order"][-1])
    assert bad["kind"] == "pass" and bad["perf"]["decision"] == "within"
    assert 0 < bad["perf"]["change"] < 0.3


def test_hunt_watches_the_compile_time_night_after_night(tmp_path: Path) -> None:
    truth = make_pass_triton(tmp_path / "toy" / "repo", planted="slow", slow=1.0)
    home = tmp_path / "home"
    argv = ["hunt", "--state", str(home / "state.json"), "--workdir", str(home), "--repo",
            str(tmp_path / "toy" / "repo"), *_toy_args(truth, artifact=False), "--regress", "compile-time",
            "--perf-threshold", "20%", "--issue-body", str(home / "issue.md"), "--json"]
    first = _cli(*argv, "--bad", truth["order"][2])
    assert first.returncode == 0 and _last_json(first)["status"] == "green", first.stderr[-3000:]
    second = _cli(*argv, "--bad", truth["order"][-1])
    assert second.returncode == 5, second.stderr[-3000:]
    night = _last_json(second)
    assert night["culprit"] == truth["culprit"]
    body = (home / "issue.md").read_text()
    assert "--regress compile-time" in body and truth["culprit"][:12] in body
