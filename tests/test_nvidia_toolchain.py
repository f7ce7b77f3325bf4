"""The NVIDIA toolchain pin, on real artifacts: ptxas fetched from the real
`nvidia-cuda-nvcc-cu12` / `nvidia-cuda-nvcc` wheels of PyPI (once, into the store), and the
PTX of a real kernel (the H100 traces: Triton 3.6.0's vadd) assembled by two of them; narrow
says "ptxas" when the PTX is the same and the SASS (the cubin's .text) differs.

Facts checked here: the wheels keep ptxas in nvidia/cuda_nvcc/bin/ (CUDA 12) and in their bin/
folder from CUDA 13 on; ptxas 12.8.93 and 12.9.86 give the same SASS for these kernels (the
cubins differ only in .nv.info and the ELF header), 12.8.93 and 13.0.88 do not.
"""

from __future__ import annotations

import gzip
import json
import subprocess
from pathlib import Path

import pytest

from real_triton import test_cache_dir
from tritonbisect.domains.triton.nvidia_toolchain import fetch_ptxas, nvcc_package, store_folder
from tritonbisect.narrow.compare import after_the_dumps, sass_sections
from tritonbisect.reports.where import where_lines

TRACE = Path("/work/shared/traces/h100-triton3.6/vadd/parsed")


def real_ptx(tmp_path: Path) -> Path:
    trace = next(TRACE.glob("*.ndjson.gz"), None)
    if trace is None:
        pytest.skip(f"the H100 traces are not at {TRACE}")
    with gzip.open(trace, "rt") as lines:
        for line in lines:
            event = json.loads(line)
            files = (event.get("payload") or {}).get("file_content") or {}
            ptx = next((text for name, text in files.items() if name.endswith(".ptx")), None)
            if event.get("event_type") == "compilation" and ptx:
                (tmp_path / "kernel.ptx").write_text(ptx)
                return tmp_path / "kernel.ptx"
    raise AssertionError("no PTX in the trace")


def assemble(ptxas: Path, ptx: Path, out: Path) -> Path:
    proc = subprocess.run([str(ptxas), "-arch=sm_90a", str(ptx), "-o", str(out)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    return out


@pytest.mark.slow
def test_real_ptxas_wheels_and_the_sass_they_make(tmp_path):
    store = test_cache_dir() / "downloads"
    assert nvcc_package("12.8.93") == "nvidia-cuda-nvcc-cu12" and nvcc_package("13.0.88") == "nvidia-cuda-nvcc"
    tools = {v: fetch_ptxas(v, store) for v in ("12.8.93", "12.9.86", "13.0.88")}
    for version, ptxas in tools.items():
        assert ptxas == store_folder(store, version) / "bin" / "ptxas"
        banner = subprocess.run([str(ptxas), "--version"], capture_output=True, text=True).stdout
        assert f"cuda_{'.'.join(version.split('.')[:2])}" in banner  # e.g. "Build cuda_12.8.r12.8/..."
    assert fetch_ptxas("12.8.93", store) == tools["12.8.93"]  # the store: fetched once
    ptx = real_ptx(tmp_path)
    cubins = {v: assemble(p, ptx, tmp_path / f"{v}.cubin") for v, p in tools.items()}
    assert set(sass_sections(cubins["12.8.93"].read_bytes())) == {".text.add_kernel"}

    def side(version: str) -> dict[str, str]:
        return {"ptx": str(ptx), "cubin": str(cubins[version])}

    # 12.8 -> 13.0: the same PTX, other machine code: ptxas
    found = after_the_dumps(side("12.8.93"), side("13.0.88"))
    assert found is not None and found["where"] == "ptxas" and found["sections"] == [".text.add_kernel"]
    # 12.8 -> 12.9: the cubins differ, the code does not: nothing to blame on ptxas
    assert cubins["12.8.93"].read_bytes() != cubins["12.9.86"].read_bytes()
    assert after_the_dumps(side("12.8.93"), side("12.9.86")) is None


def test_the_report_and_a_bad_cubin():
    data = {"kernel": "add_kernel", "parent": "a" * 40, "culprit": "b" * 40, "passes": {"parent": 3, "culprit": 3},
            "first_difference": None, "after_dumps": {"where": "ptxas", "note": "the PTX is identical and only "
                                                                                "the SASS differs"}}
    assert "- **Where:** ptxas (the PTX is identical and only the SASS differs)" in where_lines(data)
    with pytest.raises(ValueError):
        sass_sections(b"not an ELF")
    assert after_the_dumps({"ptx": "/nonexistent"}, {}) is None
