"""Kernels nobody here wrote, from the package index, and the compile oracles the limits and
workaround tests make of them.

    source = flash_attn_triton()          # flash_attn/flash_attn_triton.py of the flash-attn sdist
    oracle = traced_compile_oracle(tmp, FLASH_ATTN_BWD, "_bwd_kernel", "cuda:89", str(source))

The flash-attn sdist is downloaded once (pip, the machine's index configuration) into the test
cache and the one file is read out of it (nothing is built). Programs are traced under
TRITON_INTERPRET=1 with the Python running the tests (tritonbisect trace), then `repro --mode
compile` writes the oracle. Tests that use this carry the `slow` marker.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

from real_triton import test_cache_dir

HERE = Path(__file__).resolve().parent
PROGRAMS = HERE / "workaround_programs"
FLASH_ATTN_BWD = PROGRAMS / "flash_attn_bwd.py"
FLASH_ATTN_FWD = PROGRAMS / "flash_attn_fwd.py"
TF32X3_GEMM = PROGRAMS / "tf32x3_gemm.py"
FLASH_ATTN_VERSION = "2.7.4.post1"
FLASH_ATTN_FILE = "flash_attn/flash_attn_triton.py"


def flash_attn_triton() -> Path:
    """flash_attn_triton.py of the flash-attn sdist (skips the test when the index is out of reach)."""
    root = test_cache_dir() / "kernels"
    root.mkdir(exist_ok=True)
    dest = root / f"flash-attn-{FLASH_ATTN_VERSION}-flash_attn_triton.py"
    with open(root / ".lock-flash-attn", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if dest.is_file():
            return dest
        scratch = root / "download"
        shutil.rmtree(scratch, ignore_errors=True)
        # the sdist's setup.py runs for its metadata: no CUDA build, and the torch at hand
        env = {**os.environ, "FLASH_ATTENTION_SKIP_CUDA_BUILD": "TRUE"}
        proc = subprocess.run(
            [sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--no-binary", ":all:",
             "--no-build-isolation", "-d", str(scratch), f"flash-attn=={FLASH_ATTN_VERSION}"],
            capture_output=True, text=True, env=env, timeout=900)  # fmt: skip
        found = sorted(scratch.glob("flash_attn-*.tar.gz"))
        if proc.returncode != 0 or not found:
            pytest.skip(f"cannot download flash-attn=={FLASH_ATTN_VERSION}: {proc.stderr.strip()[-300:]}")
        with tarfile.open(found[0]) as tar:
            member = next(m for m in tar.getmembers() if m.name.endswith("/" + FLASH_ATTN_FILE))
            data = tar.extractfile(member)
            assert data is not None
            tmp = dest.with_suffix(".tmp")
            tmp.write_bytes(data.read())
            tmp.replace(dest)
        shutil.rmtree(scratch, ignore_errors=True)
    return dest


def interpret_env() -> dict[str, str]:
    return {**os.environ, "TRITON_INTERPRET": "1"}


def cli(*args: str, cwd: Path | None = None, timeout: float = 900) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "tritonbisect.cli", *args], capture_output=True, text=True,
                          env=interpret_env(), cwd=cwd, timeout=timeout)  # fmt: skip


def traced_compile_oracle(root: Path, program: Path, kernel: str, target: str, *args: str) -> Path:
    """root/oracle: the compile oracle for `target` of `kernel`'s launch in `program args`."""
    root.mkdir(parents=True, exist_ok=True)
    shutil.copy(program, root / program.name)
    proc = subprocess.run([sys.executable, "-m", "tritonbisect.cli", "trace", "--out", str(root / "trace"), "--",
                           sys.executable, str(root / program.name), *args], capture_output=True, text=True,
                          env=interpret_env(), cwd=root, timeout=600)  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    proc = cli("repro", str(root / "trace"), "--kernel", kernel, "--mode", "compile", "--compile-target", target,
               "--out", str(root / "oracle"))
    assert proc.returncode == 0, proc.stderr[-3000:]
    return root / "oracle"
