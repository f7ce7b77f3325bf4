"""The NVIDIA toolchain a Triton commit bundles, fetched once into the store, and the A/B
that tells whether a toolchain move is the cause.

cmake/nvidia-toolchain-version.json pins ptxas (and, later, ptxas-blackwell), cuobjdump,
nvdisasm, cudacrt, cudart and cupti by version; setup.py downloads them into the wheel. A
culprit that moves it gets one step before any descent: the same Triton with the previous
ptxas (TRITON_PTXAS_PATH, TRITON_PTXAS_BLACKWELL_PATH). It passes: the toolchain is the cause.

The previous ptxas comes from the `nvidia-cuda-nvcc-cu12` wheel of that version
(`nvidia-cuda-nvcc` from CUDA 13, `-cu11` before 12) on the user's package index, with the
user's pip configuration (`pip download --no-deps --only-binary=:all:`); its bin/ folder is
kept in <workdir>/downloads/nvidia-toolchain/cuda_nvcc-<version>/, once for every session.
"""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

from tritonbisect.core.process import clean_env
from tritonbisect.domains.triton.pin_set import TOOLCHAIN_TXT, ToolchainPin

TOOL_ENV = {"ptxas": "TRITON_PTXAS_PATH", "ptxas-blackwell": "TRITON_PTXAS_BLACKWELL_PATH"}
STORE = "nvidia-toolchain"


class ToolchainUnavailable(Exception):
    """The toolchain of a version cannot be fetched (one line: what and why)."""


def nvcc_package(version: str) -> str:
    """The PyPI distribution that ships ptxas of CUDA `version`."""
    major = version.split(".", 1)[0]
    if major == "12":
        return "nvidia-cuda-nvcc-cu12"
    if major == "11":
        return "nvidia-cuda-nvcc-cu11"
    return "nvidia-cuda-nvcc"


def store_folder(downloads: Path, version: str) -> Path:
    return Path(downloads) / STORE / f"cuda_nvcc-{version}"


def fetch_ptxas(version: str, downloads: Path, *, python: str | None = None, timeout: float = 900) -> Path:
    """ptxas of CUDA `version`, from the store or fetched into it; ToolchainUnavailable."""
    folder = store_folder(downloads, version)
    ptxas = folder / "bin" / "ptxas"
    if ptxas.is_file():
        return ptxas
    package = f"{nvcc_package(version)}=={version}"
    folder.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="nvcc-", dir=folder.parent) as tmp:
        cmd = [python or sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:",
               "--disable-pip-version-check", "--dest", tmp, package]
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True, env=clean_env(), timeout=timeout)
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise ToolchainUnavailable(f"pip download {package}: {exc}") from None
        wheels = sorted(Path(tmp).glob("*.whl"))
        if proc.returncode != 0 or not wheels:
            last = (proc.stderr.strip().splitlines() or ["no wheel"])[-1]
            raise ToolchainUnavailable(f"pip download {package} failed: {last}")
        stage = Path(tmp) / "stage"
        _extract_bin(wheels[0], stage / "bin")
        if not (stage / "bin" / "ptxas").is_file():
            raise ToolchainUnavailable(f"{wheels[0].name} holds no bin/ptxas")
        try:
            os.replace(stage, folder)
        except OSError:
            if not ptxas.is_file():  # another session stored it meanwhile: theirs stands
                raise
    return ptxas


def _extract_bin(wheel: Path, out: Path) -> None:
    """The ptxas of the wheel's .../bin/ folder (the rest of nvcc is not needed; no path the
    wheel names leaves `out`)."""
    out.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(wheel) as zf:
        for info in zf.infolist():
            parts = info.filename.split("/")
            if len(parts) < 2 or parts[-2] != "bin" or parts[-1] != "ptxas":
                continue
            if info.file_size > 1 << 30:
                continue  # not a tool
            target = out / parts[-1]
            with zf.open(info) as src, open(target, "wb") as dst:
                shutil.copyfileobj(src, dst)
            target.chmod(target.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)


def toolchain_env(pin: ToolchainPin, downloads: Path) -> dict[str, str]:
    """TRITON_PTXAS_PATH (and TRITON_PTXAS_BLACKWELL_PATH) of the toolchain `pin`."""
    env = {}
    tools = ("ptxas",) if pin.file == TOOLCHAIN_TXT else tuple(TOOL_ENV)
    for tool in tools:
        version = pin.version(tool)
        if version:
            env[TOOL_ENV[tool]] = str(fetch_ptxas(version, downloads))
    if not env:
        raise ToolchainUnavailable("the previous toolchain names no ptxas version")
    return env


__all__ = ["TOOL_ENV", "ToolchainUnavailable", "fetch_ptxas", "nvcc_package", "toolchain_env",
           "store_folder"]
