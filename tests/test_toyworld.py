"""The toy Triton world: generation facts (fast) and real builds (slow).

The slow tests build for real: toy LLVM with cmake + ninja (one incremental build dir,
installed to a prefix per commit), toy Triton with `pip wheel --no-build-isolation --no-deps`
(the tool's own interpreter), installed into a plain `python -m venv`, and run its test.
Builds are shared through a module-scoped `Lab` that caches every result.
"""

from __future__ import annotations

import json
import os
import platform
import shutil
import subprocess
import sys
import sysconfig
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from testing.toyworld import BREAKS, LLVM_CMAKE_ARGS, MAX_API_BREAKS, make_world
from testing.toyworld.gitstream import git_env
from testing.toyworld.triton_repo import BASE_VERSION

CONTRACT_KEYS = {
    "llvm_order",
    "llvm_api_breaks",
    "llvm_regression",
    "llvm_broken",
    "triton_order",
    "triton_regression",
    "triton_broken",
    "bump",
    "old_llvm",
    "new_llvm",
    "good_triton",
    "bad_triton_llvm",
    "triton_test",
}
TORCH_KEYS = {"torch_order", "torch_regression", "torch_good", "torch_bad"}
TRITON_SOURCES = (
    "python/src/ir.c",
    "python/src/llvm.c",
    "python/src/passes.c",
    "python/src/main.c",
)


def git(repo: Path, *args: str) -> str:
    return subprocess.run(
        ["git", *args], cwd=repo, env=git_env(), capture_output=True, text=True, check=True
    ).stdout


def show(repo: Path, sha: str, path: str) -> str | None:
    proc = subprocess.run(
        ["git", "show", f"{sha}:{path}"], cwd=repo, env=git_env(), capture_output=True, text=True
    )
    return proc.stdout if proc.returncode == 0 else None


def changed(repo: Path, sha: str) -> set[str]:
    return set(git(repo, "diff", "--name-only", f"{sha}~1", sha).split())


# --------------------------------------------------------------------------- generation


@pytest.fixture(scope="module")
def world3(tmp_path_factory):
    return make_world(tmp_path_factory.mktemp("w3"), api_breaks=3, with_torch=True)


def test_world_is_deterministic_and_fast(tmp_path):
    started = time.monotonic()
    a = make_world(tmp_path / "a", api_breaks=2, with_torch=True)
    elapsed = time.monotonic() - started
    b = make_world(tmp_path / "b", api_breaks=2, with_torch=True)
    assert a.truth == b.truth
    assert elapsed < 10, f"generation took {elapsed:.1f}s (expected well under 3s)"
    assert json.loads(json.dumps(a.truth)) == a.truth  # JSON-able
    # Repos are real, checked out at the last commit, with a clean work tree.
    for repo, order in (
        (a.llvm, "llvm_order"),
        (a.triton, "triton_order"),
        (a.torch, "torch_order"),
    ):
        assert git(repo, "rev-list", "--reverse", "HEAD").split() == a.truth[order]
        assert git(repo, "status", "--porcelain") == ""
    assert a.root == (tmp_path / "a").resolve()


def test_truth_has_contract_keys(world3):
    t = world3.truth
    assert set(t) >= CONTRACT_KEYS | TORCH_KEYS
    assert len(t["llvm_order"]) == 40 and len(t["triton_order"]) == 30
    assert t["triton_test"] == "python test/test_toy.py"
    for brk in t["llvm_api_breaks"]:
        assert {"commit", "old", "new", "header", "file", "last_compatible"} <= set(brk)


def test_llvm_history_shape(world3):
    t, repo = world3.truth, world3.llvm
    order = t["llvm_order"]
    pos = {sha: i for i, sha in enumerate(order)}
    old, new = pos[t["old_llvm"]], pos[t["new_llvm"]]
    breaks = [pos[b["commit"]] for b in t["llvm_api_breaks"]]
    regression, broken = pos[t["llvm_regression"]], pos[t["llvm_broken"][0]]
    assert 0 < old < regression < breaks[0] < breaks[1] < breaks[2] <= new < len(order) - 1
    assert old < broken < new and order[broken + 1] == t["llvm_broken_fix"]
    # Every special commit is its own: two commits or more from any other.
    specials = sorted([regression, broken, *breaks])
    assert all(b - a >= 3 for a, b in zip(specials, specials[1:], strict=False))
    for i, brk in zip(breaks, t["llvm_api_breaks"], strict=True):
        assert brk["last_compatible"] == order[i - 1]
        assert brk["header"] in changed(repo, brk["commit"])
    assert t["llvm_last_compatible"] == [b["last_compatible"] for b in t["llvm_api_breaks"]]
    # The regression changes constant folding only; the broken commit only LLVM's own source.
    assert changed(repo, t["llvm_regression"]) == {"llvm/lib/IR/ConstantFold.c"}
    assert "llvm/lib/Support/Hashing.c" in changed(repo, t["llvm_broken"][0])
    assert not any(p.endswith(".h") for p in changed(repo, t["llvm_broken"][0]))


def test_api_breaks_and_the_reference_fix(world3):
    t, triton, llvm = world3.truth, world3.triton, world3.llvm
    parent, bump = t["bump_parent"], t["bump"]
    assert git(triton, "rev-parse", f"{bump}~1").strip() == parent
    for brk in t["llvm_api_breaks"]:
        before = show(llvm, brk["last_compatible"], brk["header"])
        after = show(llvm, brk["commit"], brk["header"])
        assert f"{brk['old_symbol']}(" in before and f"{brk['new_symbol']}(" in after
        src_before = show(triton, parent, brk["file"])
        src_after = show(triton, bump, brk["file"])
        assert src_before.count(brk["old"]) == 1 and brk["new"] not in src_before
        assert src_after.count(brk["new"]) == 1 and brk["old"] not in src_after
    # The bump's C changes are exactly the replacements of the breaks.
    for path in TRITON_SOURCES:
        text = show(triton, parent, path)
        for brk in t["llvm_api_breaks"]:
            if brk["file"] == path:
                text = text.replace(brk["old"], brk["new"])
        assert text == show(triton, bump, path), path
    assert changed(triton, bump) >= {"cmake/llvm-hash.txt"}


def test_triton_history_shape(world3):
    t, repo = world3.truth, world3.triton
    order = t["triton_order"]
    pos = {sha: i for i, sha in enumerate(order)}
    good, bad = (pos[s] for s in t["triton_regression_range"])
    regression, broken = pos[t["triton_regression"]], pos[t["triton_broken"][0]]
    fix, bump = pos[t["triton_regression_fix"]], pos[t["bump"]]
    assert good < regression < broken < bad < fix <= pos[t["good_triton"]] < bump
    assert order[broken + 1] == t["triton_broken_fix"]
    assert bump < pos[t["bad_triton_llvm"]]
    assert t["llvm_bump_range"] == [t["good_triton"], t["bad_triton_llvm"]]
    for sha in order:
        pin = show(repo, sha, "cmake/llvm-hash.txt").strip()
        assert pin == t["triton_llvm_pins"][sha]
        assert pin == (t["new_llvm"] if pos[sha] >= bump else t["old_llvm"])
    assert changed(repo, t["triton_broken"][0]) == {"python/src/passes.c"}


def test_torch_history_shape(world3):
    t, repo = world3.truth, world3.torch
    order = t["torch_order"]
    pos = {sha: i for i, sha in enumerate(order)}
    assert pos[t["torch_good"]] < pos[t["torch_regression"]] <= pos[t["torch_bad"]]
    pins = set()
    for sha in order:
        pin = show(repo, sha, ".ci/docker/ci_commit_pins/triton.txt").strip()
        assert pin == t["torch_triton_pins"][sha]
        pins.add(pin)
    assert len(pins) == 3 and pins <= set(t["triton_order"])
    # Every pinned Triton passes its own test: none is inside the Triton regression window.
    tpos = {sha: i for i, sha in enumerate(t["triton_order"])}
    for pin in pins:
        assert not (tpos[t["triton_regression"]] <= tpos[pin] < tpos[t["triton_regression_fix"]])
        assert tpos[pin] < tpos[t["bump"]]
    assert show(repo, order[-1], "toytorch/__init__.py") is not None
    assert show(repo, order[-1], "torch/__init__.py") is None


@pytest.mark.parametrize("n", [0, MAX_API_BREAKS])
def test_api_break_counts(tmp_path, n):
    w = make_world(tmp_path, api_breaks=n)
    assert len(w.truth["llvm_api_breaks"]) == n
    assert {b["commit"] for b in w.truth["llvm_api_breaks"]} <= set(w.truth["llvm_order"])


def test_regression_after_breaks(tmp_path):
    t = make_world(tmp_path, api_breaks=2, regression_after_breaks=1).truth
    order = t["llvm_order"]
    first, second = (order.index(b["commit"]) for b in t["llvm_api_breaks"])
    assert first < order.index(t["llvm_regression"]) < second


def test_bad_parameters(tmp_path):
    with pytest.raises(ValueError, match="api_breaks"):
        make_world(tmp_path / "a", api_breaks=MAX_API_BREAKS + 1)
    with pytest.raises(ValueError, match="too few commits"):
        make_world(tmp_path / "b", api_breaks=3, llvm_commits=15)
    with pytest.raises(ValueError, match="too few commits"):
        make_world(tmp_path / "c", triton_commits=8)
    make_world(tmp_path / "d")
    with pytest.raises(FileExistsError):
        make_world(tmp_path / "d")


def test_extra_sources(tmp_path):
    w = make_world(tmp_path, extra_sources=12)
    for sha in (w.truth["old_llvm"], w.truth["new_llvm"]):
        names = git(w.llvm, "ls-tree", "--name-only", f"{sha}:llvm/lib/Generated").split()
        assert names == [f"Gen{i:04d}.c" for i in range(12)]
    if shutil.which("gcc"):
        include = w.llvm / "llvm" / "include"
        sources = sorted((w.llvm / "llvm" / "lib" / "Generated").glob("*.c"))
        proc = subprocess.run(
            ["gcc", "-fsyntax-only", "-Wall", "-Werror", f"-I{include}", *map(str, sources)],
            capture_output=True,
            text=True,
        )
        assert proc.returncode == 0, proc.stderr


def test_cli(tmp_path):
    proc = subprocess.run(
        [sys.executable, "-m", "testing.toyworld", str(tmp_path / "w"), "--api-breaks", "2"],
        capture_output=True,
        text=True,
        check=True,
    )
    truth = json.loads(proc.stdout)
    assert len(truth["llvm_api_breaks"]) == 2
    assert truth == make_world(tmp_path / "again", api_breaks=2).truth
    bad = subprocess.run(
        [sys.executable, "-m", "testing.toyworld", str(tmp_path / "x"), "--api-breaks", "9"],
        capture_output=True,
        text=True,
    )
    assert bad.returncode == 2 and "api_breaks" in bad.stderr


# --------------------------------------------------------------------------- real builds


def _missing_tools() -> str | None:
    for tool in ("cmake", "ninja", "gcc", "git"):
        if shutil.which(tool) is None:
            return f"{tool} not found"
    try:
        import setuptools  # noqa: F401
    except ImportError:
        return "setuptools is not installed in the tool's environment"
    return None


@dataclass
class Result:
    ok: bool
    log: str
    path: Path | None = None


class Lab:
    """One world and cached builds of it: LLVM per commit, Triton wheels per (commit, LLVM)."""

    LLVM_ARGS = LLVM_CMAKE_ARGS  # -DLLVM_ENABLE_PROJECTS=mlir;lld host;NVPTX;AMDGPU Release

    def __init__(self, tmp: Path) -> None:
        self.tmp = tmp
        self.world = make_world(tmp / "world", api_breaks=2, with_torch=True)
        self.t = self.world.truth
        self.llvm_build = tmp / "llvm-build"  # one build dir, reused: incremental builds
        self._llvm: dict[str, Result] = {}
        self._wheels: dict[tuple, Result] = {}
        self._venv: Path | None = None
        self._installed: tuple | None = None
        self._n = 0

    def env(self, **extra: str) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("LLVM_", "TRITON_"))}
        env.pop("DEBUG", None)
        env.pop("MAX_JOBS", None)
        env.update(extra)
        return env

    def run(self, cmd: list[str], cwd: Path, env: dict[str, str] | None = None) -> Result:
        proc = subprocess.run(
            cmd, cwd=cwd, env=env or self.env(), capture_output=True, text=True, timeout=300
        )
        return Result(proc.returncode == 0, proc.stdout + proc.stderr)

    # -- LLVM
    def llvm(self, sha: str) -> Result:
        """Build and install LLVM at `sha` with the contract's flags; cached per commit."""
        if sha not in self._llvm:
            repo = self.world.llvm
            git(repo, "checkout", "-q", "--detach", sha)
            prefix = self.tmp / f"llvm-{sha[:10]}"
            configure = self.run(
                [
                    "cmake", "-G", "Ninja", "-S", str(repo / "llvm"), "-B", str(self.llvm_build),
                    f"-DCMAKE_INSTALL_PREFIX={prefix}", *self.LLVM_ARGS,
                ],
                cwd=self.tmp,
            )  # fmt: skip
            if not configure.ok:
                self._llvm[sha] = configure
            else:
                build = self.run(["ninja", "-C", str(self.llvm_build), "install"], cwd=self.tmp)
                self._llvm[sha] = Result(build.ok, configure.log + build.log, prefix)
        return self._llvm[sha]

    def llvm_tool(self, sha: str, *args: str) -> str:
        res = self.llvm(sha)
        assert res.ok, res.log[-3000:]
        return self.run([str(res.path / "bin" / "llvm-toy"), *args], cwd=self.tmp).log.strip()

    # -- Triton
    def worktree(self, repo: Path, sha: str, fixes: tuple[int, ...] = ()) -> Path:
        self._n += 1
        path = self.tmp / f"wt{self._n}-{sha[:8]}"
        git(repo, "worktree", "add", "-q", "--detach", str(path), sha)
        for k in fixes:
            brk = self.t["llvm_api_breaks"][k]
            src = path / brk["file"]
            src.write_text(src.read_text().replace(brk["old"], brk["new"]))
            git(path, "commit", "-q", "-am", f"compat fix for {brk['key']}")
        return path

    def wheel(self, sha: str, llvm_sha: str | None, *, fixes=(), **env: str) -> Result:
        """pip wheel of triton at `sha` (plus fixes) against LLVM at llvm_sha; cached."""
        key = (sha, llvm_sha, fixes, tuple(sorted(env.items())))
        if key not in self._wheels:
            extra = dict(env)
            if llvm_sha is not None:
                prefix = self.llvm(llvm_sha)
                assert prefix.ok, prefix.log[-3000:]
                extra["LLVM_SYSPATH"] = str(prefix.path)
            src = self.worktree(self.world.triton, sha, fixes)
            out = self.tmp / f"wheels{self._n}"
            res = self.run(
                [
                    sys.executable, "-m", "pip", "wheel", "-v", "--no-build-isolation",
                    "--no-deps", "--no-index", "--disable-pip-version-check", "-w", str(out),
                    str(src / "python"),
                ],
                cwd=src,
                env=self.env(**extra),
            )  # fmt: skip
            wheels = sorted(out.glob("triton-*.whl")) if out.exists() else []
            self._wheels[key] = Result(res.ok and len(wheels) == 1, res.log, src)
            self._wheels[key].wheel = wheels[0] if wheels else None  # type: ignore[attr-defined]
        return self._wheels[key]

    def any_wheel(self, sha: str, llvm_sha: str) -> Result:
        """A working wheel of `sha` against `llvm_sha`, whatever knobs it was built with."""
        for (wsha, wllvm, fixes, _), res in self._wheels.items():
            if (wsha, wllvm, fixes) == (sha, llvm_sha, ()) and res.ok:
                return res
        prefix = self.llvm(llvm_sha).path
        for (wsha, wllvm, fixes, env), res in self._wheels.items():
            if (wsha, wllvm, fixes) == (sha, None, ()) and res.ok and str(prefix) in str(env):
                return res
        return self.wheel(sha, llvm_sha)

    def compiles(self, sha: str, llvm_sha: str, fixes: tuple[int, ...] = ()) -> Result:
        """A quick probe: do Triton's C sources compile against LLVM at llvm_sha (with the
        flags of python/setup.py)? Cheaper than a wheel when only the verdict matters."""
        prefix = self.llvm(llvm_sha)
        assert prefix.ok, prefix.log[-3000:]
        src = self.worktree(self.world.triton, sha, fixes)
        flags = [
            "-Werror=implicit-function-declaration", "-Werror=incompatible-pointer-types",
            "-Werror=int-conversion", "-Werror=return-type",
        ]  # fmt: skip
        setup_py = (src / "python" / "setup.py").read_text()
        assert all(f'"{flag}"' in setup_py for flag in flags)
        sources = sorted(str(p) for p in (src / "python" / "src").glob("*.c"))
        cmd = [
            "gcc", "-fsyntax-only", *flags, f"-I{src / 'python' / 'src'}",
            f"-I{prefix.path / 'include'}", f"-I{sysconfig.get_paths()['include']}", *sources,
        ]  # fmt: skip
        res = self.run(cmd, cwd=src)
        return Result(res.ok, res.log, src)

    def venv(self) -> Path:
        if self._venv is None:
            path = self.tmp / "venv"
            # A plain venv (no system site-packages); pip-less to save time: the tool's pip
            # installs into it with --python.
            subprocess.run(
                [sys.executable, "-m", "venv", "--without-pip", str(path)], check=True, timeout=300
            )
            self._venv = path / "bin" / "python"
        return self._venv

    def install(self, wheel: Path) -> None:
        py = self.venv()
        res = self.run(
            [sys.executable, "-m", "pip", "--python", str(py), "install", "-q", "--no-index",
             "--no-deps", "--disable-pip-version-check", "--force-reinstall", str(wheel)],
            cwd=self.tmp,
        )  # fmt: skip
        assert res.ok, res.log

    def triton_test(self, sha: str, llvm_sha: str, *, fixes=(), **env: str) -> Result:
        """Build, install and run the toy test (`python test/test_toy.py` in the worktree)."""
        built = self.wheel(sha, llvm_sha, fixes=fixes, **env)
        assert built.ok, built.log[-3000:]
        self.install(built.wheel)  # type: ignore[attr-defined]
        venv_bin = str(self.venv().parent)
        test_env = self.env(PATH=venv_bin + os.pathsep + os.environ.get("PATH", ""))
        return self.run(["python", "test/test_toy.py"], cwd=built.path, env=test_env)

    def venv_python(self, code: str) -> str:
        return self.run([str(self.venv()), "-c", code], cwd=self.tmp).log.strip()


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    missing = _missing_tools()
    if missing:
        pytest.skip(missing)
    return Lab(tmp_path_factory.mktemp("toylab"))


slow = pytest.mark.slow


@slow
def test_llvm_builds_and_installs(lab):
    t = lab.t
    res = lab.llvm(t["old_llvm"])
    assert res.ok, res.log[-3000:]
    p = res.path
    for rel in (
        "lib/libToyLLVM.a",
        "include/llvm/IR/ConstantFold.h",
        "include/llvm/Config/llvm-config.h",
        "include/mlir/IR/Builders.h",
        "include/mlir/Pass/PassManager.h",
        "bin/llvm-toy",
    ):
        assert (p / rel).is_file(), rel
    # "host" is the machine's own target; real Triton links the NVPTX and AMDGPU code generators
    host = "AArch64" if platform.machine() in ("aarch64", "arm64") else "X86"
    assert lab.llvm_tool(t["old_llvm"], "--targets").split() == [host, "NVPTX", "AMDGPU"]
    assert (p / "include" / "lld" / "Common" / "Driver.h").is_file()
    assert lab.llvm_tool(t["old_llvm"], "--version").endswith("(Release, assertions off)")
    assert lab.llvm_tool(t["old_llvm"], "fold", "add", "20", "22") == "42"


@slow
def test_llvm_regression_commit(lab):
    t = lab.t
    regression = t["llvm_regression"]
    before = t["llvm_order"][t["llvm_order"].index(regression) - 1]
    assert lab.llvm_tool(before, "fold", "add", "20", "22") == "42"
    assert lab.llvm_tool(regression, "fold", "add", "20", "22") == "43"
    assert lab.llvm_tool(t["new_llvm"], "fold", "add", "20", "22") == "43"


@slow
def test_llvm_broken_commit_fails_its_own_build(lab):
    t = lab.t
    res = lab.llvm(t["llvm_broken"][0])
    assert not res.ok
    assert "Hashing.c" in res.log and "error" in res.log
    assert lab.llvm(t["llvm_broken_fix"]).ok


@slow
def test_llvm_knobs(lab):
    """Assertions, all targets, a Debug build and no mlir: a separate build dir."""
    build, prefix = lab.tmp / "llvm-knobs", lab.tmp / "llvm-knobs-prefix"
    git(lab.world.llvm, "checkout", "-q", "--detach", lab.t["old_llvm"])
    res = lab.run(
        ["cmake", "-G", "Ninja", "-S", str(lab.world.llvm / "llvm"), "-B", str(build),
         f"-DCMAKE_INSTALL_PREFIX={prefix}", "-DLLVM_ENABLE_PROJECTS=llvm",
         "-DLLVM_TARGETS_TO_BUILD=all", "-DCMAKE_BUILD_TYPE=Debug",
         "-DLLVM_ENABLE_ASSERTIONS=ON"],
        cwd=lab.tmp,
    )  # fmt: skip
    assert res.ok, res.log
    res = lab.run(["ninja", "-C", str(build), "install"], cwd=lab.tmp)
    assert res.ok, res.log[-3000:]
    tool = str(prefix / "bin" / "llvm-toy")
    assert lab.run([tool, "--version"], cwd=lab.tmp).log.strip().endswith("(Debug, assertions on)")
    assert lab.run([tool, "--targets"], cwd=lab.tmp).log.split() == [
        "X86", "AArch64", "NVPTX", "AMDGPU"
    ]  # fmt: skip
    assert not (prefix / "include" / "mlir").exists()
    # Triton needs MLIR: a clear message, not a compiler error.
    src = lab.worktree(lab.world.triton, lab.t["good_triton"])
    res = lab.run(
        [sys.executable, "-m", "pip", "wheel", "--no-build-isolation", "--no-deps",
         "--no-index", "-w", str(lab.tmp / "nomlir"), str(src / "python")],
        cwd=src,
        env=lab.env(LLVM_SYSPATH=str(prefix)),
    )  # fmt: skip
    assert not res.ok and "mlir/IR/Builders.h" in res.log
    # Unknown targets and a missing build type are refused at configure time.
    for args, message in (
        (["-DCMAKE_BUILD_TYPE=Release", "-DLLVM_TARGETS_TO_BUILD=Z80"], "does not exist"),
        ([], "No build type selected"),
    ):
        bad = lab.run(
            ["cmake", "-G", "Ninja", "-S", str(lab.world.llvm / "llvm"), "-B",
             str(lab.tmp / f"llvm-bad{len(args)}"), *args],
            cwd=lab.tmp,
        )  # fmt: skip
        assert not bad.ok and message in bad.log


@slow
def test_triton_good_passes_with_version(lab):
    t = lab.t
    good = t["triton_regression_range"][0]
    res = lab.triton_test(good, t["old_llvm"])
    assert res.ok and "test_toy: PASS" in res.log, res.log
    version = lab.venv_python("import triton; print(triton.__version__)")
    assert version == f"{BASE_VERSION}+git{good[:8]}"
    assert (
        lab.venv_python("import importlib.metadata as m; print(m.version('triton'))")
        == f"{BASE_VERSION}+git{good[:8]}"
    )


@slow
def test_triton_regression_fails_and_is_fixed(lab):
    t = lab.t
    res = lab.triton_test(t["triton_regression"], t["old_llvm"])
    assert not res.ok and "test_toy: FAIL" in res.log and "index 32" in res.log, res.log
    res = lab.triton_test(t["triton_regression_range"][1], t["old_llvm"])
    assert not res.ok, res.log
    fixed = lab.triton_test(
        t["good_triton"], t["old_llvm"], DEBUG="1", MAX_JOBS="2",
        TRITON_BUILD_WITH_CCACHE="true", TRITON_HOME=str(lab.tmp / "triton-home"),
        CCACHE_DIR=str(lab.tmp / "ccache"),
    )  # fmt: skip
    assert fixed.ok and "test_toy: PASS" in fixed.log, fixed.log
    info = lab.venv_python("from triton._C import libtriton; print(libtriton.build_info())")
    assert "'debug': True" in info and "'assertions': True" in info
    assert (lab.tmp / "triton-home" / ".triton").is_dir()
    log = lab.wheel(
        t["good_triton"], t["old_llvm"], DEBUG="1", MAX_JOBS="2",
        TRITON_BUILD_WITH_CCACHE="true", TRITON_HOME=str(lab.tmp / "triton-home"),
        CCACHE_DIR=str(lab.tmp / "ccache"),
    ).log  # fmt: skip
    assert "debug=1" in log and "jobs=2" in log
    if shutil.which("ccache"):
        assert "compiler launcher: ccache" in log


@slow
def test_triton_broken_commit_does_not_build(lab):
    t = lab.t
    res = lab.wheel(t["triton_broken"][0], t["old_llvm"])
    assert not res.ok and "passes.c" in res.log and "error" in res.log
    assert lab.compiles(t["triton_broken_fix"], t["old_llvm"]).ok


@slow
def test_triton_without_llvm_says_what_to_set(lab):
    res = lab.wheel(lab.t["good_triton"], None)
    assert not res.ok and "LLVM_SYSPATH" in res.log and "LLVM_INCLUDE_DIRS" in res.log


@slow
def test_triton_llvm_include_dirs_and_library_dir(lab):
    prefix = lab.llvm(lab.t["old_llvm"]).path
    order = lab.t["triton_order"]
    before_regression = order[order.index(lab.t["triton_regression"]) - 1]
    res = lab.wheel(
        before_regression, None,
        LLVM_INCLUDE_DIRS=str(prefix / "include"), LLVM_LIBRARY_DIR=str(prefix / "lib"),
    )  # fmt: skip
    assert res.ok, res.log[-3000:]


@slow
def test_bump_adapts_and_llvm_regression_shows(lab):
    t = lab.t
    parent = lab.wheel(t["bump_parent"], t["new_llvm"])
    assert not parent.ok
    assert BREAKS[0].old_symbol in parent.log or BREAKS[1].old_symbol in parent.log
    res = lab.triton_test(t["bump"], t["new_llvm"])
    assert not res.ok and "add kernel" in res.log and "got -15, expected -16" in res.log, res.log
    res = lab.triton_test(t["bad_triton_llvm"], t["new_llvm"])
    assert not res.ok, res.log


@slow
def test_llvm_regression_through_triton(lab):
    """The bump's parent builds on both sides of the regression (it precedes the breaks)."""
    t = lab.t
    order = t["llvm_order"]
    regression = t["llvm_regression"]
    before = order[order.index(regression) - 1]
    assert lab.triton_test(t["bump_parent"], before).ok
    res = lab.triton_test(t["bump_parent"], regression)
    assert not res.ok and "test_toy: FAIL" in res.log


@slow
def test_each_break_is_fixed_by_its_replacement(lab):
    """What the compat builder does: per break, the replacement is the whole fix."""
    t = lab.t
    first, second = t["llvm_api_breaks"]
    parent = t["bump_parent"]
    assert lab.compiles(parent, first["last_compatible"]).ok
    res = lab.compiles(parent, first["commit"])
    assert not res.ok and first["old_symbol"] in res.log
    assert lab.compiles(parent, second["last_compatible"], fixes=(0,)).ok
    res = lab.compiles(parent, second["commit"], fixes=(0,))
    assert not res.ok and second["old_symbol"] in res.log
    assert lab.compiles(parent, second["commit"], fixes=(0, 1)).ok
    assert lab.compiles(t["bump"], second["commit"]).ok


@slow
def test_torch_pins_and_regression(lab):
    """Each toy PyTorch commit with the Triton it pins: pass before the regression, fail after.

    The bad endpoint is built as a wheel and installed; the other commits run from their
    worktree (PYTHONPATH) to save time: toytorch is pure Python.
    """
    t = lab.t
    order = t["torch_order"]
    regression = t["torch_regression"]
    before = order[order.index(regression) - 1]
    verdicts = {}
    for sha in (t["torch_bad"], t["torch_good"], before, regression):
        pin = t["torch_triton_pins"][sha]
        triton_wheel = lab.any_wheel(pin, t["triton_llvm_pins"][pin])
        assert triton_wheel.ok, triton_wheel.log[-3000:]
        lab.install(triton_wheel.wheel)  # type: ignore[attr-defined]
        src = lab.worktree(lab.world.torch, sha)
        venv_bin = str(lab.venv().parent)
        env = lab.env(PATH=venv_bin + os.pathsep + os.environ.get("PATH", ""))
        if sha == t["torch_bad"]:
            out = lab.tmp / f"torch-wheels{lab._n}"
            res = lab.run(
                [sys.executable, "-m", "pip", "wheel", "--no-build-isolation", "--no-deps",
                 "--no-index", "-w", str(out), str(src)],
                cwd=src,
            )  # fmt: skip
            assert res.ok, res.log[-3000:]
            (wheel,) = out.glob("toytorch-*.whl")
            assert f"+git{sha[:7]}" in wheel.name
            lab.install(wheel)
        else:
            env["PYTHONPATH"] = str(src)
        verdicts[sha] = lab.run(["python", "test/test_toytorch.py"], cwd=src, env=env)
    assert verdicts[t["torch_good"]].ok, verdicts[t["torch_good"]].log
    assert verdicts[before].ok, verdicts[before].log
    assert not verdicts[regression].ok and "sum" in verdicts[regression].log
    assert not verdicts[t["torch_bad"]].ok and "sum" in verdicts[t["torch_bad"]].log


@slow
def test_version_suffix_fallback_outside_git(lab):
    export = lab.tmp / "export"
    export.mkdir()
    archive = subprocess.run(
        ["git", "archive", lab.t["good_triton"], "python"],
        cwd=lab.world.triton, env=git_env(), capture_output=True, check=True,
    ).stdout  # fmt: skip
    subprocess.run(["tar", "-x", "-C", str(export)], input=archive, check=True)
    res = lab.run(
        [sys.executable, "setup.py", "--version"],
        cwd=export / "python",
        env=lab.env(
            TRITON_WHEEL_VERSION_SUFFIX="+gitfeedbeef", GIT_CEILING_DIRECTORIES=str(lab.tmp)
        ),
    )
    assert res.ok, res.log
    assert res.log.strip().splitlines()[-1] == f"{BASE_VERSION}+gitfeedbeef"
