"""The compile oracle knows what its target's driver would refuse to launch (tb_limits.py):
shared memory, threads and registers, tensor memory per block. A kernel past a limit is its own
outcome, `out_of_resources` (exit 6), naming the limit and both numbers, and the bisectors count
it as bad.

The numbers in the unit tests are the ones real GPUs printed in Triton's OutOfResources
messages (vllm#17744 on MI300: 73728 needed, 65536 the limit; Qwen3-Coder on H20: 263168 and
232448). The slow tests compile real kernels with real releases: flash-attn's Triton backward
kernel, which needs more shared memory than an sm_89 block may have from Triton 3.3 on
(triton-lang/triton#7268), and a tf32x3 GEMM that 3.8 gives more shared memory than 3.6
(triton-lang/triton#11526).
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tritonbisect.core.outcome import Kind, Policy, Verdict, classify_test
from tritonbisect.oracles.compile.standalone import tb_limits

CUDA = {"backend": "cuda", "warp_size": 32}


def _check(arch, **stats):
    return tb_limits.check({**CUDA, "arch": arch}, stats)


def test_shared_memory_past_the_block_limit_names_both_numbers():
    over = _check(90, shared=263168, num_warps=4)
    assert [(o["limit"], o["needed"], o["allowed"]) for o in over] == [("shared memory", 263168, 232448)]
    assert "263168" in over[0]["text"] and "232448" in over[0]["text"] and "sm_90" in over[0]["text"]
    assert "227 KB" in over[0]["text"]


@pytest.mark.parametrize(("arch", "limit"), [(89, 101376), (86, 101376), (80, 166912), (75, 65536), (90, 232448),
                                             (100, 232448), (120, 101376), ("90a", 232448)])
def test_the_limit_itself_fits_and_one_byte_more_does_not(arch, limit):
    assert _check(arch, shared=limit) == []
    assert [o["allowed"] for o in _check(arch, shared=limit + 1)] == [limit]


def test_threads_past_1024_and_registers_that_cap_the_threads():
    assert [o["limit"] for o in _check(90, num_warps=64)] == ["threads"]
    assert _check(90, num_warps=32, regs=64) == []  # 1024 threads x 64 registers = 65536
    # 255 registers a thread: a warp takes 8192 of the block's 65536, so 8 warps at most
    over = _check(90, num_warps=16, regs=255)
    assert [(o["limit"], o["needed"], o["allowed"]) for o in over] == [("threads", 512, 256)]
    assert "255 registers" in over[0]["text"]
    assert _check(90, num_warps=8, regs=255) == []


def test_tensor_memory_is_a_blackwell_limit():
    assert [o["limit"] for o in _check(100, tmem_size=1024)] == ["tensor memory"]
    assert _check(100, tmem_size=512) == []
    assert _check(90, tmem_size=1024) == []  # no tensor memory on Hopper: nothing to check


def test_hip_lds_per_architecture():
    mi300 = {"backend": "hip", "arch": "gfx942", "warp_size": 64}
    over = tb_limits.check(mi300, {"shared": 73728, "num_warps": 4})
    assert [(o["needed"], o["allowed"]) for o in over] == [(73728, 65536)]
    assert over[0]["text"].startswith("LDS")
    assert tb_limits.check({**mi300, "arch": "gfx950"}, {"shared": 73728}) == []
    assert [o["limit"] for o in tb_limits.check(mi300, {"num_warps": 32})] == ["threads"]  # 32 x 64 = 2048


def test_an_architecture_the_table_lacks_is_not_checked():
    assert _check(999, shared=10**9) == []
    assert tb_limits.limits_for({**CUDA, "arch": 999})["shared"] is None


def test_the_bisectors_count_it_as_bad():
    found = classify_test(6, result={"status": "out_of_resources", "reason": "shared memory: ..."})
    assert found.kind is Kind.OUT_OF_RESOURCES
    assert Policy().verdict(Kind.OUT_OF_RESOURCES) is Verdict.BAD
    assert Policy(regress="out_of_resources").verdict(Kind.OUT_OF_RESOURCES) is Verdict.BAD
    assert Policy(regress="out_of_resources").verdict(Kind.COMPILE_ERROR) is Verdict.SKIP
    assert Policy(regress="compile_error").verdict(Kind.OUT_OF_RESOURCES) is Verdict.SKIP
    assert Policy(regress="fixed").verdict(Kind.OUT_OF_RESOURCES) is Verdict.GOOD
    # a test of one's own that meets Triton's own check on a GPU says so in its output
    tail = ("triton.runtime.errors.OutOfResources: out of resource: shared memory, Required: 114688, "
            "Hardware limit: 101376. Reducing block sizes or `num_stages` may help.\n")
    found = classify_test(1, tail)
    assert found.kind is Kind.OUT_OF_RESOURCES and "114688" in found.reason


# --- real kernels, real releases ------------------------------------------------------------


def _run(python: Path, oracle: Path, *args: str) -> tuple[int, dict, str]:
    result = oracle.parent / "result.json"
    proc = subprocess.run([str(python), str(oracle / "compile_repro.py"), "--result", str(result), *args],
                          capture_output=True, text=True, timeout=900)  # fmt: skip
    return proc.returncode, json.loads(result.read_text()), proc.stdout


@pytest.fixture(scope="module")
def flash_attn_oracle(tmp_path_factory):
    from real_kernels import FLASH_ATTN_BWD, flash_attn_triton, traced_compile_oracle

    source = flash_attn_triton()
    return traced_compile_oracle(tmp_path_factory.mktemp("flash-attn"), FLASH_ATTN_BWD, "_bwd_kernel", "cuda:89",
                                 str(source))


@pytest.mark.slow
def test_flash_attn_backward_no_longer_fits_an_sm89_block_from_triton_3_3(flash_attn_oracle):
    from real_triton import triton_release_python

    code, res, out = _run(triton_release_python("3.2.0"), flash_attn_oracle)
    assert (code, res["status"]) == (0, "pass"), out
    assert res["stats"]["shared"] <= 101376 and res["limits"]["shared"] == 101376

    code, res, out = _run(triton_release_python("3.3.1"), flash_attn_oracle)
    assert (code, res["status"]) == (6, "out_of_resources"), out
    needed = res["stats"]["shared"]
    assert needed > 101376
    assert res["over_limits"] == [{"limit": "shared memory", "needed": needed, "allowed": 101376, "unit": "bytes",
                                   "text": res["over_limits"][0]["text"]}]
    assert out.startswith("OUT_OF_RESOURCES: ") and str(needed) in out and "101376" in out and "sm_89" in out

    # --no-limits: only whether it compiles (and its codegen)
    code, res, out = _run(triton_release_python("3.3.1"), flash_attn_oracle, "--no-limits")
    assert (code, res["status"]) == (0, "pass"), out
    # an sm_90 block holds it: the same compile for H100 launches
    code, res, out = _run(triton_release_python("3.3.1"), flash_attn_oracle, "--compile-target", "cuda:90")
    assert (code, res["status"]) == (0, "pass"), out


@pytest.mark.slow
def test_tf32x3_gemm_past_the_sm90_limit_in_3_8_only(tmp_path):
    from real_kernels import TF32X3_GEMM, traced_compile_oracle
    from real_triton import triton_release_python

    oracle = traced_compile_oracle(tmp_path, TF32X3_GEMM, "gemm_tf32x3", "cuda:90", "128", "64", "64", "4", "5")
    code, res, out = _run(triton_release_python("3.6.0"), oracle)
    assert (code, res["status"]) == (0, "pass"), out
    code, res, out = _run(triton_release_python("3.8.0"), oracle)
    assert (code, res["status"]) == (6, "out_of_resources"), out
    assert [(o["limit"], o["allowed"]) for o in res["over_limits"]] == [("shared memory", 232448)]


@pytest.mark.slow
@pytest.mark.timeout(1800)
def test_wheels_names_the_first_release_that_cannot_launch_it(flash_attn_oracle, tmp_path, capsys):
    from bisectors_world import run_json
    from real_triton import make_linked_venv

    venv = tmp_path / "venv"
    make_linked_venv(venv)
    code, res, err = run_json(
        ["wheels", "--good", "3.2.0", "--bad", "3.3.1", "--venv", str(venv),
         "--repro", str(flash_attn_oracle.parent / "trace"), "--kernel", "_bwd_kernel", "--oracle", "compile",
         "--compile-target", "cuda:89", "--workdir", str(tmp_path / "home")], capsys)
    assert code == 0, err[-3000:]
    assert (res["last_good"], res["first_bad"]) == ("3.2.0", "3.3.0")
    assert "out_of_resources" in err


def test_the_runtime_oracle_and_the_reducer_tell_it_apart(tmp_path):
    from tritonbisect.oracles.standalone import oracle_core
    from tritonbisect.reduce.verdict import bad_signature

    class OutOfResources(Exception):  # Triton's triton.runtime.errors.OutOfResources, by name
        pass

    try:
        raise RuntimeError("launch") from OutOfResources("out of resource: shared memory")
    except RuntimeError as exc:
        assert oracle_core.error_kind(exc) == "out_of_resources"
    assert oracle_core.EXIT_OF_STATUS["out_of_resources"] == 6
    # the reducer keeps a candidate that is still past the same limit, by however much
    result = tmp_path / "bad.json"
    result.write_text(json.dumps({"status": "out_of_resources", "reason": "shared memory: 114688 ...",
                                  "over_limits": [{"limit": "shared memory", "needed": 114688, "allowed": 101376}]}))
    assert bad_signature(6, None, result, tmp_path / "log")[0] == "out_of_resources: shared memory"
