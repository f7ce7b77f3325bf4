"""`reduce --session S`: the culprit and its parent of a finished `triton` session, from the
Triton wheels in its build cache, installed into scratch venvs (no build).

The fast tests check the one-line refusals (no culprit, no oracle, no cached build). The slow
one plants a miscompile in a real Triton 3.9.0 wheel (its interpreter's float addition
subtracts) as the toy Triton history's culprit build, the unchanged wheel as its parent's, and
reduces a traced oracle with them under TRITON_INTERPRET=1: the session's build count and
cache stay as they were, and its report shows the reduced kernel."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from oracle_support import needs_torch_triton
from real_triton import test_cache_dir
from reduce_support import cli, traced_oracle
from testing.toyworld.pass_triton import make_pass_triton
from tritonbisect.builds.cache import ArtifactCache
from tritonbisect.options.bisect_options import BisectSettings
from tritonbisect.oracles.repro_spec import oracle_commands
from tritonbisect.session.phases import PhaseSpec
from tritonbisect.session.session import Session

RELEASE = "3.9.0"
PLANTED_FILE = "triton/runtime/interpreter.py"
ORIGINAL_ADD = "create_fadd = lambda self, lhs, rhs: self.binary_op(lhs, rhs, np.add)"
PLANTED_ADD = "create_fadd = lambda self, lhs, rhs: self.binary_op(lhs, rhs, np.subtract)"


def _session(tmp_path: Path, test: dict | None, *, found: bool = True) -> tuple[Session, dict, Path]:
    truth = make_pass_triton(tmp_path / "toy" / "repo")
    workdir = tmp_path / "home"
    phase = PhaseSpec(name="triton", repo=tmp_path / "toy" / "repo", good=truth["order"][0], bad=truth["order"][-1],
                      recipe_name="triton", recipe_config={"test": test or {"command": "true"}})
    session = Session.create(workdir, BisectSettings(workdir=workdir), [phase])
    if found:
        state = session._phases[0]
        state.culprit, state.status = truth["culprit"], "found"
    session.save()
    return session, truth, workdir


def _one_line_error(proc: subprocess.CompletedProcess, text: str) -> None:
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and text in lines[0], proc.stderr


def test_a_session_without_culprit_oracle_or_cached_builds_is_one_line(tmp_path: Path) -> None:
    oracle = tmp_path / "oracle"
    oracle.mkdir()
    session, _, home = _session(tmp_path / "a", oracle_commands(oracle).to_dict(), found=False)
    proc = cli("reduce", "--session", session.id, "--workdir", str(home), "--out", str(tmp_path / "o1"))
    _one_line_error(proc, "has no culprit")
    session, _, home = _session(tmp_path / "b", None)
    proc = cli("reduce", "--session", session.id, "--workdir", str(home), "--out", str(tmp_path / "o2"))
    _one_line_error(proc, "test is an oracle")
    session, truth, home = _session(tmp_path / "c", oracle_commands(oracle).to_dict())
    proc = cli("reduce", "--session", session.id, "--workdir", str(home), "--out", str(tmp_path / "o3"))
    _one_line_error(proc, f"no cached build of {truth['parent'][:12]}")
    proc = cli("reduce", "--session", session.id, "--workdir", str(home), "--out", str(tmp_path / "o4"),
               "--good-python", sys.executable)
    _one_line_error(proc, "--session names the two Tritons itself")
    proc = cli("reduce", "--out", str(tmp_path / "o5"), "--good-python", sys.executable)
    _one_line_error(proc, "give ORACLE_DIR")
    assert not any((tmp_path / f"o{k}").exists() for k in range(1, 6))


def test_reduce_goes_with_a_source_oracle(tmp_path: Path) -> None:
    proc = cli("run", "--repo", ".", "--good", "HEAD", "--bad", "HEAD", "--test", "true", "--reduce",
               "--workdir", str(tmp_path / "w"))
    _one_line_error(proc, "--reduce goes with --repro")


def test_reduce_options_are_checked_before_anything_runs(tmp_path: Path) -> None:
    base = ["run", "--repo", ".", "--good", "HEAD", "--bad", "HEAD", "--workdir", str(tmp_path / "w")]
    proc = cli(*base, "--test", "true", "--reduce-level", "source")
    _one_line_error(proc, "--reduce-level goes with --reduce")
    repro = [*base, "--repro", str(tmp_path / "trace"), "--kernel", "k", "--reduce"]
    _one_line_error(cli(*repro, "--reduce-level", "source,bytes"), "--reduce-level source,bytes: unknown level(s) bytes")
    _one_line_error(cli(*repro, "--reduce-jobs", "0"), "--reduce-jobs 0: give 1 to 64")
    _one_line_error(cli(*repro, "--reduce-timeout", "-5"), "--reduce-timeout must be a positive number")
    assert not (tmp_path / "w" / "sessions").exists()


def _release_wheel() -> Path:
    folder = test_cache_dir() / "wheels"
    found = sorted(folder.glob(f"triton-{RELEASE}-cp{sys.version_info[0]}{sys.version_info[1]}-*.whl"))
    if not found:
        proc = subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps", "-d", str(folder),
                               f"triton=={RELEASE}"], capture_output=True, text=True)  # fmt: skip
        found = sorted(folder.glob(f"triton-{RELEASE}-*.whl"))
        if proc.returncode != 0 or not found:
            pytest.skip(f"cannot download triton=={RELEASE}: {proc.stderr.strip()[-300:]}")
    return found[0]


def _planted_wheel(release: Path, dest: Path) -> Path:
    """A copy of the release wheel whose interpreter subtracts where it should add."""
    with zipfile.ZipFile(release) as z:
        text = z.read(PLANTED_FILE).decode()
    assert ORIGINAL_ADD in text
    tree = dest / "tree"
    (tree / PLANTED_FILE).parent.mkdir(parents=True)
    (tree / PLANTED_FILE).write_text(text.replace(ORIGINAL_ADD, PLANTED_ADD))
    wheel = dest / release.name
    shutil.copy(release, wheel)
    subprocess.run(["zip", "-q", str(wheel), PLANTED_FILE], cwd=tree, check=True)
    return wheel


@pytest.mark.slow
@needs_torch_triton
def test_a_planted_miscompile_is_reduced_from_the_session_with_no_build(tmp_path: Path) -> None:
    import triton

    if triton.__version__ != RELEASE:
        pytest.skip(f"the oracle is traced with the running Triton, {triton.__version__}; this test wants {RELEASE}")
    if shutil.which("zip") is None:
        pytest.skip("no zip here to plant the miscompile")
    oracle = traced_oracle(tmp_path / "traced")
    test = oracle_commands(oracle).to_dict()
    session, truth, home = _session(tmp_path, test)
    session.settings.executor.env["TRITON_INTERPRET"] = "1"
    session.save()
    release = _release_wheel()
    cache = ArtifactCache(home / "cache")
    for commit, wheel in ((truth["parent"], release), (truth["culprit"], _planted_wheel(release, tmp_path / "pl"))):
        cache.put(ArtifactCache.key("toy", commit, "triton", {}, "cp3", ""), wheel, {"commit": commit, "recipe": "triton"})
    entries = len(cache.entries())
    before = json.loads(cli("report", session.id, "--workdir", str(home), "--format", "json").stdout)

    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}  # the session's --env gives it
    out = tmp_path / "small"
    proc = subprocess.run([sys.executable, "-m", "tritonbisect.cli", "reduce", "--session", session.id, "--workdir",
                           str(home), "--out", str(out), "--json"], capture_output=True, text=True, env=env,
                          cwd=tmp_path, timeout=1500)  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    result = json.loads(proc.stdout)
    assert result["status"] == "reduced" and result["signature"].startswith("mismatch")
    assert result["after"]["kernel_lines"] < result["before"]["kernel_lines"]
    assert result["after"]["elements"] < result["before"]["elements"]
    assert " + " in result["kernel_source"] and "tl.exp" not in result["kernel_source"]
    assert f"parent {truth['parent'][:12]} (good) and the culprit {truth['culprit'][:12]}" in proc.stderr

    after = json.loads(cli("report", session.id, "--workdir", str(home), "--format", "json").stdout)
    assert after["counters"]["builds"] == before["counters"]["builds"] == 0 and after["counters"] == before["counters"]
    assert len(ArtifactCache(home / "cache").entries()) == entries
    assert after["reduce"]["builds"] == 0 and after["reduce"]["oracle"] == str(out / "repro.py")
    report = cli("report", session.id, "--workdir", str(home)).stdout
    assert "### Reduced kernel" in report and result["kernel_source"].strip().splitlines()[0] in report
    # the reduced oracle shows it by itself: passes at the parent's Triton, fails at the culprit's
    assert (out / "issue.py").exists()


PLANT = """import os
if os.environ.get("TRITON_INTERPRET") == "1":
    import numpy as np
    from triton.runtime import interpreter
    interpreter.InterpreterBuilder.create_fadd = lambda self, lhs, rhs: self.binary_op(lhs, rhs, np.subtract)
"""


def _planted_history(repo: Path, commits: int = 6, culprit: int = 3) -> list[str]:
    """A history whose build puts patch.py on PYTHONPATH as sitecustomize: empty before
    `culprit`, from there on it makes the interpreter subtract where it should add."""
    from engine_repo import git

    repo.mkdir(parents=True)
    git(repo, "init", "-q", "-b", "main")
    (repo / ".gitignore").write_text("build/\n")
    shas = []
    for k in range(commits):
        (repo / "patch.py").write_text(PLANT if k >= culprit else "")
        (repo / "n.txt").write_text(str(k))
        git(repo, "add", "-A")
        git(repo, "commit", "-q", "-m", f"commit {k}")
        shas.append(git(repo, "rev-parse", "HEAD").strip())
    return shas


def _run_with_reduce(tmp_path: Path, *options: str) -> tuple[list[str], Path, dict]:
    """`run --repro ... --reduce` over the planted history (a `run --build --artifact` session:
    both sides share one interpreter, each with its own PYTHONPATH): its commits, workdir, --json."""
    shas = _planted_history(tmp_path / "repo")
    oracle_root = tmp_path / "traced"
    traced_oracle(oracle_root)
    home = tmp_path / "home"
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    proc = subprocess.run([sys.executable, "-m", "tritonbisect.cli", "run", "--repo", str(tmp_path / "repo"),
                           "--good", shas[0], "--bad", shas[-1], "--build", "mkdir -p build && cp patch.py "
                           "build/sitecustomize.py", "--artifact", "build", "--repro", str(oracle_root / "trace"),
                           "--kernel", "several_things", "--env", "PYTHONPATH=build", "--env", "TRITON_INTERPRET=1",
                           "--workdir", str(home), "--json", "--reduce", *options],
                          capture_output=True, text=True, env=env, cwd=tmp_path, timeout=1500)  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    return shas, home, json.loads(proc.stdout.strip().splitlines()[-1])


@pytest.mark.slow
@needs_torch_triton
def test_run_reduce_shows_the_reduced_kernel_in_the_report(tmp_path: Path) -> None:
    """`run --repro --reduce`: after the culprit, the oracle is reduced with the cached builds of
    the culprit and its parent."""
    shas, home, result = _run_with_reduce(tmp_path)
    assert result["culprit"] == shas[3]
    reduced = result["reduce"]
    assert reduced["parent"] == shas[2] and reduced["builds"] == 0
    assert reduced["after"]["kernel_lines"] < reduced["before"]["kernel_lines"]
    assert " + " in reduced["kernel_source"]
    session_dir = Path(result["session_dir"]) if "session_dir" in result else home / "sessions" / result["session"]
    assert reduced["oracle"] == str(session_dir / "reduced" / "repro.py")
    assert (session_dir / "reduced" / "repro.py").exists()
    report = cli("report", result["session"], "--workdir", str(home)).stdout
    # the path as the rest of the report shows paths: the workdir as <workdir>, never absolute
    shown = "<workdir>/" + str(Path(reduced["oracle"]).relative_to(home))
    assert "### Reduced kernel" in report and shown in report and str(home) not in report


@pytest.mark.slow
@needs_torch_triton
def test_the_reduce_options_reach_the_reduction(tmp_path: Path) -> None:
    """`--reduce-level inputs --reduce-jobs 1 --reduce-timeout 90`: only the inputs shrink (the
    kernel keeps its lines), and the session and the result say what the reduction ran with."""
    _, home, result = _run_with_reduce(tmp_path, "--reduce-level", "inputs", "--reduce-jobs", "1",
                                       "--reduce-timeout", "90")
    reduced = result["reduce"]
    assert reduced["settings"] == {"levels": ["inputs"], "jobs": 1, "timeout": 90.0}
    assert reduced["after"]["kernel_lines"] == reduced["before"]["kernel_lines"]
    assert reduced["after"]["elements"] < reduced["before"]["elements"]
    saved = json.loads((home / "sessions" / result["session"] / "session.json").read_text())
    reduce = saved["settings"]["follow_ups"]["reduce"]
    assert (reduce["enabled"], reduce["levels"], reduce["jobs"], reduce["timeout"]) == (True, ["inputs"], 1, 90.0)


def test_the_report_section_shows_the_kernel_and_the_reduced_oracle() -> None:
    from tritonbisect.reports.reduced import reduced_lines

    assert reduced_lines(None) == []
    text = "\n".join(reduced_lines({"culprit": "c" * 40, "parent": "p" * 40, "builds": 0, "oracle": "/s/reduced/repro.py",
                                    "kernel_source": "@triton.jit\ndef k(x_ptr):\n    tl.store(x_ptr, 1.0)\n",
                                    "before": {"kernel_lines": 17, "elements": 5000},
                                    "after": {"kernel_lines": 2, "elements": 1}, "signature": "mismatch: x_ptr",
                                    "tests": 40, "seconds": 9.5, "good_triton": "3.9.0", "bad_triton": "3.9.0"}))
    assert "### Reduced kernel" in text and "`/s/reduced/repro.py`" in text
    assert "```python\n@triton.jit\ndef k(x_ptr):\n    tl.store(x_ptr, 1.0)\n```" in text
    assert "17 → 2 kernel lines" in text and "parent `pppppppppppp`" in text and "(0 built)" in text


def test_the_report_section_of_a_reduced_ir_oracle() -> None:
    from tritonbisect.reports.reduced import reduced_lines

    text = "\n".join(reduced_lines({"culprit": "c" * 40, "parent": "p" * 40, "builds": 0, "kind": "ir",
                                    "oracle": "/s/reduced/compile_repro.py", "kernel_source": "module {\n}\n",
                                    "before": {"ir_ops": 41, "kernel_lines": 48, "elements": 0},
                                    "after": {"ir_ops": 5, "kernel_lines": 9, "elements": 0},
                                    "signature": "codegen: ptx.bar down", "tests": 37, "seconds": 75.0}))
    assert "41 → 5 IR operations, 48 → 9 lines" in text and "```mlir\nmodule {\n}\n```" in text
    assert "tensor elements" not in text
