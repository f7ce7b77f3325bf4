"""Late-2026 Triton's several LLVMs, end to end on the toy world, through the CLI: the pin set
in status/report/--json, a core pin that moves into a fork with a local revert, and the AMD
backend's own LLVM (ROCm's) whose code generator is loaded at run time.

One world and one workdir for the module (later tests re-use what earlier ones built).
"""

from __future__ import annotations

import json
import shlex

import pytest

from bisectors_world import run_cli, run_json
from testing.toyworld.world import make_world

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    return make_world(tmp_path_factory.mktemp("llvms"), llvm_commits=22, triton_commits=44, eras=True,
                      fork=True, amd_backend=True)


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
