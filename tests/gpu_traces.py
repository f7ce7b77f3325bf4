"""The real H100 traces in tests/data/gpu_traces/, unpacked once per test session."""

from __future__ import annotations

import tarfile
from pathlib import Path

import pytest

ARCHIVES = Path(__file__).parent / "data" / "gpu_traces"
PROGRAMS = ("inductor_ln_gelu", "tma_descriptors", "autotune_chain")
WAYS = ("tritonbisect", "tritonparse")


@pytest.fixture(scope="session")
def gpu_traces(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder with <program>/{untraced,tritonbisect,tritonparse}/ for every archive."""
    root = tmp_path_factory.mktemp("gpu_traces")
    for program in PROGRAMS:
        with tarfile.open(ARCHIVES / f"{program}.tgz") as archive:
            archive.extractall(root, filter="data")
    return root
