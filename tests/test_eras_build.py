"""Real Triton's eras built for real on the toy world: the LLVM each era pins (either pin file),
built as real Triton needs it (targets, lld), the root setup.py layout, and the prebuilt-LLVM
"downloads" (a local file:// mirror, with the old delete-on-change rule of setup.py) kept once
per pin and shared by the workers."""

from __future__ import annotations

import functools
import platform
import subprocess
import sys
import tarfile
import threading
import time
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from testing.toyworld import make_world
from tritonbisect.builds.cache import ArtifactCache
from tritonbisect.builds.downloads import store_dir
from tritonbisect.builds.llvm_build import LLVMConfig, build_llvm
from tritonbisect.builds.recipes import StepContext, recipe_from_config
from tritonbisect.core.outcome import Kind
from tritonbisect.domains.triton.recipe import TritonConfig, build_triton_wheel

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    return make_world(tmp_path_factory.mktemp("eras"), llvm_commits=20, triton_commits=36, eras=True)


@pytest.fixture(scope="module")
def workdir(tmp_path_factory):
    return tmp_path_factory.mktemp("workdir")


def worktree(repo: Path, workdir: Path, sha: str, name: str) -> Path:
    path = workdir / "worktrees" / repo.name / name
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        subprocess.run(["git", "-C", str(repo), "worktree", "add", "-q", "--detach", str(path), sha],
                       check=True, capture_output=True)
    subprocess.run(["git", "-C", str(path), "checkout", "-q", "--detach", "--force", sha], check=True,
                   capture_output=True)
    return path


def step(tree: Path, workdir: Path, label: str, worker: int = 0) -> StepContext:
    log_dir = workdir / "steps" / f"{label}-{time.monotonic_ns()}"
    return StepContext(worktree=tree, log_dir=log_dir, worker=worker, workdir=workdir, timeout=120)


def test_each_era_builds_against_the_llvm_it_pins(world, workdir):
    """A commit with the pin in llvm-info.json and setup.py at the root: the pinned LLVM is
    built (with lld and the GPU targets, the defaults) and the wheel built from the root."""
    t = world.truth
    recipe = recipe_from_config("triton", {"test": {"command": t["triton_test"]}, "llvm_dir": str(world.llvm)})
    for sha in (t["good_triton"], t["era_prebuilt_rebuild"]):  # hash.txt era, info.json era
        tree = worktree(world.triton, workdir, sha, "w0")
        ctx = step(tree, workdir, sha[:8])
        res = recipe.prepare(sha, ctx)
        assert res.kind is Kind.PASS, (res, res.log and res.log.read_text()[-2000:])
        assert f"LLVM {t['triton_llvm_pins'][sha][:12]}" in res.reason
        assert recipe.test(sha, ctx).returncode == (0 if sha == t["good_triton"] else 1)
    # the root layout built into build/ (python/build_helpers.py), not python/build
    assert list((tree / "build").glob("temp.*")) and not (tree / "python" / "build").exists()


@pytest.mark.parametrize("llvm,words", [
    ({"targets": "X86"}, "LLVM lacks the targets NVPTX, AMDGPU"),
    ({"projects": "mlir"}, "find_package(LLD) failed"),
])
def test_an_llvm_real_triton_cannot_link_is_a_build_failure_that_says_why(world, workdir, llvm, words):
    t = world.truth
    recipe = recipe_from_config("triton", {"test": {"command": t["triton_test"]}, "llvm_dir": str(world.llvm),
                                           "llvm": llvm})
    sha = t["era_root_layout"]
    tree = worktree(world.triton, workdir, sha, "w1")
    res = recipe.prepare(sha, step(tree, workdir, "narrow-llvm", worker=1))
    assert res.kind is Kind.BUILD_FAILED and words in res.log.read_text(), res


def test_a_bisect_across_the_pin_switch_finds_the_bump_and_descends(world, workdir, capsys):
    """The range starts in the llvm-hash.txt era and ends after a build-number-only change in
    the llvm-info.json era: the culprit is the real bump, and the LLVM descent finds the
    LLVM regression (it once stopped at once: cmake/llvm-hash.txt is missing)."""
    from bisectors_world import run_json

    t = world.truth
    code, res, err = run_json(
        ["triton", "--triton-dir", str(world.triton), "--llvm-dir", str(world.llvm),
         "--good", t["good_triton"], "--bad", t["era_prebuilt_rebuild"], "--test", t["triton_test"],
         "--workdir", str(workdir / "cli")], capsys)
    assert code == 0, err[-3000:]
    phases = {p["name"]: p for p in res["phases"]}
    assert phases["triton"]["culprit"] == t["bump"]
    assert res["culprit"] == t["llvm_regression"]
    assert "is an LLVM bump" in err


# --- downloads ------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def mirror(world, workdir, tmp_path_factory):
    """The prebuilt LLVMs the toy setup.py downloads, as file:// archives (one per pin and
    build number), made from real toy LLVM builds."""
    t = world.truth
    root = tmp_path_factory.mktemp("mirror")
    cache = ArtifactCache(workdir / "mirror-cache")
    names = []
    for llvm, builds in ((t["old_llvm"], [None]), (t["new_llvm"], [1, 2])):
        tree = worktree(world.llvm, workdir, llvm, "llvm-w0")
        res = build_llvm(tree, llvm, cache=cache, config=LLVMConfig(), build_dir=workdir / "mirror-build",
                         log=workdir / "mirror.log", repo_id="toy-llvm")
        assert res.kind is Kind.PASS, res.log.read_text()[-2000:]
        for build in builds:
            name = f"llvm-{llvm[:8]}-toy-{platform.machine()}" + (f"-{build}" if build else "")
            with tarfile.open(root / f"{name}.tar.gz", "w:gz") as tar:
                for child in res.prefix.iterdir():
                    tar.add(child, arcname=child.name)
            names.append(name)
    return root, names


class _CountingHandler(SimpleHTTPRequestHandler):
    def do_GET(self):  # noqa: N802 - the http.server name
        self.server.hits.append(self.path)  # type: ignore[attr-defined]
        super().do_GET()

    def log_message(self, *args):
        pass


@pytest.fixture(scope="module")
def server(mirror):
    """The mirror served over HTTP on 127.0.0.1: its access log counts the downloads."""
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(_CountingHandler, directory=str(mirror[0])))
    httpd.hits = []
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield httpd
    httpd.shutdown()


def _wheel(world, workdir, sha, *, home, downloads, mirror_root, label, extra=None):
    tree = worktree(world.triton, workdir, sha, label)
    url = mirror_root if isinstance(mirror_root, str) else mirror_root.as_uri()
    env = {"PATH": "/usr/bin:/bin", "TRITON_TOY_LLVM_MIRROR": url, **(extra or {})}
    return build_triton_wheel(tree, sha, cache=ArtifactCache(workdir / f"cache-{label}"), config=TritonConfig(),
                              log=workdir / f"{label}-{time.monotonic_ns()}.log", repo_id="toy-triton",
                              triton_home=home, python=sys.executable, base_env=env, downloads=downloads,
                              ccache_base=workdir)


def test_old_setup_py_deletes_the_other_pins_llvm_from_a_shared_home(world, workdir, mirror):
    """What one TRITON_HOME for all workers did: the build on the other side of the bump
    deletes the LLVM the first one unpacked."""
    t = world.truth
    home = workdir / "one-home"
    a = _wheel(world, workdir, t["good_triton"], home=home, downloads=None, mirror_root=mirror[0], label="sa")
    assert a.kind is Kind.PASS, a.log.read_text()[-2000:]
    old_llvm = home / ".triton" / "llvm" / f"llvm-{t['old_llvm'][:8]}-toy-{platform.machine()}"
    assert old_llvm.is_dir()
    b = _wheel(world, workdir, t["bad_triton_llvm"], home=home, downloads=None, mirror_root=mirror[0], label="sb")
    assert b.kind is Kind.PASS, b.log.read_text()[-2000:]
    assert not old_llvm.exists()  # gone from under any build still using it


def test_downloads_are_shared_per_pin_and_never_deleted(world, workdir, server):
    t = world.truth
    url = f"http://127.0.0.1:{server.server_address[1]}"
    store = store_dir(workdir / "shared")
    homes = [workdir / "shared" / "triton-home" / f"w{i}" for i in range(3)]
    old, new = t["good_triton"], t["bad_triton_llvm"]  # hash.txt era / llvm-info.json build 2
    a = _wheel(world, workdir, old, home=homes[0], downloads=store, mirror_root=url, label="da")
    assert a.kind is Kind.PASS and "downloaded llvm/llvm-" in a.reason, a.reason
    b = _wheel(world, workdir, new, home=homes[1], downloads=store, mirror_root=url, label="db")
    assert b.kind is Kind.PASS and f"llvm-{t['new_llvm'][:8]}-toy-{platform.machine()}-2" in b.reason, b.reason
    assert len(server.hits) == 2
    # worker 1's setup.py emptied its own .triton/llvm: only links went; the store keeps both
    stored = sorted(p.name for p in (store / "llvm").iterdir())
    assert len(stored) == 2 and any(n.endswith("-2") for n in stored)
    # other workers at either pin, in turn: nothing downloaded, the store serves them
    for i, sha in enumerate((old, new, old)):
        c = _wheel(world, workdir, sha, home=homes[(i + 2) % 3], downloads=store, mirror_root=url, label=f"dc{i}")
        assert c.kind is Kind.PASS and "downloaded" not in c.reason, c.reason
    assert len(server.hits) == 2
    # offline: the stored prebuilt of the pin is used; a pin never stored is INFRA with the fix
    d = _wheel(world, workdir, new, home=homes[2], downloads=store, mirror_root=url, label="dd",
               extra={"TRITON_OFFLINE_BUILD": "1"})
    assert d.kind is Kind.PASS, d.log.read_text()[-2000:]
    e = _wheel(world, workdir, t["bump"], home=homes[2], downloads=store, mirror_root=url, label="de",
               extra={"TRITON_OFFLINE_BUILD": "1"})  # build 1 of new_llvm: never downloaded
    assert e.kind is Kind.INFRA and "no prebuilt for LLVM" in e.reason and "build 1" in e.reason, e.reason
    assert len(server.hits) == 2


# --- PyTorch submodules ---------------------------------------------------------------------


def test_pytorch_submodules_follow_each_step_from_a_local_mirror(tmp_path):
    """A worker's PyTorch worktree moves across a submodule update: the submodule follows
    (the toy setup.py refuses a stale third_party), fetched over "the network" once."""
    world = make_world(tmp_path / "w", with_torch=True, torch_submodule=True, llvm_commits=20, triton_commits=20)
    t = world.truth
    sub = t["torch_submodule"]
    order = t["torch_order"]
    before, after = order[0], sub["bump"]
    recipe = recipe_from_config("torch", {"test": {"command": t["torch_test"]}})  # no triton_dir: torch only
    workdir = tmp_path / "wd"
    tree = worktree(world.torch, workdir, before, "w0")
    assert not (tree / sub["path"] / "VERSION").exists()  # a worktree has no submodules
    first = recipe.prepare(before, step(tree, workdir, "t0"))
    assert first.kind is Kind.PASS and "fetched" in first.reason, first
    assert (tree / sub["path"] / "VERSION").read_text().strip() == "1"
    tree = worktree(world.torch, workdir, after, "w0")
    second = recipe.prepare(after, step(tree, workdir, "t1"))
    assert second.kind is Kind.PASS and "1 moved" in second.reason and "fetched" not in second.reason, second
    assert (tree / sub["path"] / "VERSION").read_text().strip() == "2"
    # another worker: from the mirror, no fetch; the user's repository config is untouched
    other = worktree(world.torch, workdir, after, "w1")
    third = recipe.prepare(after, step(other, workdir, "t2", worker=1))
    assert third.kind is Kind.PASS and "fetched" not in third.reason, third
    config = subprocess.run(["git", "-C", str(world.torch), "config", "--list", "--local"],
                            capture_output=True, text=True).stdout
    assert "submodule." not in config
    # the toy build really needs it: a stale submodule is refused
    subprocess.run(["git", "-C", str(other / sub["path"]), "checkout", "-q", "--detach", sub["commits"][0]],
                   check=True)
    proc = subprocess.run([sys.executable, "setup.py", "--version"], cwd=other, capture_output=True, text=True)
    assert proc.returncode != 0 and "this commit needs 2" in proc.stderr + proc.stdout


def test_ccache_hits_carry_across_worktrees(world, workdir, tmp_path):
    """CCACHE_BASEDIR=<workdir>: the same commit compiled in a second worktree is a *direct*
    ccache hit (no preprocessing; the include paths differ only in the worktree's name).
    Without it ccache still hits after running the preprocessor on every file: for Triton's
    MLIR-heavy C++ that is most of the cost of a hit."""
    t = world.truth
    sha = t["good_triton"]
    ccache_dir = tmp_path / "ccache"
    env = {"PATH": "/usr/bin:/bin", "CCACHE_DIR": str(ccache_dir)}
    llvm_tree = worktree(world.llvm, workdir, t["old_llvm"], "llvm-w0")
    llvm = build_llvm(llvm_tree, t["old_llvm"], cache=ArtifactCache(workdir / "mirror-cache"), config=LLVMConfig(),
                      build_dir=workdir / "mirror-build", log=tmp_path / "llvm.log", repo_id="toy-llvm")
    env["LLVM_SYSPATH"] = str(llvm.prefix)

    def hits() -> int:
        out = subprocess.run(["ccache", "--print-stats"], env=env, capture_output=True, text=True).stdout
        stats = dict(line.split("\t", 1) for line in out.splitlines() if "\t" in line)
        return int(stats.get("direct_cache_hit", 0))

    counts = []
    for name in ("cc0", "cc1"):
        tree = worktree(world.triton, workdir, sha, name)
        res = build_triton_wheel(tree, sha, cache=ArtifactCache(tmp_path / f"cache-{name}"), config=TritonConfig(),
                                 log=tmp_path / f"{name}.log", repo_id="toy-triton", triton_home=tmp_path / "home",
                                 python=sys.executable, base_env=env, ccache_base=workdir)
        assert res.kind is Kind.PASS, res.log.read_text()[-2000:]
        counts.append(hits())
    assert counts[0] == 0 and counts[1] >= 5, counts
