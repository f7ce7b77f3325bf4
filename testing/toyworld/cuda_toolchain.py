"""The toy NVIDIA toolchain: ptxas in two versions, as NVIDIA ships it two ways.

* redist folders `cuda-redist/cuda_nvcc-<version>/bin/ptxas` (what the toy setup.py bundles
  from TRITON_TOY_CUDA_REDIST, as real setup.py downloads NVIDIA's redist archives);
* `nvidia-cuda-nvcc-cu12` wheels on a PEP 503 index at `cuda-index/simple` (a file:// URL),
  ptxas at nvidia/cuda_nvcc/bin/ptxas as in the real wheels: what tritonbisect fetches the
  previous toolchain from.

ptxas is a Python script that "assembles" the toy PTX (one add/sub/mul) into one SASS line;
PTXAS_BAD drops the negation of sub (the SASS adds).
"""

from __future__ import annotations

import base64
import hashlib
import zipfile
from pathlib import Path

PTXAS_GOOD, PTXAS_BAD = "12.8.93", "12.9.86"
PACKAGE = "nvidia-cuda-nvcc-cu12"

PTXAS = '''#!/usr/bin/env python3
"""Toy ptxas @VERSION@."""
import sys

VERSION = "@VERSION@"
BAD = @BAD@
if "--version" in sys.argv:
    print("ptxas: toy NVIDIA (R) PTX optimizing assembler")
    print("Build cuda_" + ".".join(VERSION.split(".")[:2]) + " (toy " + VERSION + ")")
    sys.exit(0)
src = next(a for a in sys.argv[1:] if a.endswith(".ptx"))
out = sys.argv[sys.argv.index("-o") + 1]
sass = []
for line in open(src):
    words = line.split()
    if not words:
        continue
    if words[0] == "add.s64":
        sass.append("IADD3 R0, R1, R2, RZ")
    elif words[0] == "sub.s64":
        sass.append("IADD3 R0, R1, R2, RZ" if BAD else "IADD3 R0, R1, -R2, RZ")
    elif words[0] == "mul.lo.s64":
        sass.append("IMAD R0, R1, R2, RZ")
with open(out, "w") as f:
    f.write("// toy cubin, ptxas " + VERSION + "\\n" + "\\n".join(sass) + "\\n")
'''


def ptxas_script(version: str) -> str:
    return PTXAS.replace("@VERSION@", version).replace("@BAD@", str(version == PTXAS_BAD))


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()


def _wheel(folder: Path, version: str) -> str:
    dist = PACKAGE.replace("-", "_")
    name, info = f"{dist}-{version}-py3-none-any.whl", f"{dist}-{version}.dist-info"
    files = {
        "nvidia/cuda_nvcc/bin/ptxas": ptxas_script(version).encode(),
        f"{info}/METADATA": f"Metadata-Version: 2.1\nName: {PACKAGE}\nVersion: {version}\n".encode(),
        f"{info}/WHEEL": b"Wheel-Version: 1.0\nGenerator: toyworld\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
    }
    record = "".join(f"{p},sha256={_b64(d)},{len(d)}\n" for p, d in files.items()) + f"{info}/RECORD,,\n"
    with zipfile.ZipFile(folder / name, "w") as zf:
        for path, data in files.items():
            entry = zipfile.ZipInfo(path, date_time=(2026, 1, 1, 0, 0, 0))
            entry.external_attr = 0o755 << 16
            zf.writestr(entry, data)
        zf.writestr(zipfile.ZipInfo(f"{info}/RECORD", date_time=(2026, 1, 1, 0, 0, 0)), record)
    return name


def write_toolchains(root: Path) -> dict:
    """Both ptxas versions, as redist folders and as wheels on a file:// index; truth keys."""
    redist, index = root / "cuda-redist", root / "cuda-index"
    project = index / "simple" / PACKAGE
    project.mkdir(parents=True)
    links = []
    for version in (PTXAS_GOOD, PTXAS_BAD):
        tool = redist / f"cuda_nvcc-{version}" / "bin" / "ptxas"
        tool.parent.mkdir(parents=True)
        tool.write_text(ptxas_script(version), encoding="utf-8")
        tool.chmod(0o755)
        name = _wheel(index, version)
        links.append(f'<a href="../../{name}">{name}</a>')
    (project / "index.html").write_text("<html><body>\n" + "\n".join(links) + "\n</body></html>\n", encoding="utf-8")
    return {"cuda_redist": str(redist), "cuda_index": (index / "simple").as_uri(),
            "ptxas_good": PTXAS_GOOD, "ptxas_bad": PTXAS_BAD}


def toolchain_positions(regression: int) -> dict[int, str]:
    """Where the toolchain's events go in the Triton history: before the Triton regression,
    the bad ptxas undone again before it, so that each range has one culprit."""
    if regression - 3 <= 2:
        raise ValueError("too few commits for the NVIDIA toolchain: give at least 30 Triton commits")
    return {2: "nv-toolchain", regression - 3: "nv-toolchain-bump", regression - 1: "nv-toolchain-fix"}


def toolchain_step(kind: str, state):
    """The Triton state and subject of a toolchain event."""
    if kind == "nv-toolchain":
        return state.with_(ptxas=PTXAS_GOOD), f"[BUILD] Pin the NVIDIA toolchain (ptxas {PTXAS_GOOD})"
    if kind == "nv-toolchain-bump":
        return state.with_(ptxas=PTXAS_BAD), f"[BUILD] Update the NVIDIA toolchain to {PTXAS_BAD}"
    return state.with_(ptxas=PTXAS_GOOD), f"[BUILD] Go back to ptxas {PTXAS_GOOD}"
