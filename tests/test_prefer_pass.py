"""--prefer-pass / --prefer-files end to end: real git histories of 600 commits laid out like
Triton (toyworld/pass_history.py), the real CLI, a real test script in each checkout.

The hint right must cost fewer builds than no hint; a misleading hint at most two more, and the
summary, JSON and report say the evidence went against it; an unbuildable cluster and a flaky
test (--flaky auto) still end at the culprit. Real Triton's layout (Passes.td declarations,
GEN_PASS_DEF/impl::...Base implementations, the NVIDIA conversion's folder) is described in
tests/test_prior.py; the toy history mirrors it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from testing.toyworld.gitstream import CommitSpec, write_history
from testing.toyworld.pass_history import REGRESSION_MARK, make_pass_history
from tritonbisect.core.errors import InputError
from tritonbisect.session.hint import find_hint

CHECK = f'''
import hashlib, pathlib, subprocess, sys
mark = {REGRESSION_MARK!r}
bad = any(p.is_file() and mark in p.read_text(errors="replace")
          for p in pathlib.Path(".").rglob("*") if not any(part.startswith(".git") for part in p.parts))
if len(sys.argv) > 2:  # flaky: a good commit fails with probability p, the same draws every session
    state, p = pathlib.Path(sys.argv[1]), float(sys.argv[2])
    head = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip()
    counter = state / head
    n = int(counter.read_text()) if counter.exists() else 0
    counter.write_text(str(n + 1))
    draw = int(hashlib.sha256(f"{{head}}:{{n}}".encode()).hexdigest(), 16) / 2 ** 256
    if not bad and draw < p:
        sys.exit(1)
sys.exit(1 if bad else 0)
'''


def _cli(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "TRITONBISECT_RESULT"}
    return subprocess.run([sys.executable, "-m", "tritonbisect.cli", *args], capture_output=True, text=True,
                          env=env, timeout=600, check=False, cwd=cwd)


def _bisect(tmp: Path, truth: dict, home: str, *extra: str, test: str | None = None,
            artifact: bool = True) -> tuple[dict, str]:
    check = tmp / "check.py"
    check.write_text(CHECK)
    cache = ["--artifact", truth["artifact"]] if artifact else []
    proc = _cli("run", "--repo", str(tmp / "repo"), "--good", truth["good"], "--bad", truth["bad"],
                "--build", truth["build"], *cache,
                "--test", test or f"python3 {check}", "--workdir", str(tmp / home), "--json", *extra, cwd=tmp)
    assert proc.returncode in (0, 1), proc.stdout[-2000:] + proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1]), proc.stderr


def _history(tmp: Path, **kw) -> dict:
    return make_pass_history(tmp / "repo", **kw)


def test_a_right_hint_costs_fewer_builds_and_the_output_says_what_it_weighed(tmp_path: Path) -> None:
    truth = _history(tmp_path, seed=3, culprit_in_pass=True)
    plain, _ = _bisect(tmp_path, truth, "plain")
    hinted, err = _bisect(tmp_path, truth, "hinted", "--prefer-pass", "tritongpu-coalesce")
    assert plain["culprit"] == hinted["culprit"] == truth["culprit"]
    assert hinted["builds"] <= 0.8 * plain["builds"], (hinted["builds"], plain["builds"])
    assert "lib/Dialect/TritonGPU/Transforms/Coalesce.cpp" in err
    assert f"the hint weighs {len(truth['hinted'])} of 600 commits" in err
    hint = hinted["hint"]["main"]
    assert hint["passes"][0]["name"] == "TritonGPUCoalesce"
    assert hint["files"] == ["include/triton/Dialect/TritonGPU/Transforms/Passes.td",
                             "lib/Dialect/TritonGPU/Transforms/Coalesce.cpp"]
    assert hint["commits"] == len(truth["hinted"]) and hint["against"] is False and hint["culprit_hinted"]
    assert hinted["confidence"] == "high"
    report = _cli("report", hinted["session"], "--workdir", str(tmp_path / "hinted"), cwd=tmp_path)
    assert "**Hint:** `--prefer-pass tritongpu-coalesce` weighed" in report.stdout


def test_without_an_artifact_cache_a_re_test_of_the_hinted_search_builds_nothing(tmp_path: Path) -> None:
    # what a user types: `run --build CMD --test T`; the hinted search re-tests the culprit and
    # its parent before its answer holds, on the builds their checkouts keep
    truth = _history(tmp_path, seed=4, culprit_in_pass=True)
    plain, _ = _bisect(tmp_path, truth, "plain", artifact=False)
    hinted, _ = _bisect(tmp_path, truth, "hinted", "--prefer-pass", "TritonGPUCoalesce", artifact=False)
    assert plain["culprit"] == hinted["culprit"] == truth["culprit"]
    journal = Path(hinted["session_dir"]) / "journal.jsonl"
    tested = [json.loads(line)["commit"] for line in journal.read_text().splitlines() if line.strip()]
    assert len(tested) > len(set(tested))  # it did re-test
    assert hinted["builds"] == len(set(tested)) and hinted["cached_builds"] == len(tested) - len(set(tested))
    assert hinted["builds"] <= 0.8 * plain["builds"], (hinted["builds"], plain["builds"])


def test_a_misleading_hint_costs_at_most_two_builds_and_is_called_out(tmp_path: Path) -> None:
    truth = _history(tmp_path, seed=8, culprit_in_pass=False)
    plain, _ = _bisect(tmp_path, truth, "plain")
    hinted, err = _bisect(tmp_path, truth, "hinted", "--prefer-pass", "TritonGPUCoalesce")
    assert hinted["culprit"] == truth["culprit"] and hinted["confidence"] == "high"
    assert hinted["builds"] <= plain["builds"] + 2, (hinted["builds"], plain["builds"])
    assert hinted["hint"]["main"]["against"] is True
    assert "went against the hint" in err
    proc = _cli("status", hinted["session"], "--workdir", str(tmp_path / "hinted"), cwd=tmp_path)
    assert proc.returncode == 0
    report = _cli("report", hinted["session"], "--workdir", str(tmp_path / "hinted"), cwd=tmp_path)
    assert "**the evidence went against the hint" in report.stdout


def test_prefer_files_and_an_unbuildable_cluster(tmp_path: Path) -> None:
    truth = _history(tmp_path, seed=5, culprit_in_pass=True, broken=25)
    hinted, err = _bisect(tmp_path, truth, "hinted", "--prefer-files", "lib/**/Coalesce.cpp")
    assert hinted["status"] == "found" and hinted["culprit"] == truth["culprit"]
    assert "--prefer-files lib/**/Coalesce.cpp: lib/Dialect/TritonGPU/Transforms/Coalesce.cpp" in err


def test_a_flaky_test_under_flaky_auto_with_the_hint(tmp_path: Path) -> None:
    truth = _history(tmp_path, seed=11, culprit_in_pass=True)
    state = tmp_path / "draws"
    state.mkdir()
    test = f"python3 {tmp_path / 'check.py'} {state} 0.15"
    hinted, _ = _bisect(tmp_path, truth, "hinted", "--flaky", "auto", "--prefer-pass", "TritonGPUCoalesce", test=test)
    assert hinted["status"] == "found" and hinted["culprit"] == truth["culprit"]
    assert hinted["posterior"]["rates"] == "learned"


def test_a_conversion_pass_weighs_its_folder_and_shared_patterns(tmp_path: Path) -> None:
    truth = _history(tmp_path, seed=1, commits=60)
    hint = find_hint(tmp_path / "repo", truth["good"], truth["bad"], passes=["ConvertTritonGPUToLLVM"], globs=[])
    assert hint.files == [
        "lib/Conversion/TritonGPUToLLVM/ElementwiseOpToLLVM.cpp",
        "third_party/nvidia/include/TritonNVIDIAGPUToLLVM/Passes.td",
        "third_party/nvidia/lib/TritonNVIDIAGPUToLLVM/LoadStoreOpToLLVM.cpp",
        "third_party/nvidia/lib/TritonNVIDIAGPUToLLVM/TritonGPUToLLVM.cpp",
    ]  # not python/src/passes.cc, which only calls the factory
    assert hint.commits and set(hint.commits) <= set(truth["order"])


def _two_commit_repo(tmp: Path, good_td: str, bad_td: str) -> tuple[Path, list[str]]:
    td = "include/triton/Dialect/TritonGPU/Transforms/Passes.td"
    cpp = ('#define GEN_PASS_DEF_TRITONGPUSCHEDULELOOPS\nstruct S : public impl::TritonGPUScheduleLoopsBase<S> {};\n')
    old = ('#define GEN_PASS_DEF_TRITONGPULOOPSCHEDULING\nstruct S : public impl::TritonGPULoopSchedulingBase<S> {};\n')
    trees = [{td: good_td, "lib/Dialect/TritonGPU/Transforms/LoopScheduling.cpp": old},
             {td: bad_td, "lib/Dialect/TritonGPU/Transforms/ScheduleLoops.cpp": cpp}]
    shas = write_history(tmp / "r", [CommitSpec(tree=t, subject=f"c{i}", timestamp=1735689600 + i)
                                     for i, t in enumerate(trees)])
    return tmp / "r", shas


def test_a_pass_the_endpoints_do_not_share_is_said_and_its_bad_files_used(tmp_path: Path) -> None:
    new = 'def TritonGPUScheduleLoops : Pass<"tritongpu-schedule-loops", "mlir::ModuleOp"> {\n}\n'
    old = 'def TritonGPULoopScheduling : Pass<"tritongpu-loop-scheduling", "mlir::ModuleOp"> {\n}\n'
    repo, (good, bad) = _two_commit_repo(tmp_path, old, new)
    hint = find_hint(repo, good, bad, passes=["TritonGPUScheduleLoops"], globs=[])
    assert "not declared at the good commit (added between the endpoints)" in hint.passes[0].note
    assert "lib/Dialect/TritonGPU/Transforms/ScheduleLoops.cpp" in hint.files and hint.commits == [bad]
    gone = find_hint(repo, good, bad, passes=["TritonGPULoopScheduling"], globs=[])
    assert "not declared at the bad commit" in gone.passes[0].note
    assert "lib/Dialect/TritonGPU/Transforms/LoopScheduling.cpp" in gone.files
    renamed = 'def TritonGPUScheduleLoops : Pass<"tritongpu-loop-scheduling", "mlir::ModuleOp"> {\n}\n'
    repo2, (g2, b2) = _two_commit_repo(tmp_path / "x", old, renamed)
    hint2 = find_hint(repo2, g2, b2, passes=["TritonGPUScheduleLoops"], globs=[])
    assert "renamed between the endpoints (at the good commit: TritonGPULoopScheduling" in hint2.passes[0].note
    with pytest.raises(InputError, match="no Passes.td"):
        find_hint(repo, good, bad, passes=["TritonGPUNothing"], globs=[])


def test_bad_hints_are_one_line_errors(tmp_path: Path) -> None:
    truth = _history(tmp_path, seed=2, commits=40)
    base = ["run", "--repo", str(tmp_path / "repo"), "--good", truth["good"], "--bad", truth["bad"], "--test", "true",
            "--workdir", str(tmp_path / "home")]
    for extra, says in ((["--prefer-pass", "TritonGPUNothing"], "--prefer-pass TritonGPUNothing: no Passes.td"),
                        (["--prefer-files", "nothing/**"], "--prefer-files nothing/**: matches no file"),
                        (["--prefer-pass", " "], "--prefer-pass needs a value")):
        proc = _cli(*base, *extra, cwd=tmp_path)
        assert proc.returncode == 2 and len(proc.stderr.strip().splitlines()) == 1, proc.stderr
        assert says in proc.stderr
    assert not (tmp_path / "home" / "sessions").exists() or not any((tmp_path / "home" / "sessions").iterdir())
    proc = _cli("wheels", "--good", "3.4.0", "--bad", "3.5.0", "--test", "true", "--prefer-pass", "X", cwd=tmp_path)
    assert proc.returncode == 2 and "wheels bisects versions" in proc.stderr
