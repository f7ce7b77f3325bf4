"""The sandbox on a real toolchain: a Triton-style wheel build (pip, setuptools, gcc, ccache)
through TritonRecipe.build_wheel with --sandbox still hits ccache (the sandboxed builds' own,
never the user's) and the LLVM already in TRITON_HOME, and without that LLVM it cannot
download one (no network).

The project's setup.py follows Triton's rule for its third-party packages: the package is
taken from $TRITON_HOME/.triton/<package>/<name> when its version.txt holds the package's
URL; otherwise it is downloaded.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from engine_repo import GIT_ENV
from tritonbisect.builds.downloads import store_dir
from tritonbisect.builds.recipes import StepContext
from tritonbisect.builds.sandbox import detect
from tritonbisect.core.outcome import Kind
from tritonbisect.domains.triton.recipe import TritonRecipe

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(shutil.which("ccache") is None, reason="ccache is not installed"),
    pytest.mark.skipif(detect() is None, reason="no sandbox works on this machine"),
]

LLVM_URL = "https://example.invalid/llvm-toy-x64.tar.gz"

SETUP_PY = '''
import os, shutil, urllib.request
from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

URL = "{url}"


def llvm_dir():
    home = os.environ.get("TRITON_HOME") or os.path.expanduser("~")
    pkg = os.path.join(home, ".triton", "llvm", "llvm-toy-x64")
    version = os.path.join(pkg, "version.txt")
    if os.path.exists(version) and open(version).read() == URL:
        print("using the cached LLVM in " + pkg, flush=True)
        return pkg
    print("downloading and extracting " + URL + " ...", flush=True)
    urllib.request.urlopen(URL, timeout=10)
    raise SystemExit("unreachable in this test")


class Ext(build_ext):
    def build_extensions(self):
        for ext in self.extensions:
            ext.include_dirs = [os.path.join(llvm_dir(), "include")]
        if os.environ.get("TRITON_BUILD_WITH_CCACHE") == "true":
            self.compiler.set_executable("compiler_so", [shutil.which("ccache"), *self.compiler.compiler_so])
        super().build_extensions()


setup(name="toytriton", version="0.1", ext_modules=[Extension("toytriton._C", ["src/ext.c"])],
      cmdclass={{"build_ext": Ext}})
'''

EXT_C = """#include <Python.h>
#include "toyllvm.h"
static struct PyModuleDef mod = {PyModuleDef_HEAD_INIT, "_C", NULL, -1, NULL};
PyMODINIT_FUNC PyInit__C(void) { return PyModule_Create(&mod); }
int toy_answer(void) { return TOY_LLVM_ANSWER; }
"""


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, text=True,
                          env={**os.environ, **GIT_ENV}).stdout.strip()


def ccache_stats(ccache_dir: Path) -> dict[str, int]:
    out = subprocess.run(["ccache", "--print-stats"], capture_output=True, text=True, check=True,
                         env={**os.environ, "CCACHE_DIR": str(ccache_dir)}).stdout
    return {k: int(v) for k, v in (line.split("\t") for line in out.splitlines() if "\t" in line)}


@pytest.fixture(scope="module")
def venv(tmp_path_factory):
    from tritonbisect.builds.env import TargetEnv

    return TargetEnv.ensure(tmp_path_factory.mktemp("venv") / "v")


def test_sandboxed_build_hits_ccache_and_the_cached_llvm(tmp_path, venv, monkeypatch):
    repo = tmp_path / "proj"
    (repo / "src").mkdir(parents=True)
    (repo / "setup.py").write_text(SETUP_PY.format(url=LLVM_URL))
    (repo / "src" / "ext.c").write_text(EXT_C)
    git(repo, "init", "-q")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "one")
    first = git(repo, "rev-parse", "HEAD")
    (repo / "README").write_text("a change that is not C\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "two")
    second = git(repo, "rev-parse", "HEAD")

    workdir = tmp_path / "workdir"
    # a prebuilt an earlier build downloaded: kept in the shared store, linked into each
    # worker's TRITON_HOME, read-only in the sandbox
    llvm = store_dir(workdir) / "llvm" / "llvm-toy-x64"
    (llvm / "include").mkdir(parents=True)
    (llvm / "include" / "toyllvm.h").write_text("#define TOY_LLVM_ANSWER 42\n")
    (llvm / "version.txt").write_text(LLVM_URL)
    users_ccache = tmp_path / "home" / ".cache" / "ccache"  # the user's: never written by a sandboxed build
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("CCACHE_DIR", str(users_ccache))
    ccache_dir = workdir / "ccache-sandboxed"  # the sandboxed builds' own
    recipe = TritonRecipe({"test": {"command": "true"}})

    def build(commit: str, n: int):
        git(repo, "checkout", "-q", commit)
        git(repo, "clean", "-fdxq")  # a fresh tree: every object is compiled again (or comes from ccache)
        ctx = StepContext(worktree=repo, log_dir=tmp_path / f"logs-{n}", worker=0, workdir=workdir, sandbox=True)
        ctx.log_dir.mkdir()
        return recipe.build_wheel(repo, commit, ctx, venv, log=ctx.log_dir / "build.log")

    one = build(first, 1)
    log = one.log.read_text()
    assert one.kind is Kind.PASS, log
    # (pip shows a build's output only when it fails: the third build below shows that this
    # one could only pass by finding the LLVM in TRITON_HOME)
    assert "# sandbox: " in log
    after_one = ccache_stats(ccache_dir)
    assert after_one.get("cache_miss", 0) >= 1

    two = build(second, 2)  # another commit (another wheel), the same C source
    log = two.log.read_text()
    assert two.kind is Kind.PASS and not two.cached, log
    after_two = ccache_stats(ccache_dir)
    hits = after_two.get("direct_cache_hit", 0) + after_two.get("preprocessed_cache_hit", 0)
    assert hits >= 1, after_two
    assert after_two.get("cache_miss", 0) == after_one.get("cache_miss", 0)
    assert not users_ccache.exists()

    # without the cached LLVM the build would download it: there is no network to do so
    (llvm / "version.txt").unlink()
    (repo / "README").write_text("third\n")
    git(repo, "commit", "-qam", "three")
    three = build(git(repo, "rev-parse", "HEAD"), 3)
    log = three.log.read_text()
    assert three.kind is Kind.INFRA, (three.kind, three.reason)  # a failed download: the machine, not the commit
    assert "downloading and extracting" in log
    assert any(s in log for s in ("Temporary failure in name resolution", "Name or service not known",
                                  "Network is unreachable", "No address associated"))
