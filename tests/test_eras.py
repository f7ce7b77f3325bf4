"""Real Triton's eras on the miniatures, nothing built: the LLVM pin in either file, the
LLVM configuration real Triton needs, the build entry point, the wheel key, the job budget.

Facts of the real projects, read with the search tools from triton-lang/triton:
* cmake/llvm-info.json (2026): {"llvm_hash": <40 hex>, "build_number": 1,
  "sha256sum": {"almalinux-arm64", "almalinux-x64", "macos-arm64", "macos-x64",
  "ubuntu-arm64", "ubuntu-x64", "windows-x64": <sha256>}}; build_number is a JSON number.
* cmake/llvm-build-info.json: {"llvm_hash", "repository": "triton-lang/llvm-project",
  "build_number"}: the next LLVM being prepared, not the pin.
* scripts/build-llvm-project.sh: LLVM_TARGETS default "Native;NVPTX;AMDGPU", LLVM_PROJECTS
  default "mlir;llvm;lld;clang", -DLLVM_ENABLE_ASSERTIONS=ON, -DLLVM_ENABLE_LLD=ON,
  -DCMAKE_C_COMPILER=clang. Other versions and Triton's CI build mlir;lld for host;NVPTX;AMDGPU.
* python/build_helpers.py (root setup.py era): builds under TRITON_BUILD_DIR, default
  <repo>/build.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from bisectors_world import error_line
from testing.toyworld.world import make_world
from tritonbisect.builds.llvm_build import LLVMConfig, cmake_args, targets_for_backends
from tritonbisect.builds.venv_pool import project_dir
from tritonbisect.compat_builder.mapper import read_llvm_hash
from tritonbisect.core.errors import InputError
from tritonbisect.core.history import History
from tritonbisect.domains.triton.bisector import (
    bumps_between,
    llvm_bump,
    pin_change_at,
    pin_of,
    pinned_llvm,
)
from tritonbisect.domains.triton.llvm_pin import (
    BUMP,
    FORMAT,
    HASH_FILE,
    INFO_FILE,
    PREBUILT,
    LLVMPin,
    PinError,
    parse_pin,
    pin_change,
    read_pin,
    tree_reader,
    write_pin,
)
from tritonbisect.domains.triton.recipe import TritonConfig, build_env_key, default_max_jobs

REAL_INFO = {
    "llvm_hash": "4611156032e1ebac68b2b8f6107b1475a7c60800",
    "build_number": 1,
    "sha256sum": {p: "0" * 64 for p in ("almalinux-arm64", "almalinux-x64", "macos-arm64", "macos-x64",
                                          "ubuntu-arm64", "ubuntu-x64", "windows-x64")},
}
# scripts/build-llvm-project.sh and Triton's CI: what an LLVM for real Triton is built with
REAL_TARGETS = {"NVPTX", "AMDGPU"}  # plus the host (spelled Native or host)
REAL_PROJECTS = {"mlir", "lld"}


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    return make_world(tmp_path_factory.mktemp("eras"), llvm_commits=20, triton_commits=36, eras=True)


def show(repo: Path, sha: str, path: str) -> str | None:
    proc = subprocess.run(["git", "show", f"{sha}:{path}"], cwd=repo, capture_output=True, text=True)
    return proc.stdout if proc.returncode == 0 else None


# --- the pin file ------------------------------------------------------------------------


def test_both_pin_formats_read_as_one_pin():
    info = parse_pin(INFO_FILE, json.dumps(REAL_INFO))
    assert (info.hash, info.build_number, info.file) == (REAL_INFO["llvm_hash"], 1, INFO_FILE)
    assert info.prebuilt_name("ubuntu-x64") == "llvm-46111560-ubuntu-x64-1"
    assert info.digest("ubuntu-x64") == "0" * 64
    old = parse_pin(HASH_FILE, REAL_INFO["llvm_hash"] + "\n")
    assert (old.hash, old.build_number) == (info.hash, None)
    assert old.prebuilt_name("ubuntu-x64") == "llvm-46111560-ubuntu-x64"
    # the newer file wins when both are there; neither: None
    files = {HASH_FILE: "a" * 40 + "\n", INFO_FILE: json.dumps(REAL_INFO)}
    assert read_pin(files.get).file == INFO_FILE
    assert read_pin({HASH_FILE: "a" * 40}.get).hash == "a" * 40
    assert read_pin({"cmake/llvm-build-info.json": json.dumps(REAL_INFO)}.get) is None


def test_what_a_pin_change_is():
    a = LLVMPin("a" * 40, file=HASH_FILE)
    assert pin_change(a, LLVMPin("a" * 40, 1, file=INFO_FILE)) == FORMAT
    assert pin_change(LLVMPin("a" * 40, 1, file=INFO_FILE), LLVMPin("a" * 40, 2, file=INFO_FILE)) == PREBUILT
    assert pin_change(a, LLVMPin("b" * 40, 1, file=INFO_FILE)) == BUMP
    assert pin_change(a, LLVMPin("a" * 40)) is None


@pytest.mark.parametrize("path,text,words", [
    (INFO_FILE, "{not json", "not valid JSON"),
    (INFO_FILE, '{"build_number": 1}', '"llvm_hash"'),
    (INFO_FILE, '{"llvm_hash": "' + "a" * 40 + '", "build_number": "x"}', "build_number"),
    (HASH_FILE, "\n", "holds no LLVM commit"),
])
def test_a_bad_pin_file_is_one_line(path, text, words):
    with pytest.raises(PinError) as exc:
        parse_pin(path, text)
    assert words in str(exc.value) and "\n" not in str(exc.value)


def test_write_pin_keeps_the_era_format(tmp_path):
    (tmp_path / "cmake").mkdir()
    (tmp_path / INFO_FILE).write_text(json.dumps(REAL_INFO), encoding="utf-8")
    assert write_pin(tmp_path, "b" * 40) == INFO_FILE
    data = json.loads((tmp_path / INFO_FILE).read_text())
    # another commit's prebuilt digests would be false: dropped; the build number is kept
    assert data == {"llvm_hash": "b" * 40, "build_number": 1, "sha256sum": {}}
    assert not (tmp_path / HASH_FILE).exists()
    (tmp_path / INFO_FILE).unlink()
    (tmp_path / HASH_FILE).write_text("a" * 40 + "\n")
    assert write_pin(tmp_path, "c" * 40) == HASH_FILE
    assert (tmp_path / HASH_FILE).read_text() == "c" * 40 + "\n"
    assert write_pin(tmp_path / "nowhere", "c" * 40) is None


def test_the_toy_triton_goes_through_the_eras(world):
    t = world.truth
    order = t["triton_order"]
    pos = {sha: i for i, sha in enumerate(order)}
    assert pos[t["era_root_layout"]] < pos[t["era_info_json"]] < pos[t["era_next_build"]] \
        < pos[t["bump"]] < pos[t["era_prebuilt_rebuild"]]
    for sha in order:
        info = show(world.triton, sha, INFO_FILE)
        assert (info is not None) == (pos[sha] >= pos[t["era_info_json"]])
        assert (show(world.triton, sha, HASH_FILE) is None) == (info is not None)
        assert t["triton_pin_files"][sha] == (INFO_FILE if info else HASH_FILE)
    nxt = json.loads(show(world.triton, t["era_next_build"], "cmake/llvm-build-info.json"))
    assert nxt["repository"] == "triton-lang/llvm-project" and nxt["llvm_hash"] == t["new_llvm"]
    rebuilt = json.loads(show(world.triton, t["era_prebuilt_rebuild"], INFO_FILE))
    assert rebuilt["build_number"] == 2 and rebuilt["llvm_hash"] == t["new_llvm"]


def test_the_pin_is_read_the_same_across_the_switch(world):
    t = world.truth
    hist = History(world.triton)
    for sha, llvm in t["triton_llvm_pins"].items():
        assert pinned_llvm(hist, sha) == llvm  # llvm-build-info.json (new_llvm early) never read
        assert read_llvm_hash(hist, sha) == llvm  # compat-builder's reader
    assert pin_of(hist, t["bad_triton_llvm"]).build_number == 2
    # the range crosses the switch: its only bump is the real one
    assert bumps_between(hist, t["good_triton"], t["bad_triton_llvm"]) == [t["bump"]]
    assert bumps_between(hist, t["triton_order"][0], t["triton_order"][-1]) == [t["bump"]]
    bump = llvm_bump(hist, t["bump"])
    assert (bump.old, bump.new) == (t["old_llvm"], t["new_llvm"])
    assert llvm_bump(hist, t["era_info_json"]) is None
    assert pin_change_at(hist, t["era_info_json"]).kind == FORMAT
    change = pin_change_at(hist, t["era_prebuilt_rebuild"])
    assert change.kind == PREBUILT and llvm_bump(hist, t["era_prebuilt_rebuild"]) is None
    assert "not an LLVM bump" in change.describe()
    assert pin_change_at(hist, t["era_next_build"]) is None  # llvm-build-info.json is not the pin


def test_compat_builder_refuses_a_build_number_change_in_one_line(world, tmp_path, capsys):
    from tritonbisect.compat_builder.cli import main

    t = world.truth
    capsys.readouterr()
    code = main(["map", "--bump", t["era_prebuilt_rebuild"], "--triton-dir", str(world.triton),
                 "--llvm-dir", str(world.llvm), "--workdir", str(tmp_path / "wd"), "--ai", "none"])
    line = error_line(capsys.readouterr().err)
    assert code != 0 and "not an LLVM bump" in line and "build number" in line


def test_a_checkout_without_any_pin_is_one_line(world):
    with pytest.raises(InputError, match=r"cmake/llvm-info.json or cmake/llvm-hash.txt"):
        pinned_llvm(History(world.llvm), world.truth["old_llvm"])
    assert read_pin(tree_reader(world.llvm)) is None


# --- the LLVM real Triton links against ----------------------------------------------------


def test_default_llvm_config_is_what_real_triton_links():
    config = LLVMConfig()
    host = {"host", "Native", "X86", "AArch64"}
    assert set(config.targets) - host == REAL_TARGETS and set(config.targets) & host
    assert set(config.projects) == REAL_PROJECTS and config.assertions
    args = cmake_args(Path("/src"), Path("/b"), config, ccache=False)
    assert "-DLLVM_ENABLE_ASSERTIONS=ON" in args
    assert "-DLLVM_ENABLE_PROJECTS=mlir;lld" in args
    assert "-DLLVM_TARGETS_TO_BUILD=host;NVPTX;AMDGPU" in args
    # the targets are an option: by backend, or spelled out; they are part of the cache key
    assert targets_for_backends(["nvidia", "amd"]) == ("host", "NVPTX", "AMDGPU")
    assert LLVMConfig.from_dict({"backends": "nvidia"}).targets == ("host", "NVPTX")
    assert LLVMConfig.from_dict({"targets": "X86;NVPTX"}).key_config()["targets"] == ["X86", "NVPTX"]
    assert LLVMConfig(targets=("X86",)).key_config() != config.key_config()


# --- the build entry point by era ------------------------------------------------------------


def test_project_dir_follows_setup_py_not_a_stub_pyproject(world, tmp_path):
    t = world.truth
    order = t["triton_order"]
    for sha, want in ((order[0], "python"), (t["era_root_layout"], ""), (order[-1], "")):
        tree = tmp_path / sha[:8]
        subprocess.run(["git", "-C", str(world.triton), "worktree", "add", "-q", "--detach", str(tree), sha],
                       check=True, capture_output=True)
        if want == "":
            assert (tree / "python" / "pyproject.toml").is_file()  # the stub is there
        assert project_dir(tree) == (tree / want if want else tree)


# --- speed: the wheel key and the job budget -------------------------------------------------


@pytest.mark.parametrize("name", ["TRITON_PLUGIN_DIRS", "TRITON_WHEEL_NAME", "TRITON_EXT_ENABLED",
                                  "TRITON_STABLE_ABI", "JSON_SYSPATH", "TRITON_OFFLINE_BUILD",
                                  "TRITON_BUILD_WITH_CLANG_LLD", "TRITON_BUILD_UT"])
def test_settings_that_change_the_wheel_are_in_its_key(name):
    assert name in build_env_key({name: "x", "MAX_JOBS": "4", "HOME": "/h"})
    assert "MAX_JOBS" not in build_env_key({"MAX_JOBS": "4"})


def test_jobs_are_divided_among_workers_and_options_reach_the_build():
    assert default_max_jobs(4, cpus=16) == 4 and default_max_jobs(32, cpus=16) == 1
    env = TritonConfig(build_type="RelWithDebInfo", clang_lld=True).env(workers=4)
    assert env["REL_WITH_DEB_INFO"] == "1" and env["TRITON_BUILD_WITH_CLANG_LLD"] == "true"
    assert int(env["MAX_JOBS"]) >= 1
    assert TritonConfig(max_jobs=3).env(workers=8)["MAX_JOBS"] == "3"
    assert TritonConfig(clang_lld=True).key_config() != TritonConfig().key_config()
    with pytest.raises(ValueError, match="unknown Triton build type"):
        TritonConfig(build_type="Fast")
    # from the command line's options to the recipe's build environment
    from tritonbisect.domains.triton.recipe import TritonRecipe
    from tritonbisect.domains.triton.triton_options import build_from_options
    from tritonbisect.options.llvm_options import llvm_config_from_options

    config = build_from_options({"triton_build_type": "TritonRelBuildWithAsserts", "clang_lld": True}).recipe_config({"command": "true"})
    env = TritonRecipe(config).triton_config.env(workers=2)
    assert env["TRITON_REL_BUILD_WITH_ASSERTS"] == "1" and env["TRITON_BUILD_WITH_CLANG_LLD"] == "true"
    assert llvm_config_from_options({"backends": "nvidia"})["targets"] == ["host", "NVPTX"]
    assert llvm_config_from_options({})["targets"] == ["host", "NVPTX", "AMDGPU"] and llvm_config_from_options({})["assertions"]
    assert not llvm_config_from_options({"llvm_assertions": False})["assertions"]
    with pytest.raises(InputError, match="give one"):
        llvm_config_from_options({"backends": "amd", "llvm_targets": "X86"})


# --- build requirements and PyTorch's pins -----------------------------------------------


# triton-lang/triton's pyproject.toml at the root (root setup.py era), as read with the search
# tools; and the stub python/pyproject.toml beside it (no build system)
REAL_ROOT_PYPROJECT = """[build-system]
requires = ["setuptools>=40.8.0", "cmake>=3.20,<4.0", "ninja>=1.11.1", "nanobind==2.10.2"]
build-backend = "setuptools.build_meta"

[tool.ruff]
line-length = 120
"""
REAL_STUB_PYPROJECT = '[project]\nname = "triton"\nversion = "3.4.0"\n'


def test_build_requirement_versions_are_enforced(tmp_path):
    """Real Triton's build requirements carry pins: an installed version outside them is
    reinstalled, not kept."""
    from tritonbisect.builds.env import unmet_requirements
    from tritonbisect.builds.toolchain import build_requires

    (tmp_path / "pyproject.toml").write_text(REAL_ROOT_PYPROJECT)
    reqs = build_requires(tmp_path)
    assert reqs == ["setuptools>=40.8.0", "cmake>=3.20,<4.0", "ninja>=1.11.1", "nanobind==2.10.2"]
    have = ["80.9.0", "4.0.2", None, "2.4.0"]
    assert unmet_requirements(reqs, have) == ["cmake>=3.20,<4.0", "ninja>=1.11.1", "nanobind==2.10.2"]
    assert unmet_requirements(reqs, ["80.9.0", "3.31.6", "1.13.0", "2.10.2"]) == []
    assert unmet_requirements(["cmake>=3.20"], ["3.31.0rc1"]) == []  # a prerelease meets it


def test_project_dir_on_the_real_layouts(tmp_path):
    root = tmp_path / "new"
    (root / "python").mkdir(parents=True)
    (root / "setup.py").write_text("")
    (root / "pyproject.toml").write_text(REAL_ROOT_PYPROJECT)
    (root / "python" / "pyproject.toml").write_text(REAL_STUB_PYPROJECT)
    assert project_dir(root) == root
    old = tmp_path / "old"
    (old / "python").mkdir(parents=True)
    (old / "python" / "setup.py").write_text("")
    (old / "python" / "pyproject.toml").write_text('[build-system]\nrequires = ["setuptools>=40.8.0"]\n')
    (old / "pyproject.toml").write_text("[tool.yapf]\ncolumn_limit = 120\n")
    assert project_dir(old) == old / "python"


def test_pytorch_pin_file_follows_the_device(tmp_path):
    from tritonbisect.builds.wheel_version import _TRITON_PIN
    from tritonbisect.domains.torch.recipe import pin_files, read_triton_pin

    pins = tmp_path / ".ci" / "docker" / "ci_commit_pins"
    pins.mkdir(parents=True)
    (pins / "triton.txt").write_text("a" * 40 + "\n")
    (pins / "triton-xpu.txt").write_text("b" * 40 + "\n")
    assert read_triton_pin(tmp_path) == "a" * 40
    assert read_triton_pin(tmp_path, "xpu") == "b" * 40
    assert read_triton_pin(tmp_path, "rocm") == "a" * 40  # triton-rocm.txt gone: triton.txt
    (pins / "triton-rocm.txt").write_text("c" * 40 + "\n")
    assert read_triton_pin(tmp_path, "rocm") == "c" * 40
    with pytest.raises(ValueError, match="unknown device"):
        pin_files("tpu")
    for name in ("triton", "triton-rocm", "triton-xpu", "pytorch-triton", "pytorch-triton-rocm",
                 "pytorch-triton-xpu"):
        m = _TRITON_PIN.search(f"Requires-Dist: {name}==3.5.0+gitabc ; platform_system == 'Linux'\n")
        assert m and m.group(1).startswith(name + "=="), name


def test_a_compat_fix_pins_its_llvm_in_the_eras_own_file(world, tmp_path):
    """compat-builder's fix commit pins the LLVM it was fixed against, in llvm-info.json for
    a commit of that era. The AI and the build are stand-ins (no model, no GPU build here):
    the agent edits one file, the probe accepts the commit only if it pins that LLVM."""
    from tritonbisect.compat_builder import gitops
    from tritonbisect.compat_builder.agent import AgentResult
    from tritonbisect.compat_builder.fixer import Fixer
    from tritonbisect.compat_builder.probe import COMPATIBLE, INCOMPATIBLE, ProbeResult
    from tritonbisect.compat_builder.session_state import FIXING, MapState

    t = world.truth
    base, llvm = t["era_next_build"], t["llvm_api_breaks"][0]["commit"]
    wt = tmp_path / "wt"
    gitops.add_worktree(world.triton, wt, base, branch="compat/test-fix")

    class EditingAgent:
        def run(self, worktree, prompt, transcript=None):
            path = Path(worktree) / "python" / "src" / "llvm.c"
            path.write_text(path.read_text() + "/* adapted */\n")
            return AgentResult(summary="adapt", analysis="", usage={}, changed=["python/src/llvm.c"])

    class PinProbe:
        def probe(self, commit, llvm_commit, log_dir, clean=False):
            pin = pin_of(History(world.triton), commit)
            ok = pin.hash == llvm_commit and pin.file == INFO_FILE
            return ProbeResult(COMPATIBLE if ok else INCOMPATIBLE, "pin checked", "done", None, False, True, 0.0)

    state = MapState.create(tmp_path / "s", id="s", kind="fix", triton_repo=str(world.triton),
                            llvm_repo=str(world.llvm), worktree=str(wt), branch="compat/test-fix",
                            ai="anthropic", ai_model="", max_attempts=1, smoke="true",
                            current_triton=base, phase=FIXING, incompatible=llvm)
    fix = Fixer(state, prober=PinProbe(), agent=EditingAgent()).fix()
    files = set(History(world.triton).files_touched(fix))
    assert files == {"python/src/llvm.c", INFO_FILE}
    data = json.loads(show(world.triton, fix, INFO_FILE))
    assert data["llvm_hash"] == llvm and data["sha256sum"] == {} and data["build_number"] == 1
    assert show(world.triton, fix, HASH_FILE) is None


def test_a_hunt_passes_llvm_options_on_including_the_off_switch(tmp_path):
    """The bisect a hunt reproduces gets --no-llvm-assertions (an on/off flag given as off)
    and --backends, not the defaults."""
    from tritonbisect.commands.hunt import given_args, hunt_cmd

    ctx = hunt_cmd.make_context("hunt", ["--state", str(tmp_path / "s.json"), "--triton-dir", str(tmp_path),
                                         "--test", "true", "--no-llvm-assertions", "--backends", "nvidia"])
    args = dict(given_args(ctx))
    assert args["llvm_assertions"] == ["--no-llvm-assertions"]
    assert args["backends"] == ["--backends", "nvidia"]
