"""Caches a hostile sandboxed build could poison for later builds, with bubblewrap and with
unshare: ccache (an object compiled from other code, planted with CCACHE_PREFIX under the
key of honest code, then linked by a build with the user's rights), the artifact cache's
staging area (another build's artifact, stored as an honest commit's), Triton's download
store (an LLVM of its own, adopted and linked by the next build), and the artifact cache
itself (a sandboxed build's entry handed to a session without a sandbox)."""

from __future__ import annotations

import json
import shutil
import zipfile
from pathlib import Path

import pytest

from engine_repo import env_for, journal, last_json, linear, tb
from tritonbisect.builds import sandbox as sb
from tritonbisect.builds.build_process import SandboxedRunner, run_logged
from tritonbisect.builds.cache import ArtifactCache
from tritonbisect.builds.downloads import store_dir
from tritonbisect.core.outcome import Kind
from tritonbisect.domains.triton.recipe import TritonConfig, build_triton_wheel

PROG = '#include <stdio.h>\nint main(void) { puts("honest"); return 0; }\n'


@pytest.fixture(params=[sb.BWRAP, sb.UNSHARE])
def backend(request) -> str:
    if sb.detect(request.param) is None:
        pytest.skip(f"{request.param} does not work on this machine")
    return request.param


def _prefix_script() -> str:
    # what CCACHE_PREFIX runs instead of the compiler: compiles other code into the object
    return r"""#!/bin/bash
args=("$@"); out=""
for ((i = 0; i < ${#args[@]}; i++)); do [ "${args[$i]}" = "-o" ] && out=${args[$((i + 1))]}; done
printf '#include <stdio.h>\nint main(void) { puts("EVIL"); return 0; }\n' > "$TMPDIR/evil.c"
exec "$1" -c "$TMPDIR/evil.c" -o "$out"
"""


def test_a_sandboxed_build_cannot_poison_ccache_for_later_builds(tmp_path, backend):
    if shutil.which("ccache") is None or shutil.which("gcc") is None:
        pytest.skip("ccache and gcc are needed")
    user_cache = tmp_path / "user-ccache"  # the user's own ccache (CCACHE_DIR in their environment)
    repo, workdir = tmp_path / "repo", tmp_path / "workdir"
    files = {"prog.c": PROG, "evil-prefix.sh": _prefix_script()}
    shas = linear(repo, 6, culprit=3, files=files)
    hostile = ("mkdir -p out && cp state out/state; chmod +x evil-prefix.sh; "
               "CCACHE_PREFIX=$PWD/evil-prefix.sh ccache gcc -c prog.c -o out/a.o; "
               f"CCACHE_DIR={user_cache} CCACHE_PREFIX=$PWD/evil-prefix.sh ccache gcc -c prog.c -o out/b.o; "
               "ccache -p | grep -E '^\\(.*\\) (cache_dir|prefix_command) ' | sed 's/^/CONFIG /'; true")
    env = env_for(workdir, TRITONBISECT_SANDBOX=backend, CCACHE_DIR=str(user_cache))
    first = tb("run", "--repo", str(repo), "--good", shas[0], "--bad", "main", "--build", hostile,
               "--test", "grep -q ok out/state", "--sandbox", "--json", cwd=repo, home=workdir, env=env, timeout=300)
    assert first.returncode == 0, first.stderr
    # then a build with the user's rights, of the same source: it must compile the real code
    honest = "mkdir -p out && cp state out/state && ccache gcc -c prog.c -o out/p.o && gcc out/p.o -o out/prog"
    second = tb("run", "--repo", str(repo), "--good", shas[0], "--bad", "main", "--build", honest,
                "--test", "out/prog | grep -qx honest && grep -q ok out/state", "--json", cwd=repo, home=workdir,
                env=env, timeout=300)
    assert second.returncode == 0, second.stderr
    assert last_json(second.stdout)["culprit"] == shas[3]
    # the sandboxed builds had a ccache of their own, whose configuration the tool wrote
    logs = "".join(p.read_text() for p in workdir.rglob("build.log"))
    assert f"CONFIG (environment) cache_dir = {workdir}/ccache-sandboxed" in logs
    # a cache like the others: `clean --all` removes it, and its configuration file
    assert tb("clean", "--all", cwd=repo, home=workdir, env=env).returncode == 0
    assert not (workdir / "ccache-sandboxed").exists() and not (workdir / "ccache-sandboxed.conf").exists()


def test_an_entry_of_a_sandboxed_build_never_reaches_a_session_without_one(tmp_path, backend):
    """`run --artifact`: the commit's artifact a sandboxed build stored is not the one a
    session with your rights installs; it builds its own."""
    repo, workdir = tmp_path / "repo", tmp_path / "workdir"
    shas = linear(repo, 6, culprit=3)
    build = "mkdir -p out && cp state out/state && echo \"built ${SANDBOXED:-outside}\" > out/who"
    for extra in (["--sandbox"], []):
        proc = tb("run", "--repo", str(repo), "--good", shas[0], "--bad", "main", "--build",
                  build.replace("${SANDBOXED:-outside}", "inside" if extra else "outside"),
                  "--artifact", "out", "--test", "grep -q ok out/state", "--json", *extra, cwd=repo,
                  home=workdir, env=env_for(workdir, TRITONBISECT_SANDBOX=backend), timeout=300)
        assert proc.returncode == 0, proc.stderr
        records = journal(workdir, last_json(proc.stdout)["session"])
        assert not any((r.get("build") or {}).get("cached") for r in records if r["commit"] == shas[0])
    stored = ArtifactCache(workdir / "cache").entries()
    assert sorted(e.meta.get("config", {}).get("sandboxed", False) for e in stored if e.commit == shas[0]) \
        == [False, True]


HOSTILE_SETUP = """
import glob, os, shutil, time, zipfile
from setuptools import setup
evil = os.path.abspath("a-evil-0.0.1-py3-none-any.whl")
with zipfile.ZipFile(evil, "w") as zf:
    zf.writestr("evil.py", "EVIL = True\\n")
planted = []
end = time.monotonic() + 6
while time.monotonic() < end:  # into every staging folder another build is waiting on
    for stage in glob.glob("CACHE/tmp/*/"):
        try:
            shutil.copy(evil, stage)
            planted.append(stage)
        except OSError:
            pass
    time.sleep(0.05)
print("PLANTED" if planted else "NOTHING PLANTED", flush=True)
setup(name="triton", version="0.0.1", py_modules=[])
"""
SLOW_SETUP = """
import time
from setuptools import setup
time.sleep(4)
open("honest.py", "w").write("HONEST = True\\n")
setup(name="triton", version="0.0.1", py_modules=["honest"])
"""


def test_a_build_cannot_reach_another_builds_staging_folder(tmp_path, backend, monkeypatch):
    """Two sandboxed Triton builds at once, as with --jobs 2: the hostile one copies a wheel
    of its own into every staging folder of the cache it can reach; the honest one's entry
    must be its own wheel."""
    import sys
    import threading

    from tritonbisect.builds.build_process import plain_runner, sandboxed_runner
    from tritonbisect.builds.recipes import StepContext

    monkeypatch.setenv("TRITONBISECT_SANDBOX", backend)
    workdir = tmp_path / "workdir"
    cache = ArtifactCache(workdir / "cache")
    results = {}

    def build(name: str, setup_py: str) -> None:
        tree = tmp_path / name
        (tree / "python").mkdir(parents=True)
        (tree / "python" / "setup.py").write_text(setup_py.replace("CACHE", str(workdir / "cache")))
        ctx = StepContext(worktree=tree, log_dir=workdir / "logs" / name, worker=0, workdir=workdir, sandbox=True)
        home = workdir / "triton-home" / name
        results[name] = build_triton_wheel(
            tree, name[0] * 40, cache=cache, config=TritonConfig(ccache=False), log=ctx.log_dir / "build.log",
            repo_id="toy", triton_home=home, python=sys.executable, python_abi="toy",
            runner=sandboxed_runner(plain_runner(ctx), ctx, [tree, home]), downloads=store_dir(workdir),
            sandboxed=True, extra_key={"name": name})

    threads = [threading.Thread(target=build, args=args) for args in (("honest", SLOW_SETUP), ("hostile", HOSTILE_SETUP))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    honest = results["honest"]
    assert honest.kind is Kind.PASS, honest.log.read_text()[-2000:]
    with zipfile.ZipFile(honest.wheel) as zf:
        assert "honest.py" in zf.namelist() and "evil.py" not in zf.namelist()


# --- Triton's download store ------------------------------------------------------------------
SETUP = """
import os, pathlib
from setuptools import setup
home = pathlib.Path(os.environ["TRITON_HOME"]) / ".triton" / "llvm"
llvms = sorted(p.name for p in home.glob("*")) if home.is_dir() else []
if os.environ.get("PLANT") == "1":
    planted = home / "llvm-deadbeef-ubuntu-x64"
    (planted / "bin").mkdir(parents=True, exist_ok=True)
    (planted / "version.txt").write_text("https://example.invalid/llvm.tar.gz\\n")
    (planted / "bin" / "mlir-opt").write_text("#!/bin/sh\\necho planted\\n")
pathlib.Path("toy_llvm_seen.py").write_text(f"LLVMS = {llvms!r}\\n")
setup(name="triton", version="0.0.1", py_modules=["toy_llvm_seen"])
"""


def _toy_triton(root: Path) -> Path:
    (root / "python").mkdir(parents=True)
    (root / "python" / "setup.py").write_text(SETUP)
    return root


def _wheel(tree: Path, workdir: Path, box: sb.Sandbox | None, commit: str, plant: bool, home: Path):
    log = workdir / "logs" / f"{commit}.log"
    runner = None
    if box is not None:
        runner = SandboxedRunner(run_logged, box, writable=[tree, home])
    import os
    import sys

    return build_triton_wheel(
        tree, commit, cache=ArtifactCache(workdir / "cache"), config=TritonConfig(ccache=False), log=log,
        repo_id="toy", triton_home=home, python=sys.executable, python_abi="toy",
        base_env={**os.environ, "PLANT": "1" if plant else "0"}, runner=runner,
        downloads=store_dir(workdir), sandboxed=box is not None, extra_key={"plant": plant},
    )


def _seen(wheel: Path) -> str:
    with zipfile.ZipFile(wheel) as zf:
        return zf.read("toy_llvm_seen.py").decode()


def test_a_planted_llvm_is_never_adopted_nor_used_by_the_next_build(tmp_path, backend):
    box = sb.detect(backend)
    tree, workdir = _toy_triton(tmp_path / "tree"), tmp_path / "workdir"
    home = workdir / "triton-home" / "toy-s0"
    hostile = _wheel(tree, workdir, box, "a" * 40, True, home)
    assert hostile.kind is Kind.PASS, hostile.log.read_text()[-2000:]
    assert "downloaded" not in hostile.reason
    assert not (store_dir(workdir) / "llvm").exists() or list((store_dir(workdir) / "llvm").iterdir()) == []
    honest = _wheel(tree, workdir, box, "b" * 40, False, home)
    assert honest.kind is Kind.PASS, honest.log.read_text()[-2000:]
    assert _seen(honest.wheel) == "LLVMS = []\n"
    assert not (home / ".triton" / "llvm" / "llvm-deadbeef-ubuntu-x64").exists()
    meta = json.loads((honest.wheel.parent / "meta.json").read_text())
    assert meta["sandboxed"] is True


def test_without_the_sandbox_a_download_is_adopted_as_before(tmp_path):
    """The control: a build with your rights that leaves an LLVM in TRITON_HOME had
    downloaded it; the store keeps it for the next build."""
    tree, workdir = _toy_triton(tmp_path / "tree"), tmp_path / "workdir"
    home = workdir / "triton-home" / "toy-w0"
    first = _wheel(tree, workdir, None, "a" * 40, True, home)
    assert first.kind is Kind.PASS and "downloaded llvm/llvm-deadbeef-ubuntu-x64" in first.reason, first.reason
    second = _wheel(tree, workdir, None, "b" * 40, False, home)
    assert _seen(second.wheel) == "LLVMS = ['llvm-deadbeef-ubuntu-x64']\n"


def test_an_artifact_is_never_stored_through_a_link_a_build_left(tmp_path):
    """`run --artifact out/art`: the build of one commit leaves `out` a link to a folder of
    the user's. The tool does not store the user's file as that commit's artifact: the
    commit counts as one that did not build (a build with the user's rights could copy the
    file itself; the tool does not do it for it, into a cache that may be shared)."""
    victim = tmp_path / "user-notes"
    victim.mkdir()
    (victim / "art").write_text("the user's own file\n")
    repo, workdir = tmp_path / "repo", tmp_path / "workdir"
    shas = linear(repo, 8, culprit=4)
    # commits 5 and 6 (neither endpoints, nor the culprit, nor its parent)
    build = ("rm -rf out; n=$(ls log | sed 's/^c//' | sort -n | tail -1); "
             f"case $n in 5|6) ln -s {victim} out;; *) mkdir -p out && echo made > out/art;; esac")
    proc = tb("run", "--repo", str(repo), "--good", shas[0], "--bad", "main", "--build", build,
              "--artifact", "out/art", "--test", "test -f out/art && grep -q ok state", "--json", cwd=repo,
              home=workdir, env=env_for(workdir), timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert last_json(proc.stdout)["culprit"] == shas[4]
    assert (victim / "art").read_text() == "the user's own file\n"
    for entry in ArtifactCache(workdir / "cache").entries():
        assert entry.path.read_text() == "made\n", entry
    records = journal(workdir, last_json(proc.stdout)["session"])
    linked = [r for r in records if r["commit"] in (shas[5], shas[6])]
    assert linked, records
    assert all(r["verdict"] == "skip" and "made out a link" in r["reason"] for r in linked), linked


def test_an_artifact_is_never_restored_through_a_link_a_build_left(tmp_path):
    """A commit's stored artifact is copied back into a checkout where an earlier build left
    `out` a link to a folder of the user's: the link goes, the copy lands in the checkout."""
    from tritonbisect.builds.recipes import PrepareResult, StepContext, TestSpec
    from tritonbisect.domains.command.artifact import cached_output
    from tritonbisect.domains.command.recipe import CommandRecipe

    victim = tmp_path / "user-notes"
    victim.mkdir()
    (victim / "art").write_text("the user's own file\n")
    repo, workdir = tmp_path / "repo", tmp_path / "workdir"
    shas = linear(repo, 2, culprit=1)
    tree = repo  # a checkout of the commit
    recipe = CommandRecipe("true", TestSpec("true"), artifact="out/art")
    ctx = StepContext(worktree=tree, log_dir=workdir / "logs", worker=0, workdir=workdir)

    def build(commit: str, ctx: StepContext) -> PrepareResult:
        (tree / "out").mkdir(exist_ok=True)
        (tree / "out" / "art").write_text("made\n")
        return PrepareResult(Kind.PASS, "built", seconds=0.0, log=None)

    assert cached_output(recipe, shas[0], ctx, build).kind is Kind.PASS  # stored
    shutil.rmtree(tree / "out")
    (tree / "out").symlink_to(victim, target_is_directory=True)
    hit = cached_output(recipe, shas[0], ctx, build)
    assert hit.kind is Kind.PASS and hit.cached
    assert (victim / "art").read_text() == "the user's own file\n"
    assert not (tree / "out").is_symlink() and (tree / "out" / "art").read_text() == "made\n"
