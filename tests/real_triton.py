"""Real Triton releases from the package index, each in a cached virtual environment.

    python = triton_release_python("3.3.1")   # pytest.skip()s when the index is unreachable
    subprocess.run([str(python), "repro.py"], env={**os.environ, "TRITON_INTERPRET": "1"})

The venv is made with `--system-site-packages`, so it sees the torch (2.13.0, CPU) and numpy
of the Python running the tests and only adds its own `triton`, which shadows any system
one. Venvs are kept between runs under $TRITONBISECT_TEST_CACHE (default
~/.cache/tritonbisect-tests) and made under a file lock, so parallel test processes share
one download. Tests that use this carry the `slow` marker.
"""

from __future__ import annotations

import fcntl
import os
import shutil
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


def triton_release_python(version: str, *, extra: tuple[str, ...] = ()) -> Path:
    """The python of a cached venv holding `triton==version` (and `extra` requirements)."""
    tag = "-".join((version, *extra)).replace("/", "_").replace("=", "")
    root = test_cache_dir() / "venvs" / f"triton-{tag}"
    python = root / "bin" / "python"
    ready = root / ".ready"
    lock_path = test_cache_dir() / f".lock-triton-{tag}"
    with open(lock_path, "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if ready.exists() and python.exists():
            return python
        shutil.rmtree(root, ignore_errors=True)
        subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", "--without-pip", str(root)], check=True)
        proc = subprocess.run(
            [sys.executable, "-m", "pip", "--python", str(python), "install", "-q", "--no-deps",
             f"triton=={version}", *extra],
            capture_output=True, text=True,
        )  # fmt: skip
        if proc.returncode != 0:
            shutil.rmtree(root, ignore_errors=True)
            pytest.skip(f"cannot install triton=={version} from the package index: {proc.stderr.strip()[-300:]}")
        probe = subprocess.run([str(python), "-c", "import triton; print(triton.__version__)"],
                               capture_output=True, text=True)  # fmt: skip
        if probe.returncode != 0 or probe.stdout.strip() != version:
            shutil.rmtree(root, ignore_errors=True)
            raise RuntimeError(f"triton=={version} venv is broken: {probe.stdout} {probe.stderr[-500:]}")
        ready.write_text(version)
    return python
