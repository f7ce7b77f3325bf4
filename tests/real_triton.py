"""Real Triton releases from the package index, each in a cached virtual environment.

    python = triton_release_python("3.3.1")   # pytest.skip()s when the index is unreachable
    subprocess.run([str(python), "repro.py"], env={**os.environ, "TRITON_INTERPRET": "1"})

A release venv sees the torch (2.13.0, CPU) and numpy of the Python *running the tests* --
the system Python, a venv, uv or conda alike -- through a `.pth` file listing that
interpreter's site directories, and adds only its own `triton`, which comes first on sys.path
and so shadows any other. (`python -m venv --system-site-packages` would not do: made from a
venv, it exposes the *base* interpreter's packages, not the venv's.) Venvs are kept between
runs under $TRITONBISECT_TEST_CACHE (default ~/.cache/tritonbisect-tests), keyed by what they
depend on (the running Python, its site directories, the torch and numpy it has), and made
under a file lock, so parallel test processes share one download. The wheels are downloaded
once for every environment, installed with uv as hard links to its cache, and the venvs of an
environment that is gone (a CI run's temporary venv) are removed when a new one is made. Tests that use this carry
the `slow` marker.
"""

from __future__ import annotations

import fcntl
import hashlib
import importlib.metadata
import json
import os
import shutil
import site
import subprocess
import sys
from pathlib import Path

import pytest

# The releases that run under TRITON_INTERPRET=1 with torch 2.13.0 (3.0.0 and 3.1.0 do not).
INTERPRETABLE_RELEASES = ("3.2.0", "3.3.1", "3.4.0", "3.5.1", "3.6.0", "3.7.0", "3.8.0", "3.9.0")


def test_cache_dir() -> Path:
    root = os.environ.get("TRITONBISECT_TEST_CACHE")
    path = Path(root) if root else Path.home() / ".cache" / "tritonbisect-tests"
    path.mkdir(parents=True, exist_ok=True)
    return path


test_cache_dir.__test__ = False  # type: ignore[attr-defined]  # not a pytest test


def running_site_dirs() -> list[str]:
    """The site directories of the interpreter running the tests, in sys.path order."""
    dirs = list(site.getsitepackages())
    if site.ENABLE_USER_SITE:
        dirs.append(site.getusersitepackages())
    return [d for d in dirs if Path(d).is_dir()]


def _version(dist: str) -> str | None:
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return None


def environment_key() -> str:
    """What a linked venv depends on: this interpreter, its site directories, its torch and
    numpy. A venv made by another environment has another key, so it is never reused."""
    facts = {"python": sys.version, "base": getattr(sys, "_base_executable", sys.executable),
             "prefix": sys.prefix, "site": running_site_dirs(),
             "torch": _version("torch"), "numpy": _version("numpy")}
    return hashlib.sha256(json.dumps(facts, sort_keys=True).encode()).hexdigest()[:12]


def make_linked_venv(root: Path) -> Path:
    """A venv at root (no pip) that sees this interpreter's packages; returns its python."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(root)], check=True)
    python = root / "bin" / "python"
    own = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                         capture_output=True, text=True, check=True).stdout.strip()  # fmt: skip
    (Path(own) / "_running_env.pth").write_text("".join(f"{d}\n" for d in running_site_dirs()))
    return python


def _uv() -> list[str] | None:
    """How to run uv from the running environment (the `test` extra installs it), or None."""
    found = shutil.which("uv", path=str(Path(sys.executable).parent)) or shutil.which("uv")
    return [found] if found else None


def _release_wheel(version: str) -> Path:
    """triton==version's wheel for this interpreter, downloaded once into the test cache (pip
    reads the machine's index configuration); every environment's venvs share it."""
    wheels = test_cache_dir() / "wheels"
    wheels.mkdir(exist_ok=True)
    with open(test_cache_dir() / f".lock-wheel-{version}", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        proc = subprocess.run(
            [sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--only-binary=:all:",
             "-d", str(wheels), f"triton=={version}"],
            capture_output=True, text=True,
        )  # fmt: skip
        if proc.returncode != 0:
            pytest.skip(f"cannot download triton=={version} from the package index: {proc.stderr.strip()[-300:]}")
    found = sorted(wheels.glob(f"triton-{version}-*.whl"))
    if not found:
        pytest.skip(f"pip downloaded no wheel of triton=={version}")
    return found[-1]


def _install(python: Path, requirements: list[str]) -> subprocess.CompletedProcess[str]:
    """Install into the venv of `python`: with uv where it is (its files are hard links to uv's
    cache, so eight releases in several environments cost the disk one unpacked copy each),
    else with pip."""
    uv = _uv()
    if uv:
        # a cache of their own, beside the venvs (hard links need one file system), that outlives
        # the run: the per-run cache the tests' own installs use (conftest.py) is removed at its end
        env = {**os.environ, "UV_CACHE_DIR": str(test_cache_dir() / "uv")}
        proc = subprocess.run([*uv, "pip", "install", "-q", "--no-deps", "--python", str(python), *requirements],
                              capture_output=True, text=True, env=env)  # fmt: skip
        # uv sometimes unpacks a wheel it has again (a new entry for the same file): the entries
        # nothing points to any more go, so the cache holds one copy of each release
        subprocess.run([*uv, "cache", "prune", "-q"], capture_output=True, env=env)
        return proc
    return subprocess.run([sys.executable, "-m", "pip", "--python", str(python), "install", "-q", "--no-deps",
                           *requirements], capture_output=True, text=True)  # fmt: skip


def prune_orphan_venvs() -> list[Path]:
    """Remove the release venvs made for an environment that no longer exists (a CI run's
    venv in a temporary folder): they can never be used again, and each holds a Triton."""
    removed = []
    for origin in (test_cache_dir() / "venvs").glob("*/.origin"):
        prefix = origin.read_text(encoding="utf-8").strip()
        if prefix and not Path(prefix).exists():
            shutil.rmtree(origin.parent, ignore_errors=True)
            removed.append(origin.parent)
    return removed


def triton_release_python(version: str) -> Path:
    """The python of a cached venv holding `triton==version`."""
    tag = f"{version}-{environment_key()}"
    root = test_cache_dir() / "venvs" / f"triton-{tag}"
    python = root / "bin" / "python"
    ready = root / ".ready"
    lock_path = test_cache_dir() / f".lock-triton-{tag}"
    with open(lock_path, "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if ready.exists() and python.exists():
            return python
        prune_orphan_venvs()
        shutil.rmtree(root, ignore_errors=True)
        wheel = _release_wheel(version)
        make_linked_venv(root)
        (root / ".origin").write_text(sys.prefix, encoding="utf-8")
        proc = _install(python, [str(wheel)])
        if proc.returncode != 0:
            shutil.rmtree(root, ignore_errors=True)
            pytest.skip(f"cannot install triton=={version}: {proc.stderr.strip()[-300:]}")
        probe = subprocess.run([str(python), "-c", "import triton; print(triton.__version__)"],
                               capture_output=True, text=True)  # fmt: skip
        if probe.returncode != 0 or probe.stdout.strip() != version:
            shutil.rmtree(root, ignore_errors=True)
            raise RuntimeError(f"triton=={version} venv is broken: {probe.stdout} {probe.stderr[-500:]}")
        ready.write_text(version)
    return python
