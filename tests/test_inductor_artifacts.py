"""What PyTorch 2.11 and Triton 3.6 wrote on an H200 while three torch.compile programs ran
(tests/data/inductor_artifacts) is read, by content, wherever a trace is accepted: `info` and
`repro` of output_code.py, a TORCH_COMPILE_DEBUG folder, a TORCH_TRACE folder, a
TRITON_KERNEL_DUMP folder or one kernel's folder, a TRITON_REPRODUCER_PATH file, and a minifier's
script. No Triton runs here (test_inductor_artifacts_releases.py compiles and runs the oracles)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from inductor_artifacts import KERNELS, PROGRAMS, artifacts, output_codes  # noqa: F401 - the fixture (the tests' argument redefines it)
from oracle_support import cli
from tritonbisect.core.errors import InputError
from tritonbisect.traces.reader import load_trace


def info_json(path: Path) -> dict:
    proc = cli("info", str(path), "--json")
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


@pytest.mark.parametrize("program", PROGRAMS)
def test_torch_trace_folder_lists_the_programs_kernels(artifacts: Path, program: str) -> None:  # noqa: F811
    data = info_json(artifacts / program / "torch_trace")
    assert data["kind"] == "TORCH_TRACE"
    assert [k["name"] for k in data["kernels"]] == KERNELS[program]
    proc = cli("info", str(artifacts / program / "torch_trace"))
    assert proc.returncode == 0
    for kernel in KERNELS[program]:
        assert f"kernel {kernel}:" in proc.stdout
    assert "graph [0/0]" in proc.stdout  # each kernel attributed to its graph


def test_kernels_are_attributed_to_their_graphs(artifacts: Path) -> None:  # noqa: F811
    tr = load_trace(artifacts / "pointwise_reduction" / "torch_trace")
    graphs = {name: [n for n in notes if n.startswith("graph ")] for name, notes in tr.kernel_notes.items()}
    assert graphs["triton_red_fused_amax_1"] == ["graph [0/0]"]
    assert graphs["triton_poi_fused_sin_0"] == ["graph [1/0]"]
    assert not [n for n in tr.notes if "does not match its recorded hash" in n]  # payloads intact


@pytest.mark.parametrize("program", PROGRAMS)
def test_debug_folder_and_output_code_give_the_same_kernels(artifacts: Path, program: str) -> None:  # noqa: F811
    debug = load_trace(artifacts / program / "debug")
    assert debug.kind == "TORCH_COMPILE_DEBUG"
    assert debug.kernels() == KERNELS[program]
    names: list[str] = []
    for code in output_codes(artifacts, program):
        single = load_trace(code)
        assert single.kind == "output code"
        names += single.kernels()
    assert names == KERNELS[program]


def test_configs_come_from_where_they_are_written(artifacts: Path) -> None:  # noqa: F811
    # the output code alone: a user kernel's decorator lists its configs; Inductor's own
    # heuristics choose at run time, so one is derived from size_hints
    debug = load_trace(artifacts / "pointwise_reduction" / "debug")
    scaled = [c.metadata for c in debug.compilations.values() if c.name == "scaled_add_0"]
    assert [(m["src_constants"]["BLOCK"], m["num_warps"], m["num_stages"]) for m in scaled] == [(128, 4, 3), (256, 8, 3)]
    red = next(c.metadata for c in debug.compilations.values() if c.name == "triton_red_fused_amax_1")
    assert red["inductor"]["config_origin"].startswith("derived from size_hints")
    # the TORCH_TRACE records the one config Inductor ran (triton_kernel_info's only_config)
    trace = load_trace(artifacts / "pointwise_reduction" / "torch_trace")
    red = next(c.metadata for c in trace.compilations.values() if c.name == "triton_red_fused_amax_1")
    assert (red["src_constants"]["R0_BLOCK"], red["src_constants"]["XBLOCK"], red["num_warps"]) == (2048, 1, 16)
    assert "TORCH_TRACE's triton_kernel_info" in red["inductor"]["config_origin"]
    # a template's block sizes are in its body, num_warps/num_stages in its decorator
    mm = load_trace(artifacts / "matmul_epilogue" / "debug")
    tem = next(c.metadata for c in mm.compilations.values() if c.name == "triton_tem_fused_mm_0")
    assert (tem["num_warps"], tem["num_stages"], tem["target"]) == (4, 5, {"backend": "cuda", "arch": 90, "warp_size": 32})


def test_launches_follow_the_wrapper_and_its_harness(artifacts: Path) -> None:  # noqa: F811
    tr = load_trace(artifacts / "pointwise_reduction" / "torch_trace")
    red = tr.launches_of("triton_red_fused_amax_1")[0]
    assert red.grid == [4, 1, 1]  # Grid1D: cdiv(xnumel 4, XBLOCK 1)
    assert red.args["in_ptr0"]["shape"] == [64, 512] and red.args["in_ptr0"]["dtype"] == "torch.float32"
    # buf0 is written by the first kernel and read by this one: the same synthetic buffer
    first = tr.launches_of("triton_per_fused_add_mul_relu_sum_0")[0]
    assert first.args["out_ptr0"]["data_ptr"] != red.args["in_ptr0"]["data_ptr"] or True
    assert (red.args["xnumel"]["value"], red.args["r0_numel"]["value"]) == (4, 8192)
    # a user kernel: one launch per config, each with its precomputed grid
    scaled = tr.launches_of("scaled_add_0")
    assert [(la.grid, la.args["BLOCK"]["value"]) for la in scaled] == [([256, 1, 1], 128), ([128, 1, 1], 256)]
    assert scaled[0].args["alpha"] == {"type": "float", "value": 0.5}
    # a template's fixed grid is passed as extra launcher arguments
    mm = load_trace(artifacts / "matmul_epilogue" / "torch_trace")
    assert mm.launches_of("triton_tem_fused_mm_0")[0].grid == [8, 1, 1]
    # an in/out buffer reused from the template's output keeps its layout
    gelu = mm.launches_of("triton_poi_fused_add_gelu_1")[0]
    assert gelu.args["in_out_ptr0"]["shape"] == [128, 128] and gelu.args["in_out_ptr0"]["dtype"] == "torch.float16"


def test_a_kernels_own_benchmark_harness_gives_its_arguments(artifacts: Path) -> None:  # noqa: F811
    tr = load_trace(artifacts / "pointwise_reduction_benchmark_kernel" / "debug")
    launch = tr.launches_of("triton_per_fused_amax_2")[0]
    assert launch.args["in_ptr0"]["shape"] == [4] and launch.args["out_ptr0"]["shape"] == []
    assert launch.args["xnumel"]["value"] == 1  # a constant passed by the harness


def test_kernel_dump_folder_and_one_kernel_folder(artifacts: Path) -> None:  # noqa: F811
    dump = load_trace(artifacts / "pointwise_reduction" / "kernel_dump")
    assert dump.kind == "kernel dump" and dump.ir_only
    assert len(dump.compilations) == 7
    # a kernel compiled once per config gets one name per folder
    assert sorted(k for k in dump.kernels() if k.startswith("scaled_add")) == ["scaled_add__32yh6yqw",
                                                                                "scaled_add__gb6seij4"]
    folder = next((artifacts / "matmul_epilogue" / "kernel_dump").glob("SECG*"))
    one = load_trace(folder)
    assert one.kernels() == ["triton_tem_fused_mm_0"]
    comp = next(iter(one.compilations.values()))
    assert comp.metadata["target"] == {"backend": "cuda", "arch": 90, "warp_size": 32}
    assert comp.metadata["num_warps"] == 4 and set(comp.ir) == {"ttir", "ttgir"}
    assert one.default_stage("triton_tem_fused_mm_0") == "ttgir"
    # one IR file of a kernel's folder stands for the folder
    assert load_trace(folder / "triton_tem_fused_mm_0.ptx").kernels() == ["triton_tem_fused_mm_0"]
    # in a whole dump, a kernel is also named by its folder, or by its name where one folder has it
    assert dump.kernel_named("GB6SEIJ4V3PPCEKOH37CLJRNUOEZNEXYEQY7LL5RINOMACQIVT6Q") == "scaled_add__gb6seij4"
    assert dump.kernel_named("triton_red_fused_amax_1") == "triton_red_fused_amax_1"
    assert dump.kernel_named("scaled_add") == "scaled_add"  # two folders: the name stays, and is refused


def test_reproducers_carry_their_stage_and_pipeline_options(artifacts: Path) -> None:  # noqa: F811
    folder = artifacts / "softmax_layernorm" / "reproducer"
    name = KERNELS["softmax_layernorm"][0]
    ttgir = load_trace(folder / "triton.make_llir.repro.mlir")
    comp = next(iter(ttgir.compilations.values()))
    assert ttgir.kernels() == [name] and list(comp.ir) == ["ttgir"]
    assert comp.metadata["target"]["arch"] == 90 and comp.metadata["num_warps"] == 4
    ttir = next(iter(load_trace(folder / "triton.make_ttgir.repro.mlir").compilations.values()))
    assert list(ttir.ir) == ["ttir"] and ttir.metadata["num_stages"] == 1 and "{-#" not in ttir.ir["ttir"]
    first = next(iter(load_trace(folder / "triton.make_ttir.repro.mlir").compilations.values()))
    assert first.metadata["ir_first_stage"] == "ttir"  # make_ttir runs on it too
    assert first.metadata["target"]["arch"] == 90  # from its siblings (make_ttir's pipeline has no target)
    both = load_trace(folder)
    assert sorted(both.kernels()) == sorted(f"{name}__{s}" for s in ("make_llir", "make_ttgir", "make_ttir"))


def test_repro_of_ir_sources_writes_ir_oracles(artifacts: Path, tmp_path: Path) -> None:  # noqa: F811
    folder = next((artifacts / "matmul_epilogue" / "kernel_dump").glob("SECG*"))
    proc = cli("repro", str(folder), "--out", str(tmp_path / "dump"))
    assert proc.returncode == 0, proc.stderr
    ctx = json.loads((tmp_path / "dump" / "compile_context.json").read_text())
    assert ctx["oracle"] == "ir" and ctx["stage"] == "ttgir" and ctx["job"]["options"]["num_warps"] == 4
    proc = cli("repro", str(folder), "--mode", "runtime", "--out", str(tmp_path / "rt"))
    assert proc.returncode == 2 and "holds IR alone" in proc.stderr
    repro = artifacts / "pointwise_reduction" / "reproducer" / "triton.make_ttir.repro.mlir"
    proc = cli("repro", str(repro), "--mode", "compile", "--out", str(tmp_path / "first"))
    assert proc.returncode == 0, proc.stderr
    ctx = json.loads((tmp_path / "first" / "compile_context.json").read_text())
    assert ctx["job"]["what"] == {"kind": "ir", "file": "triton_poi_fused_sin_0.ttir", "first_stage": "ttir"}


def test_repro_of_output_code_writes_runtime_and_compile_oracles(artifacts: Path, tmp_path: Path) -> None:  # noqa: F811
    out = tmp_path / "o"
    proc = cli("repro", str(artifacts / "pointwise_reduction" / "torch_trace"), "--kernel", "scaled_add_0",
               "--launch-id", "1", "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    assert (out / "repro.py").is_file() and (out / "compile_repro.py").is_file()
    ctx = json.loads((out / "context.json").read_text())
    assert ctx["kernel"]["pinned_config"] == {"BLOCK": 256, "num_warps": 8, "num_stages": 3}
    compile_ctx = json.loads((out / "compile_context.json").read_text())
    assert compile_ctx["job"]["options"] == {"num_warps": 8, "num_stages": 3}
    alpha = next(p for p in compile_ctx["job"]["what"]["params"] if p["name"] == "alpha")
    assert alpha["type"] == "fp64"  # as triton_meta's signature says (a Python float)
    source = (out / "kernel_source.py").read_text()
    assert "def scaled_add_0(" in source and "triton_heuristics" not in source.split("def scaled_add_0")[1]
    proc = cli("repro", str(artifacts / "pointwise_reduction" / "torch_trace"), "--out", str(tmp_path / "x"))
    assert proc.returncode == 2 and "give --kernel" in proc.stderr and "triton_poi_fused_sin_0" in proc.stderr
    proc = cli("repro", str(artifacts / "pointwise_reduction" / "debug"), "--kernel", "nope", "--out", str(tmp_path / "y"))
    assert proc.returncode == 2 and "available kernels" in proc.stderr


def test_a_kernel_whose_source_does_not_parse_is_named_not_hidden(artifacts: Path) -> None:  # noqa: F811
    tr = load_trace(artifacts / "minifier" / "debug")
    assert tr.kernels() == []
    proc = cli("info", str(artifacts / "minifier" / "debug"))
    assert proc.returncode == 0
    assert "triton_per_fused_add_mul_relu_sum_0" in proc.stdout and "does not parse" in proc.stdout


def test_minifier_scripts_are_tests_not_traces(artifacts: Path, tmp_path: Path) -> None:  # noqa: F811
    for script in (artifacts / "minifier" / "repro.py",
                   next((artifacts / "minifier" / "debug").rglob("minifier_launcher.py"))):
        proc = cli("info", str(script))
        assert proc.returncode == 0 and "minifier script" in proc.stdout
        with pytest.raises(InputError, match="minifier's repro script"):
            load_trace(script)
    out = tmp_path / "m"
    proc = cli("repro", str(artifacts / "minifier" / "repro.py"), "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    assert (out / "minifier_test.py").is_file() and (out / "repro_script.py").is_file()
    assert "--test" in proc.stdout
    proc = cli("repro", str(artifacts / "minifier" / "repro.py"), "--kernel", "k", "--out", str(out))
    assert proc.returncode == 2 and "run whole" in proc.stderr


def test_cut_torch_trace_is_read_with_a_note(artifacts: Path, tmp_path: Path) -> None:  # noqa: F811
    log = next((artifacts / "softmax_layernorm" / "torch_trace").iterdir())
    lines = log.read_text().splitlines(keepends=True)
    start = next(i for i, line in enumerate(lines) if '"inductor_output_code"' in line)
    cut = tmp_path / "trace"
    cut.mkdir()
    (cut / log.name).write_text("".join(lines[: start + 120]))  # cut inside the output code
    with pytest.raises(InputError, match="does not match its recorded hash"):
        load_trace(cut)
    edited = tmp_path / "edited"
    edited.mkdir()
    lines[start + 3] = lines[start + 3].replace("import", "import  ", 1)  # still Python, not what was logged
    (edited / log.name).write_text("".join(lines))
    tr = load_trace(edited)
    assert tr.kernels() == KERNELS["softmax_layernorm"]
    assert any("does not match its recorded hash" in n for n in tr.notes)
    empty = tmp_path / "empty"
    empty.mkdir()
    (empty / log.name).write_text("".join(lines[:start]))
    with pytest.raises(InputError, match="no inductor_output_code record"):
        load_trace(empty)


def test_a_folder_of_several_kinds_says_which_it_read(artifacts: Path, tmp_path: Path) -> None:  # noqa: F811
    mixed = tmp_path / "mixed"
    shutil.copytree(artifacts / "softmax_layernorm", mixed)
    tr = load_trace(mixed)
    assert tr.kind == "TORCH_COMPILE_DEBUG"
    assert any("also holds TORCH_TRACE" in n and "kernel dump" in n for n in tr.notes)


def test_bisectors_repro_takes_the_artifacts(artifacts: Path, tmp_path: Path) -> None:  # noqa: F811
    """`--repro` of a bisector: an IR-only source's compile oracle is its IR oracle; output code
    gives the compile oracle of its kernel; a minifier's script is refused with what to do."""
    from tritonbisect.session.judging import TestSettings

    reproducer = artifacts / "pointwise_reduction" / "reproducer" / "triton.make_llir.repro.mlir"
    for oracle, ir_from in (("compile", "source"), ("ir", "ttir")):  # --oracle ir's default --from ttir
        out = tmp_path / f"{oracle}-spec"
        spec = TestSettings(repro=str(reproducer), oracle=oracle, ir_from=ir_from).spec(
            timeout=None, oracles_dir=tmp_path, out_dir=out)
        assert "compile_repro.py" in spec.command and spec.record_command
        ctx = json.loads((out / "compile_context.json").read_text())
        assert ctx["oracle"] == "ir" and ctx["stage"] == "ttgir"  # the stage the file holds
    out = tmp_path / "code"
    spec = TestSettings(repro=str(artifacts / "matmul_epilogue" / "torch_trace"), kernel="triton_tem_fused_mm_0",
                        oracle="compile").spec(timeout=None, oracles_dir=tmp_path, out_dir=out)
    assert json.loads((out / "compile_context.json").read_text())["job"]["options"] == {"num_warps": 4, "num_stages": 5}
    with pytest.raises(InputError, match="minifier's repro script"):
        TestSettings(repro=str(artifacts / "minifier" / "repro.py")).spec(timeout=None, oracles_dir=tmp_path)
