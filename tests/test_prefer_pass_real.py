"""--prefer-pass against real Triton: the passes a real compile dumps are the ones the real
Passes.td files declare.

The Triton wheel installed here (3.9.0) ships its TableGen declarations under
triton/include (include/triton/Dialect/TritonGPU/Transforms/Passes.td, ...; the NVIDIA
backend's, e.g. ConvertTritonGPUToLLVM, are not shipped). The recorded TTIR of the shared H100
trace is compiled for sm90 on the CPU under MLIR_ENABLE_DUMP=1, as `narrow` does; every
TritonGPU pass it names must be found, by name and by argument, in those real declarations.
"""

from __future__ import annotations

import os
from pathlib import Path

from compile_support import needs_triton
from oracle_support import needs_traces, scenario
from tritonbisect.mlir.passes import parse_dumps
from tritonbisect.narrow.narrowing import DUMP_ENV
from tritonbisect.oracles.compile.standalone import tb_runner
from tritonbisect.search import prior
from tritonbisect.traces.reader import load_trace


def _real_declarations() -> list[prior.PassDecl]:
    import importlib.util

    spec = importlib.util.find_spec("triton")
    assert spec is not None and spec.origin
    root = Path(spec.origin).parent / "include"
    tds = {str(p.relative_to(root)): p.read_text(encoding="utf-8") for p in root.rglob("Passes.td")}
    assert "triton/Dialect/TritonGPU/Transforms/Passes.td" in tds
    return prior.declared_passes(tds)


@needs_triton
def test_the_real_declarations_hold_the_passes_narrow_names() -> None:
    decls = _real_declarations()
    by_name = {d.name: d for d in decls}
    # the passes narrow names on real kernels and releases
    assert by_name["TritonGPUCoalesce"].arg == "tritongpu-coalesce"
    assert by_name["TritonGPURemoveLayoutConversions"].arg == "tritongpu-remove-layout-conversions"
    assert by_name["TritonGPUScheduleLoops"].arg == "tritongpu-schedule-loops"
    assert prior.find_pass("TritonGPUCoalesce (tritongpu-coalesce)", decls) == [by_name["TritonGPUCoalesce"]]
    # a Conversion folder's Passes.td also declares passes that convert nothing
    assert by_name["AllocateSharedMemory"].td == "triton/Conversion/TritonGPUToLLVM/Passes.td"
    assert not by_name["AllocateSharedMemory"].conversion
    assert not any(d.conversion for d in decls if d.name.startswith("TritonGPU"))
    assert by_name["ConvertTritonToTritonGPU"].conversion


@needs_triton
@needs_traces
def test_every_tritongpu_pass_of_a_real_compile_is_declared(tmp_path: Path) -> None:
    comp = next(c for c in load_trace(scenario("vadd") / "logs").compilations.values() if c.name == "add_kernel")
    ttir = tmp_path / "add_kernel.ttir"
    ttir.write_text(comp.ir["ttir"])
    job = {"target": {"backend": "cuda", "arch": 90, "warp_size": 32}, "options": {"num_warps": 4},
           "what": {"kind": "ir", "file": str(ttir)}}
    res = tb_runner.compile_in_child(job, str(tmp_path / "w"), timeout=300, env={**os.environ, **DUMP_ENV}, keep=True)
    assert res.status == "pass", res.reason
    dumps = parse_dumps((tmp_path / "w" / "child.stderr").read_text())
    ours = {(d.name, d.arg) for d in dumps if d.name.startswith("TritonGPU")}
    assert ("TritonGPUCoalesce", "tritongpu-coalesce") in ours
    decls = _real_declarations()
    for name, arg in sorted(ours):
        label = f"{name} ({arg})"
        found = prior.find_pass(label, decls)
        assert [(d.name, d.arg) for d in found] == [(name, arg)], label
        assert prior.find_pass(arg, decls) == found
