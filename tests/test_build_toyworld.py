"""The build recipes for real on the toy world: LLVM with cmake+ninja, Triton and toytorch
wheels with pip, installed into a real venv, tested; cache hits, corruption, failure records
and infra classification."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

import pytest

from testing.toyworld import make_world
from tritonbisect.builds.cache import ArtifactCache
from tritonbisect.builds.llvm_build import LLVMConfig, build_llvm
from tritonbisect.builds.recipes import StepContext, recipe_from_config
from tritonbisect.core.outcome import Kind
from tritonbisect.domains.triton.recipe import TritonConfig, build_triton_wheel

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    return make_world(tmp_path_factory.mktemp("world"), with_torch=True)


@pytest.fixture(scope="module")
def workdir(tmp_path_factory):
    return tmp_path_factory.mktemp("workdir")


def worktree(repo: Path, workdir: Path, sha: str, name: str = "w0") -> Path:
    """A worker's worktree as the engine lays it out: <workdir>/worktrees/<repo>/<name>."""
    path = workdir / "worktrees" / repo.name / name
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        subprocess.run(["git", "-C", str(repo), "worktree", "add", "-q", "--detach", str(path), sha],
                       check=True, capture_output=True)
    subprocess.run(["git", "-C", str(path), "checkout", "-q", "--detach", "--force", sha], check=True,
                   capture_output=True)
    return path


def step(tree: Path, workdir: Path, label: str) -> StepContext:
    log_dir = workdir / "steps" / f"{label}-{time.monotonic_ns()}"
    return StepContext(worktree=tree, log_dir=log_dir, worker=0, workdir=workdir, timeout=120)


def shared_venv(workdir: Path) -> Path:
    """A venv made once for this module (creating one per test costs seconds)."""
    from tritonbisect.builds.env import TargetEnv

    return TargetEnv.ensure(workdir / "user-venv").root


def triton_recipe(world, **extra):
    return recipe_from_config("triton", {"test": {"command": world.truth["triton_test"]},
                                         "llvm_dir": str(world.llvm), **extra})


def wheel_entries(workdir: Path) -> list:
    return [e for e in ArtifactCache(workdir / "cache").entries() if e.recipe == "triton"]


def test_triton_built_installed_tested_then_cached(world, workdir):
    good = world.truth["good_triton"]
    recipe = triton_recipe(world)
    tree = worktree(world.triton, workdir, good)
    ctx = step(tree, workdir, "good")
    res = recipe.prepare(good, ctx)
    assert res.kind is Kind.PASS, res
    assert not res.cached and res.log == ctx.log_dir / "build.log" and res.log.is_file()
    assert (ctx.log_dir / "llvm-build.log").is_file()  # the pinned LLVM was built too
    assert f"3.6.0+git{good[:8]}" in res.reason
    env = recipe.target_env(ctx)
    assert env.installed_versions(["triton"])["triton"] == f"3.6.0+git{good[:8]}"
    run = recipe.test(good, ctx)
    assert run.returncode == 0, run.log.read_text()
    assert "PASS" in run.log.read_text()

    # the same commit again: a cache hit, nothing compiled, no build log, and llvm-project
    # is not even checked out (checkout_worktree would `git clean` this untracked file away)
    [llvm_tree] = (workdir / "worktrees").glob("llvm-*/for-*")
    (llvm_tree / "untracked-marker").write_text("x")
    ctx2 = step(tree, workdir, "good-again")
    res2 = recipe.prepare(good, ctx2)
    assert res2.kind is Kind.PASS and res2.cached and res2.log is None, res2
    assert "already installed" in res2.reason  # same worker, same wheel: pip did not run
    assert not (ctx2.log_dir / "install.log").exists()
    assert (llvm_tree / "untracked-marker").exists()
    assert not (ctx2.log_dir / "build.log").exists()
    assert not (ctx2.log_dir / "llvm-build.log").exists()
    assert recipe.test(good, ctx2).returncode == 0

    # a regressed commit builds and fails its test
    bad = world.truth["triton_regression"]
    tree = worktree(world.triton, workdir, bad)
    ctx3 = step(tree, workdir, "bad")
    res3 = recipe.prepare(bad, ctx3)
    assert res3.kind is Kind.PASS and not res3.cached, res3
    assert recipe.test(bad, ctx3).returncode != 0


def test_corrupt_wheel_is_detected_and_rebuilt(world, workdir, caplog):
    good = world.truth["good_triton"]
    recipe = triton_recipe(world)
    tree = worktree(world.triton, workdir, good)
    recipe.prepare(good, step(tree, workdir, "warm"))  # cached by the test above, or built now
    [entry] = [e for e in wheel_entries(workdir) if e.commit == good]
    data = bytearray(entry.path.read_bytes())
    data[len(data) // 2] ^= 0x01
    entry.path.write_bytes(bytes(data))
    ctx = step(tree, workdir, "corrupt")
    with caplog.at_level("WARNING", logger="tritonbisect.builds.cache"):
        res = recipe.prepare(good, ctx)
    assert "corrupt" in caplog.text
    assert res.kind is Kind.PASS and not res.cached, res
    assert (ctx.log_dir / "build.log").is_file()  # rebuilt
    assert recipe.test(good, ctx).returncode == 0
    [entry] = [e for e in wheel_entries(workdir) if e.commit == good]
    assert ArtifactCache(workdir / "cache").get(entry.key) == entry.path  # intact again


def test_failed_build_is_recorded_and_not_rebuilt(world, workdir):
    [broken] = world.truth["triton_broken"]
    recipe = triton_recipe(world)
    tree = worktree(world.triton, workdir, broken)
    ctx = step(tree, workdir, "broken")
    res = recipe.prepare(broken, ctx)
    assert res.kind is Kind.BUILD_FAILED and not res.cached, res
    assert "passes.c" in res.reason and "error" in res.reason
    ctx2 = step(tree, workdir, "broken-again")
    res2 = recipe.prepare(broken, ctx2)
    assert res2.kind is Kind.BUILD_FAILED and res2.cached, res2
    assert "failed to build before" in res2.reason
    assert not (ctx2.log_dir / "build.log").exists()
    assert res2.log is not None and "passes.c" in res2.log.read_text()  # the recorded log


def test_infra_failures_are_classified_and_not_recorded(world, workdir, tmp_path):
    cache = ArtifactCache(tmp_path / "cache")
    tree = worktree(world.llvm, workdir, world.truth["old_llvm"])
    res = build_llvm(tree, world.truth["old_llvm"], cache=cache, config=LLVMConfig(),
                     build_dir=tmp_path / "b", log=tmp_path / "llvm.log", repo_id="toy",
                     env={"PATH": str(tmp_path / "empty-bin")})
    assert res.kind is Kind.INFRA and "missing tool" in res.reason and "cmake" in res.reason
    assert cache.failures() == []

    src = tmp_path / "fake-triton" / "python"
    src.mkdir(parents=True)
    (src / "setup.py").write_text(
        "import sys\n"
        "print(\"OSError: [Errno 28] No space left on device: 'build/ir.o'\", flush=True)\n"
        "sys.exit(1)\n"
    )
    wb = build_triton_wheel(src.parent, "f" * 40, cache=cache, config=TritonConfig(),
                            log=tmp_path / "triton.log", repo_id="toy", triton_home=tmp_path / "home")
    assert wb.kind is Kind.INFRA and "No space left on device" in wb.reason, wb
    assert cache.failures() == []  # retried next time, not remembered as the commit's fault


def test_llvm_cached_by_commit_and_config(world, workdir, tmp_path):
    sha = world.truth["old_llvm"]
    tree = worktree(world.llvm, workdir, sha)
    cache = ArtifactCache(tmp_path / "cache")
    kw = dict(cache=cache, build_dir=tmp_path / "build", repo_id="toy-llvm")
    first = build_llvm(tree, sha, config=LLVMConfig(), log=tmp_path / "1.log", **kw)
    assert first.kind is Kind.PASS and not first.cached, first.log.read_text()[-2000:]
    assert (first.prefix / "lib" / "libToyLLVM.a").is_file()
    assert (first.prefix / "include" / "mlir" / "IR" / "Builders.h").is_file()
    again = build_llvm(tree, sha, config=LLVMConfig(), log=tmp_path / "2.log", **kw)
    assert again.cached and again.prefix == first.prefix and again.seconds == 0
    assert not (tmp_path / "2.log").exists()
    other = build_llvm(tree, sha, config=LLVMConfig(assertions=False), log=tmp_path / "3.log", **kw)
    assert other.kind is Kind.PASS and not other.cached and other.prefix != first.prefix
    assert "LLVM_ENABLE_ASSERTIONS=OFF" in (tmp_path / "3.log").read_text()
    # an LLVM commit that does not build: BUILD_FAILED, recorded
    [broken] = world.truth["llvm_broken"]
    tree = worktree(world.llvm, workdir, broken)
    bad = build_llvm(tree, broken, config=LLVMConfig(), log=tmp_path / "4.log", **kw)
    assert bad.kind is Kind.BUILD_FAILED and "error" in bad.reason, bad
    assert cache.failure(next(f.key for f in cache.failures())) is not None


def test_llvm_triton_recipe(world, workdir):
    """Bisecting llvm-project: LLVM built at the commit, the assigned Triton built against it."""
    t = world.truth
    recipe = recipe_from_config("llvm-triton", {
        "test": {"command": t["triton_test"]},
        "triton_dir": str(world.triton),
        "triton_commits": {t["old_llvm"]: t["bump_parent"]},
        "triton_commit": t["bump"],
        "venv": str(shared_venv(workdir)),  # the user's own venv (--venv)
    })
    for llvm_sha, triton_sha, passes in ((t["old_llvm"], t["bump_parent"], True),
                                         (t["new_llvm"], t["bump"], False)):
        tree = worktree(world.llvm, workdir, llvm_sha, name="w1")
        ctx = step(tree, workdir, f"llvm-{llvm_sha[:8]}")
        res = recipe.prepare(llvm_sha, ctx)
        assert res.kind is Kind.PASS, res
        assert f"+git{triton_sha[:8]}" in res.reason
        run = recipe.test(llvm_sha, ctx)
        assert (run.returncode == 0) is passes, run.log.read_text()
    again = recipe.prepare(t["new_llvm"], step(tree, workdir, "llvm-again"))
    assert again.kind is Kind.PASS and again.cached


def test_torch_recipe_installs_pinned_triton(world, workdir):
    t = world.truth
    recipe = recipe_from_config("torch", {
        "test": {"command": t["torch_test"]},
        "triton_dir": str(world.triton),
        "llvm_dir": str(world.llvm),
        "use": {"USE_CUDA": "0"},
        "venv": str(shared_venv(workdir)),
    })
    for sha, passes in ((t["torch_good"], True), (t["torch_bad"], False)):
        tree = worktree(world.torch, workdir, sha)
        ctx = step(tree, workdir, f"torch-{sha[:8]}")
        res = recipe.prepare(sha, ctx)
        assert res.kind is Kind.PASS, res
        pinned = t["torch_triton_pins"][sha]
        env = recipe.target_env(ctx)
        v = env.installed_versions(["triton", "toytorch"])
        assert v["triton"].endswith(f"+git{pinned[:8]}") and v["toytorch"], v
        run = recipe.test(sha, ctx)
        assert (run.returncode == 0) is passes, run.log.read_text()
    res = recipe.prepare(t["torch_bad"], step(tree, workdir, "torch-again"))
    assert res.kind is Kind.PASS and res.cached
