"""TargetEnv on real virtual environments with small wheels built from a tmp setup.py."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tritonbisect.builds.env import EnvError, TargetEnv

pytestmark = pytest.mark.slow

SHA = "0123456789abcdef0123456789abcdef01234567"


def make_wheel(tmp: Path, dist: str, version: str, module: str = "triton") -> Path:
    """A pure-python wheel `dist==version` providing `module`, built with pip like a recipe."""
    src = tmp / f"src-{dist}-{version}".replace("+", "_")
    (src / module).mkdir(parents=True)
    (src / module / "__init__.py").write_text(f"__version__ = {version!r}\n")
    (src / "setup.py").write_text(
        "from setuptools import setup\n"
        f"setup(name={dist!r}, version={version!r}, packages=[{module!r}])\n"
    )
    out = tmp / "wheels"
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-build-isolation", "--no-deps", "-q",
         "-w", str(out), str(src)],
        check=True, capture_output=True,
    )
    norm = dist.replace("-", "_")
    [wheel] = [w for w in out.glob(f"{norm}-*.whl") if version.replace("-", "_") in w.name]
    return wheel


@pytest.fixture(scope="module")
def wheels(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("wheels")
    return {
        "good": make_wheel(tmp, "triton", f"3.6.0+git{SHA[:8]}"),
        "other": make_wheel(tmp, "triton", "3.6.0+gitdeadbeef"),
        "pt": make_wheel(tmp, "pytorch-triton", "3.5.0+git11111111", module="pytorch_triton_shim"),
        "extra": make_wheel(tmp, "toyextra", "1.0", module="toyextra"),
        "plain": make_wheel(tmp / "plain", "triton", "3.6.0"),
    }


@pytest.fixture(scope="module")
def venv(tmp_path_factory):
    return TargetEnv.ensure(tmp_path_factory.mktemp("envs") / "venv")


def test_ensure_makes_and_reuses_a_venv(venv, wheels):
    assert venv.python.exists() and (venv.root / "pyvenv.cfg").exists() and venv.owned
    mtime = (venv.root / "pyvenv.cfg").stat().st_mtime
    again = TargetEnv.ensure(venv.root)
    assert again.python == venv.python and (venv.root / "pyvenv.cfg").stat().st_mtime == mtime
    assert venv.python_abi().startswith(sys.implementation.cache_tag)
    assert venv.installed_versions(["surely-not-installed"])["surely-not-installed"] is None
    if not venv.has_pip():  # made without ensurepip: the tool's pip serves it
        assert venv.pip_command()[-2:] == ["--python", str(venv.python)]
    assert venv.install_wheel(wheels["extra"]) == (True, "")
    assert venv.ensure_packages(["toyextra>=0.5"]) == (True, "")  # present: pip is not run


def test_ensure_refuses_a_non_venv_directory(tmp_path):
    (tmp_path / "stuff").mkdir()
    (tmp_path / "stuff" / "file").write_text("x")
    with pytest.raises(EnvError, match="not a virtual environment"):
        TargetEnv.ensure(tmp_path / "stuff")
    with pytest.raises(EnvError, match="no bin/python"):
        TargetEnv.existing(tmp_path / "stuff")
    with pytest.raises(EnvError, match="not found"):
        TargetEnv.ensure(tmp_path / "v", python="python-that-does-not-exist")


def test_install_triton_purges_and_verifies_version(venv, wheels, tmp_path):
    ok, reason = venv.install_wheel(wheels["pt"])
    assert ok, reason
    assert venv.installed_versions(["pytorch-triton"])["pytorch-triton"] == "3.5.0+git11111111"
    log = tmp_path / "install.log"
    ok, reason = venv.install_triton(wheels["good"], SHA, log=log)
    assert ok, reason
    assert reason == f"triton 3.6.0+git{SHA[:8]}"
    versions = venv.installed_versions(["triton", "pytorch-triton", "pytorch-triton-rocm"])
    assert versions == {"triton": f"3.6.0+git{SHA[:8]}", "pytorch-triton": None, "pytorch-triton-rocm": None}
    assert "uninstall" in log.read_text() and "pytorch-triton" in log.read_text()
    # a wheel of another commit: installed, but the check fails with a clear reason
    ok, reason = venv.install_triton(wheels["other"], SHA)
    assert not ok
    assert "3.6.0+gitdeadbeef" in reason and SHA[:12] in reason
    # a file that is not a wheel
    bad = tmp_path / "triton-0-py3-none-any.whl"
    bad.write_bytes(b"not a zip")
    ok, reason = venv.install_triton(bad, SHA)
    assert not ok and "failed" in reason


def test_test_env_isolation(venv, tmp_path):
    base = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path / "home"), "PYTHONHOME": "/x", "KEEP": "1"}
    e1 = venv.test_env(base, tmp_path / "tcache")
    e2 = venv.test_env(base, tmp_path / "tcache")
    assert e1["PATH"].split(os.pathsep)[0] == str(venv.python.parent)
    assert e1["VIRTUAL_ENV"] == str(venv.root) and e1["PYTHONNOUSERSITE"] == "1"
    assert "PYTHONHOME" not in e1 and e1["KEEP"] == "1"
    assert e1["TRITON_CACHE_DIR"] != e2["TRITON_CACHE_DIR"]
    for e in (e1, e2):
        p = Path(e["TRITON_CACHE_DIR"])
        assert p.is_dir() and p.parent == tmp_path / "tcache" and not any(p.iterdir())
    assert not (tmp_path / "home" / ".triton").exists()
    out = subprocess.run(["python", "-c", "import sys; print(sys.prefix)"], env=e1,
                         capture_output=True, text=True, check=True).stdout.strip()
    assert Path(out) == venv.root


def test_user_venv_overlay_for_a_second_worker(wheels, tmp_path):
    user = TargetEnv.ensure(tmp_path / "user-venv")
    user = TargetEnv.existing(user.root)
    assert not user.owned
    assert user.install_wheel(wheels["extra"])[0]
    overlay = user.for_worker(1, tmp_path / "venvs")
    assert overlay is not user and overlay.root.parent == tmp_path / "venvs"
    assert user.for_worker(0, tmp_path / "venvs") is user
    # the overlay sees the user's packages (torch stays) ...
    assert overlay.installed_versions(["toyextra"])["toyextra"] == "1.0"
    # ... while its own Triton is installed into the overlay, not the user's venv
    ok, reason = overlay.install_triton(wheels["good"], SHA)
    assert ok, reason
    assert user.installed_versions(["triton"])["triton"] is None


def test_a_test_naming_the_users_interpreter_imports_the_workers_own_triton(wheels, tmp_path):
    # worker 0 installs into the user's venv V, worker 1 into its overlay: a test that runs
    # V/bin/python itself (not the python first on PATH) must see worker 1's Triton on worker 1
    user = TargetEnv.existing(TargetEnv.ensure(tmp_path / "V").root)
    overlay = user.for_worker(1, tmp_path / "venvs")
    assert user.install_triton(wheels["other"], None)[0]
    assert overlay.install_triton(wheels["good"], SHA)[0]
    code = "import triton, os; print(triton.__version__)"
    for env, version in ((user, "3.6.0+gitdeadbeef"), (overlay, f"3.6.0+git{SHA[:8]}")):
        test_env = env.test_env({"PATH": "/usr/bin:/bin", "PYTHONPATH": "/keep/me"}, tmp_path / "tcache")
        for python in (str(user.python), "python"):
            out = subprocess.run([python, "-c", code], env=test_env, capture_output=True, text=True, check=True)
            assert out.stdout.strip() == version, (env, python)
        assert test_env["PYTHONPATH"].split(os.pathsep)[-1] == "/keep/me"  # the user's own stays


def test_same_wheel_again_runs_no_pip_and_another_wheel_replaces_it(wheels, tmp_path):
    env = TargetEnv.ensure(tmp_path / "venv")
    log = tmp_path / "install.log"
    ok, reason = env.install_triton(wheels["good"], SHA, log=log)
    assert ok and reason == f"triton 3.6.0+git{SHA[:8]}", reason
    init = Path(env.site_packages()[0]) / "triton" / "__init__.py"
    stamp = init.stat().st_mtime_ns
    # the same wheel again: verified, not reinstalled (no pip run writes the log)
    log.unlink()
    ok, reason = env.install_triton(wheels["good"], SHA, log=log)
    assert ok and reason == f"triton 3.6.0+git{SHA[:8]} (already installed)", reason
    assert not log.exists() and init.stat().st_mtime_ns == stamp
    # another Triton slipped in next to it: the purge runs again
    assert env.install_wheel(wheels["pt"])[0]
    ok, reason = env.install_triton(wheels["good"], SHA, log=log)
    assert ok and "already installed" not in reason, reason
    assert env.installed_versions(["pytorch-triton"])["pytorch-triton"] is None
    assert "uninstall" in log.read_text()
    # a different wheel replaces it (and fails the commit check, as it should)
    ok, reason = env.install_triton(wheels["other"], SHA)
    assert not ok and "3.6.0+gitdeadbeef" in reason
    assert env.installed_versions(["triton"])["triton"] == "3.6.0+gitdeadbeef"
    # ... and the good one is installed again after it, not taken for installed
    ok, reason = env.install_triton(wheels["good"], SHA)
    assert ok and "already installed" not in reason, reason


def test_install_wheel_skips_a_wheel_already_there_unless_it_was_removed(wheels, tmp_path):
    env = TargetEnv.ensure(tmp_path / "venv")
    assert env.install_wheel(wheels["extra"]) == (True, "")
    assert env.install_wheel(wheels["extra"]) == (True, "already installed")
    assert env.uninstall(["toyextra"])[0]
    assert env.install_wheel(wheels["extra"]) == (True, "")
    assert env.installed_versions(["toyextra"])["toyextra"] == "1.0"


def test_a_build_without_git_suffix_passes_by_its_files(wheels, tmp_path):
    # setup.py rules that miss a git worktree (or a release branch) give a plain 3.6.0:
    # the wheel we installed is proof enough, for a commit and for a release (commit None)
    env = TargetEnv.ensure(tmp_path / "venv")
    assert env.install_wheel(wheels["pt"])[0]
    ok, reason = env.install_triton(wheels["plain"], SHA)
    assert ok and reason == "triton 3.6.0", reason
    assert env.installed_versions(["pytorch-triton"])["pytorch-triton"] is None
    ok, reason = env.install_triton(wheels["plain"], None)
    assert ok and reason == "triton 3.6.0 (already installed)", reason
    # someone changed an installed file: the check notices, and a reinstall repairs it
    init = Path(env.site_packages()[0]) / "triton" / "__init__.py"
    record = next(Path(env.site_packages()[0]).glob("triton-3.6.0.dist-info")) / "RECORD"
    record.write_text(record.read_text().replace("triton/__init__.py,sha256=", "triton/__init__.py,sha256=x"))
    ok, reason = env.verify_triton(SHA, wheels["plain"])
    assert not ok and "triton/__init__.py" in reason
    ok, reason = env.install_triton(wheels["plain"], SHA)
    assert ok and "already installed" not in reason, reason
    assert init.exists()
