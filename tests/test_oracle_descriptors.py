"""Oracles of kernels taking host-side TensorDescriptors, device-side descriptors and tuples,
from the real H100 traces of tests/data/gpu_traces/tma_descriptors (torch 2.11, Triton 3.6),
written by `tritonbisect trace` (outputs after each launch recorded) and by tritonparse 0.6.

On the CPU they run under TRITON_INTERPRET=1 (Triton 3.9's interpreter takes TensorDescriptors)
and compile for the traced sm90 with `--mode compile`.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from compile_support import run_oracle
from gpu_traces import WAYS, gpu_traces  # noqa: F401 - the fixture (the tests' argument redefines it)
from oracle_support import cli, needs_torch_triton
from tritonbisect.core.errors import InputError
from tritonbisect.oracles.composite_args import descriptor_specs, tuple_specs
from tritonbisect.oracles.selfcheck import Job, interpreter_env, run_batch

pytestmark = [needs_torch_triton]

KERNELS = ("tma_matmul", "device_desc_scale", "tuple_axpy")


def _trace(root: Path, way: str) -> Path:
    return root / "tma_descriptors" / way / "trace"


def _repro(trace: Path, kernel: str, out: Path, *args: str) -> dict:
    proc = cli("repro", str(trace), "--kernel", kernel, "--out", str(out), *args)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return json.loads((out / ("compile_context.json" if "compile" in args else "context.json")).read_text())


@pytest.mark.parametrize("way", WAYS)
def test_descriptor_and_tuple_oracles_pass_under_the_interpreter(gpu_traces: Path, way: str,  # noqa: F811
                                                                 tmp_path: Path) -> None:
    kernels = KERNELS if way == "tritonbisect" else KERNELS[:2]  # tritonparse records a tuple's repr only
    jobs = []
    for kernel in kernels:
        out = tmp_path / kernel
        ctx = _repro(_trace(gpu_traces, way), kernel, out)
        specs = {a["name"]: a for a in ctx["args"]}
        if kernel == "tma_matmul":
            assert specs["a_desc"] == {"name": "a_desc", "kind": "descriptor", "base": "a_desc.base",
                                       "shape": [256, 192], "strides": [192, 1], "block_shape": [64, 64],
                                       "padding": "zero"}
            assert specs["a_desc.base"]["kind"] == "tensor" and specs["a_desc.base"]["init"]["source"] == "blob"
            assert specs["c_desc.base"]["part_of"] == "c_desc"
        if kernel == "tuple_axpy":
            assert specs["ptrs"] == {"name": "ptrs", "kind": "tuple", "elements": ["ptrs[0]", "ptrs[1]", "ptrs[2]"]}
            assert all(specs[f"ptrs[{i}]"]["init"]["source"] == "blob" for i in range(3))
        if way == "tritonbisect":  # the GPU's outputs, of the descriptors' bases and the tuple's tensors too
            assert all(a.get("after") for a in ctx["args"] if a["kind"] == "tensor"), kernel
            jobs.append(Job(kernel, out / "repro.py", [], out / "gpu.json"))
        else:
            jobs.append(Job(kernel + "/rec", out / "repro.py", ["--record-golden", str(out / "golden.pt")],
                            out / "rec.json"))
            jobs.append(Job(kernel, out / "repro.py", [], out / "again.json"))
    matmul = tmp_path / "tma_matmul"
    script = (matmul / "repro.py").read_text()
    (matmul / "bad.py").write_text(script.replace("acc = tl.dot(a, b, acc)", "acc = tl.dot(a, b, acc) * 1.01"))
    jobs.append(Job("bad", matmul / "bad.py", [], matmul / "bad.json"))
    results = run_batch(jobs, env=interpreter_env(), timeout=600)
    for job in jobs[:-1]:
        assert results[job.id].status == "pass", (job.id, results[job.id].reason)
        if way == "tritonbisect":
            assert results[job.id].data["reference"] == "outputs recorded in the trace after the original launch"
    assert (results["bad"].status, results["bad"].rc) == ("mismatch", 1), results["bad"].reason
    assert "c_desc.base" in results["bad"].reason


@pytest.mark.parametrize("way", WAYS)
def test_descriptor_and_tuple_kernels_compile_for_the_h100(gpu_traces: Path, way: str,  # noqa: F811
                                                           tmp_path: Path) -> None:
    for kernel in KERNELS:
        out = tmp_path / kernel
        _repro(_trace(gpu_traces, way), kernel, out, "--mode", "compile")
        proc, result = run_oracle(out)
        assert result.get("status") == "pass", (kernel, result.get("reason"), proc.stderr[-2000:])
        assert result["target"] == {"backend": "cuda", "arch": 90, "warp_size": 32}
        if kernel == "tma_matmul":  # the descriptors reach the codegen: TMA and wgmma
            assert result["stats"]["ptx.wgmma"] > 0 and result["stats"]["sass.HGMMA"] > 0


def test_a_tuple_tritonparse_recorded_as_repr_is_one_line(gpu_traces: Path, tmp_path: Path) -> None:  # noqa: F811
    proc = cli("repro", str(_trace(gpu_traces, "tritonparse")), "--kernel", "tuple_axpy", "--out", str(tmp_path / "o"))
    assert proc.returncode == 2
    err = proc.stderr.strip()
    assert len(err.splitlines()) == 1 and "Traceback" not in proc.stderr
    assert "argument 'ptrs' of tuple_axpy is a tuple whose elements the trace does not record" in err
    assert not (tmp_path / "o" / "repro.py").exists()


def _tensor(name: str, record: dict, after: object) -> dict:
    return {"name": name, "kind": "tensor", "after": after}


def test_descriptor_records_missing_parts_are_one_line() -> None:
    base = {"type": "tensor", "shape": [8, 8], "dtype": "torch.float16"}
    good = {"type": "TensorDescriptor", "base": base, "shape": [8, 8], "strides": [8, 1], "block_shape": [8, 8]}
    specs = descriptor_specs("d", good, {"base": {"blob_path": "x"}}, "k", _tensor)
    assert specs[0] == {"name": "d.base", "kind": "tensor", "after": {"blob_path": "x"}, "part_of": "d"}
    assert specs[1]["padding"] == "zero" and "round_f32_to_tf32" not in specs[1]
    assert descriptor_specs("d", {**good, "round_f32_to_tf32": True}, None, "k", _tensor)[1]["round_f32_to_tf32"]
    for broken, why in [({**good, "base": None}, "base tensor"), ({**good, "block_shape": None}, "block shape"),
                        ({**good, "strides": [8]}, "differ in rank"), ({**good, "padding": "ones"}, "padding")]:
        with pytest.raises(InputError, match=why) as info:
            descriptor_specs("d", broken, None, "k", _tensor)
        assert "\n" not in str(info.value)
    nested = {"type": "tuple", "elements": [good, {"type": "int", "value": 3}]}
    specs = tuple_specs("t", nested, None, "k", _tensor, lambda n, r: {"name": n, "kind": "scalar"})
    assert [(s["name"], s["kind"], s["part_of"]) for s in specs[:-1]] == [
        ("t[0].base", "tensor", "t[0]"), ("t[0]", "descriptor", "t"), ("t[1]", "scalar", "t")]
    assert specs[-1] == {"name": "t", "kind": "tuple", "elements": ["t[0]", "t[1]"]}


CPU_PROGRAM = '''
import torch
import triton
import triton.language as tl
from triton.tools.tensor_descriptor import TensorDescriptor


@triton.jit
def desc_copy(src_desc, dst_desc, pair, BM: tl.constexpr, BN: tl.constexpr):
    m = tl.program_id(0) * BM
    x = src_desc.load([m, 0])
    scale = tl.load(pair[0] + tl.arange(0, BN))
    dst_desc.store([m, 0], x * scale[None, :] + pair[1])


torch.manual_seed(0)
src = torch.randn(64, 32)
dst = torch.zeros(64, 32)
scale = torch.rand(32)
desc_copy[(4,)](TensorDescriptor.from_tensor(src, [16, 32]), TensorDescriptor.from_tensor(dst, [16, 32]),
                (scale, 0.5), BM=16, BN=32)
assert torch.allclose(dst, src * scale + 0.5)
print("program done")
'''


def test_traced_on_the_cpu_descriptors_and_tuples_round_trip(tmp_path: Path) -> None:
    """`tritonbisect trace` under the interpreter records the descriptors and the tuple (a tensor
    and a float) with their outputs; the oracle rebuilds them and catches a planted change."""
    import sys

    (tmp_path / "prog.py").write_text(CPU_PROGRAM)
    proc = cli("trace", "--out", str(tmp_path / "t"), "--", sys.executable, str(tmp_path / "prog.py"),
               env=interpreter_env(), timeout=300)
    assert proc.returncode == 0 and "program done" in proc.stdout, proc.stdout + proc.stderr
    out = tmp_path / "o"
    ctx = _repro(tmp_path / "t", "desc_copy", out)
    kinds = {a["name"]: a["kind"] for a in ctx["args"]}
    assert kinds == {"src_desc.base": "tensor", "src_desc": "descriptor", "dst_desc.base": "tensor",
                     "dst_desc": "descriptor", "pair[0]": "tensor", "pair[1]": "scalar", "pair": "tuple",
                     "BM": "scalar", "BN": "scalar"}
    script = (out / "repro.py").read_text()
    (out / "bad.py").write_text(script.replace("+ pair[1])", "+ pair[1] * 1.001)"))
    jobs = [Job("good", out / "repro.py", [], out / "good.json"), Job("bad", out / "bad.py", [], out / "bad.json")]
    results = run_batch(jobs, env=interpreter_env(), timeout=300)
    assert results["good"].status == "pass", results["good"].reason
    assert results["good"].data["reference"] == "outputs recorded in the trace after the original launch"
    assert results["bad"].status == "mismatch" and "dst_desc.base" in results["bad"].reason
