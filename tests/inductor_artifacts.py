"""The real artifacts in tests/data/inductor_artifacts/ (TORCH_COMPILE_DEBUG, TORCH_TRACE,
TRITON_KERNEL_DUMP, TRITON_REPRODUCER_PATH, minifier scripts), unpacked once per test session."""

from __future__ import annotations

import tarfile
from pathlib import Path

import pytest

ARCHIVE = Path(__file__).parent / "data" / "inductor_artifacts" / "artifacts.tar.xz"
PROGRAMS = ("pointwise_reduction", "matmul_epilogue", "softmax_layernorm")

# every Triton kernel of each program's output code (the user kernel under Inductor's name)
KERNELS = {
    "pointwise_reduction": ["triton_per_fused_add_mul_relu_sum_0", "triton_red_fused_amax_1",
                            "triton_per_fused_amax_2", "scaled_add_0", "triton_poi_fused_sin_0"],
    "matmul_epilogue": ["triton_tem_fused_mm_0", "triton_poi_fused_add_gelu_1"],
    "softmax_layernorm": ["triton_per_fused__softmax_exp_native_layer_norm_prepare_softmax_online_sub_0"],
}


@pytest.fixture(scope="session")
def artifacts(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("inductor_artifacts")
    with tarfile.open(ARCHIVE) as archive:
        archive.extractall(root, filter="data")
    return root


def output_codes(root: Path, program: str) -> list[Path]:
    return sorted((root / program / "debug").rglob("output_code.py"))
