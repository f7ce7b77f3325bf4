"""Late-2026 Triton's several LLVMs, end to end on the toy world, through the CLI: the pin set
in status/report/--json, a core pin that moves into a fork with a local revert, and the AMD
backend's own LLVM (ROCm's) whose code generator is loaded at run time.

One world and one workdir for the module (later tests re-use what earlier ones built).
"""

from __future__ import annotations

import json
import shlex
import subprocess
from pathlib import Path

import pytest

from bisectors_world import error_line, run_cli, run_json
from testing.toyworld.world import make_world

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    return make_world(tmp_path_factory.mktemp("llvms"), llvm_commits=22, triton_commits=44, eras=True,
                      fork=True, amd_backend=True, toolchain=True)


@pytest.fixture(scope="module")
def home(tmp_path_factory):
    return tmp_path_factory.mktemp("home")


def pin_test(path: str, bad_hash: str) -> str:
    """A test that fails where the pin file names `bad_hash` (no kernel runs: the pins alone)."""
    code = f"import json, sys; sys.exit(json.load(open({path!r}))['llvm_hash'] == {bad_hash!r})"
    return f"python -c {shlex.quote(code)}"


def test_status_report_and_json_say_which_llvm_the_culprit_bumps(world, home, capsys):
    t = world.truth
    good, bad = t["amd_bump_range"]
    code, res, err = run_json(
        ["triton", "--triton-dir", str(world.triton), "--llvm-dir", str(world.llvm), "--good", good,
         "--bad", bad, "--test", pin_test("cmake/amd-llvm-info.json", t["rocm_new"]), "--workdir", str(home)],
        capsys)
    assert code == 0, err[-3000:]
    assert res["culprit"] == t["amd_bump"]
    [change] = res["phases"][0]["pins"]["changes"]
    assert (change["pin"], change["kind"], change["new"]["repository"]) == ("amd", "llvm-bump", "ROCm/llvm-project")
    assert (change["old"]["commit"], change["new"]["commit"]) == (t["rocm_old"], t["rocm_new"])
    line = (f"{t['amd_bump'][:12]} bumps the AMD LLVM (ROCm/llvm-project) from {t['rocm_old'][:12]} "
            f"to {t['rocm_new'][:12]}")
    assert line in err
    # without --amd-llvm-dir there is nothing to descend into: it says how
    assert "--amd-llvm-dir" in err
    code, out, _ = run_cli(["status", res["session"], "--workdir", str(home), "--json"], capsys)
    assert json.loads(out)["pins"]["triton"]["changes"][0]["pin"] == "amd"
    code, out, _ = run_cli(["status", res["session"], "--workdir", str(home)], capsys)
    assert line in out
    code, md, _ = run_cli(["report", res["session"], "--workdir", str(home)], capsys)
    assert f"- **Pins** (`triton`): {line}" in md


def _journal(res: dict) -> list[dict]:
    return [json.loads(line) for line in (Path(res["session_dir"]) / "journal.jsonl").read_text().splitlines()
            if line.strip()]


def test_a_core_pin_into_a_fork_gives_the_upstream_culprit_not_the_reverted_change(world, home, capsys):
    """The bump pins triton-lang/llvm-project: upstream new_llvm plus a local revert of an
    upstream change that breaks Triton's test. Upstream is bisected between the pins' bases
    with the revert replayed at every step: the culprit is the real regression."""
    t = world.truth
    code, res, err = run_json(
        ["triton", "--triton-dir", str(world.triton), "--llvm-dir", str(world.llvm), "--good", t["bump_parent"],
         "--bad", t["bump"], "--test", t["triton_test"], "--workdir", str(home)], capsys)
    assert code == 0, err[-3000:]
    phases = {p["name"]: p for p in res["phases"]}
    assert phases["triton"]["culprit"] == t["bump"]
    assert phases["llvm"]["culprit"] == t["llvm_regression"] != t["fork_reverted"]
    [change] = phases["triton"]["pins"]["changes"]
    assert change["new"]["repository"] == "triton-lang/llvm-project"
    # the answer says which patches were replayed
    [note] = phases["llvm"]["pins"]["notes"]
    assert f"{t['fork_pin'][:12]} Revert" in note and t["fork_base"][:12] in note
    journal = [r for r in _journal(res) if r["phase"] == "llvm"]
    reasons = " ".join(r["build"]["reason"] or "" for r in journal if r.get("build"))
    assert "1 fork patch replayed" in reasons  # a step after the reverted change
    # the endpoints are the pins: built by the Triton phase already
    assert all(not r["build"]["performed"] for r in journal if r["role"] == "endpoint")


def test_a_fork_pin_the_checkout_lacks_says_what_to_fetch(world, tmp_path, capsys):
    t = world.truth
    clone = tmp_path / "llvm-project"
    subprocess.run(["git", "clone", "-q", "--no-local", "--single-branch", "--branch", "main", str(world.llvm), str(clone)],
                   check=True)
    code, out, err = run_cli(
        ["triton", "--triton-dir", str(world.triton), "--llvm-dir", str(clone), "--good", t["bump_parent"],
         "--bad", t["bump"], "--test", t["triton_test"], "--workdir", str(tmp_path / "home")], capsys)
    assert code == 2
    assert error_line(err) == (
        f"tritonbisect: error: LLVM commit {t['fork_pin'][:12]} (new LLVM pin of {t['bump'][:12]}) is a commit "
        f"of triton-lang/llvm-project, not in {clone}; fetch it: git -C {clone} fetch "
        f"https://github.com/triton-lang/llvm-project {t['fork_pin']}")


def test_compat_builder_probes_replay_the_fork_patches(world, home):
    """A probe at an upstream commit after the change the fork reverts builds it with the
    revert (the smoke test is the kernel test: it passes only with the revert)."""
    from tritonbisect.compat_builder.probe import COMPATIBLE, INCOMPATIBLE, Prober
    from tritonbisect.core.history import History
    from tritonbisect.domains.llvm.fork import fork_range

    t = world.truth
    order = t["llvm_order"]
    after = order[order.index(t["fork_reverted"]) + 1]
    assert order.index(after) < order.index(t["llvm_regression"])
    fork = fork_range(History(world.llvm), t["old_llvm"], t["fork_pin"])
    verdicts = {}
    for name, config in (("fork", fork.config()), ("plain", None)):
        prober = Prober(triton_repo=world.triton, llvm_repo=world.llvm, workdir=home,
                        llvm_source=home / f"probe-llvm-{name}", smoke=t["triton_test"], fork=config)
        res = prober.probe(t["bump_parent"], after, home / f"probe-{name}")
        verdicts[name] = res.verdict
        if config:
            assert "1 fork patch replayed" in res.reason, res.reason
    assert verdicts == {"fork": COMPATIBLE, "plain": INCOMPATIBLE}


def test_an_amd_pin_bump_gives_the_bump_and_the_rocm_llvm_culprit(world, home, capsys):
    """--amd-llvm-dir: each Triton step's AMD codegen library is built from its pin (ROCm's
    LLVM) and loaded at run time; the culprit bumps that pin; --backend-llvm core's one step
    (the library from the core LLVM passes) says the AMD LLVM is the cause; the descent into
    ROCm's llvm-project names its regression, and no step of it rebuilds Triton."""
    t = world.truth
    rocm = world.root / "rocm-llvm-project"
    good, bad = t["amd_bump_range"]
    code, res, err = run_json(
        ["triton", "--triton-dir", str(world.triton), "--llvm-dir", str(world.llvm), "--amd-llvm-dir", str(rocm),
         "--backend-llvm", "core", "--good", good, "--bad", bad, "--test", t["triton_test"],
         "--workdir", str(home)], capsys)
    assert code == 0, err[-3000:]
    phases = {p["name"]: p for p in res["phases"]}
    assert phases["triton"]["culprit"] == t["amd_bump"]
    assert phases["amd-llvm"]["culprit"] == t["rocm_regression"] == res["culprit"]
    assert any("passes with the AMD codegen library built from the core LLVM" in n
               for n in phases["triton"]["pins"]["notes"])
    amd = phases["amd-llvm"]["totals"]
    assert amd["built"].get("llvm-amd", 0) >= 1 and "triton" not in amd["built"] and "llvm" not in amd["built"]
    journal = [r for r in _journal(res) if r["phase"] == "amd-llvm"]
    assert all(not r["build"]["performed"] for r in journal if r["role"] == "endpoint")
    assert any("not rebuilt (its codegen library is loaded at run time)" in (r["build"]["reason"] or "")
               for r in journal if r["role"] == "search")
    # the test ran with the library of the step's own ROCm LLVM
    log = next(Path(r["tests"][0]["log"]) for r in journal if r["commit"] == t["rocm_regression"])
    assert f"AMD codegen {t['rocm_regression']}-0" in log.read_text()


def test_a_toolchain_move_gets_an_ab_with_the_previous_ptxas_before_any_descent(world, home, capsys, monkeypatch):
    """The culprit moves cmake/nvidia-toolchain-version.json to a ptxas that miscompiles sub:
    one more step of it with the previous ptxas (fetched once from the nvidia-cuda-nvcc-cu12
    wheels of the index into the store, given as TRITON_PTXAS_PATH) passes: the toolchain is
    the cause, and nothing is descended into."""
    t = world.truth
    monkeypatch.setenv("PIP_INDEX_URL", t["cuda_index"])  # the user's index: the toy one
    code, res, err = run_json(
        ["triton", "--triton-dir", str(world.triton), "--llvm-dir", str(world.llvm), "--good", t["nv_toolchain"],
         "--bad", t["nv_toolchain_bump"], "--test", t["triton_test"], "--env",
         f"TRITON_TOY_CUDA_REDIST={t['cuda_redist']}", "--workdir", str(home)], capsys)
    assert code == 0, err[-3000:]
    assert [p["name"] for p in res["phases"]] == ["triton"]
    assert res["culprit"] == t["nv_toolchain_bump"]
    pins = res["phases"][0]["pins"]
    assert pins["changes"][0]["pin"] == "toolchain"
    assert pins["changes"][0]["new"]["versions"]["ptxas"] == t["ptxas_bad"]
    assert any("passes with the previous NVIDIA toolchain" in n and "is the cause" in n for n in pins["notes"])
    ptxas = home / "downloads" / "nvidia-toolchain" / f"cuda_nvcc-{t['ptxas_good']}" / "bin" / "ptxas"
    assert ptxas.is_file()
    ab = [r for r in _journal(res) if r["role"] == "ab"]
    assert len(ab) == 1 and ab[0]["verdict"] == "good"
    assert f"toy {t['ptxas_good']}" in Path(ab[0]["tests"][0]["log"]).read_text()


def test_an_amd_pin_the_rocm_checkout_lacks_is_one_line_before_any_build(world, tmp_path, capsys):
    t = world.truth
    other = tmp_path / "not-rocm"
    other.mkdir()
    for args in (["init", "-q"], ["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "--allow-empty",
                                  "-m", "x"]):
        subprocess.run(["git", *args], cwd=other, check=True)
    good, bad = t["amd_bump_range"]
    code, _out, err = run_cli(
        ["triton", "--triton-dir", str(world.triton), "--llvm-dir", str(world.llvm), "--amd-llvm-dir", str(other),
         "--good", good, "--bad", bad, "--test", t["triton_test"], "--workdir", str(tmp_path / "home")], capsys)
    assert code == 2
    assert error_line(err) == (
        f"tritonbisect: error: LLVM commit {t['rocm_old'][:12]} (AMD LLVM pin in cmake/amd-llvm-info.json) is a "
        f"commit of ROCm/llvm-project, not in {other}; fetch it: git -C {other} fetch "
        f"https://github.com/ROCm/llvm-project {t['rocm_old']}")
