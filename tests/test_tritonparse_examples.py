"""tritonparse's own example traces, as its tests and website use them (shared/traces/
tritonparse-examples/, read from beside the repository and never copied into it).

Every kernel of every file: `info` lists it; `repro --mode compile` from the Python source,
`--from ttir` and `--from ttgir` write compile oracles that the real Triton of this Python
(3.9.0 from the package index) compiles for the recorded target, cuda 75 (a T4). Three of the
files are compilation-only (Triton 3.4.0 wrote `%arg0 ... loc("/path.py":21:0)`: no names in
the signature), so the compile oracle types the arguments from the TTIR signature and the
recorded specialization alone. The complex trace's launched kernels also get runtime oracles,
run under TRITON_INTERPRET=1.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from compile_support import needs_triton, run_oracle
from oracle_support import cli, needs_torch_triton, traces_root, tritonparse_examples
from tritonbisect.traces.reader import load_trace

EXAMPLES = tritonparse_examples()
pytestmark = pytest.mark.skipif(
    not EXAMPLES,
    reason="tritonparse's example traces not found: put shared/traces/tritonparse-examples beside the repository "
    "or set TRITONBISECT_TRACES",
)
T4 = {"backend": "cuda", "arch": 75, "warp_size": 32}


def _short(path: Path) -> str:
    root = traces_root()
    return str(path.relative_to(root / "tritonparse-examples")) if root else path.name


CASES = [(f, k) for f in EXAMPLES for k in load_trace(f).kernels()] if EXAMPLES else []
IDS = [f"{_short(f)}::{k}" for f, k in CASES]
MODES = {"source": ["--mode", "compile"], "ttir": ["--from", "ttir"], "ttgir": ["--from", "ttgir"]}


def _write(trace: Path, kernel: str, mode: str, out: Path, *extra: str) -> dict:
    proc = cli("repro", str(trace), "--kernel", kernel, *MODES[mode], *extra, "--out", str(out))
    assert proc.returncode == 0, (mode, proc.stderr)
    assert "signature:" in proc.stdout
    return json.loads((out / "compile_context.json").read_text())


def test_every_file_and_kernel_is_read() -> None:
    assert len(EXAMPLES) == 5 and len(CASES) >= 8
    for trace in EXAMPLES:
        proc = cli("info", str(trace))
        assert proc.returncode == 0, proc.stderr
        for kernel in load_trace(trace).kernels():
            assert f"kernel {kernel}:" in proc.stdout
            assert "target cuda 75" in proc.stdout


@pytest.mark.parametrize(("trace", "kernel"), CASES, ids=IDS)
def test_compile_oracles_from_the_source_and_the_ir(trace: Path, kernel: str, tmp_path: Path) -> None:
    """Written for every kernel (no compiler needed); the source oracle's parameters come
    from the TTIR signature and the recorded specialization when nothing was launched."""
    ctx = _write(trace, kernel, "source", tmp_path / "source")
    assert ctx["job"]["target"] == T4
    params = ctx["job"]["what"]["params"]
    pointers = [p for p in params if p["kind"] == "pointer"]
    assert pointers and all(p["type"] == "*fp32" or p["type"].startswith("*fp") for p in pointers), params
    if ctx["launch"] is None:
        assert "TTIR signature" in ctx["sources"], ctx["sources"]
    for stage in ("ttir", "ttgir"):
        ir_ctx = _write(trace, kernel, stage, tmp_path / stage)
        assert ir_ctx["job"]["target"] == T4 and ir_ctx["job"]["what"]["kind"] == "ir"
        assert ":*fp" in ir_ctx["signature"], ir_ctx["signature"]


@pytest.mark.parametrize("trace", [f for f in EXAMPLES if not load_trace(f).launches], ids=_short)
def test_runtime_repro_of_a_compiled_never_launched_kernel_names_the_oracles_that_can_be_made(
        trace: Path, tmp_path: Path) -> None:
    kernel = load_trace(trace).kernels()[0]
    proc = cli("repro", str(trace), "--kernel", kernel, "--out", str(tmp_path / "o"))
    assert proc.returncode == 2 and len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    assert "compiled but never launched" in proc.stderr
    assert "--mode compile" in proc.stderr and "--from ttgir|ttir" in proc.stderr
    assert not (tmp_path / "o").exists()


def test_a_source_that_cannot_be_typed_names_the_ir_oracle(tmp_path: Path) -> None:
    """The compilation event without its Python source: the source oracle refuses in one
    line that names --from ttir, and the IR oracle of the same kernel is written."""
    trace = next(f for f in EXAMPLES if f.name.endswith("findhao_.ndjson"))
    edited = tmp_path / "no_source.ndjson"
    lines = []
    for line in trace.read_text().splitlines():
        record = json.loads(line)
        record.get("payload", {}).pop("python_source", None)
        lines.append(json.dumps(record))
    edited.write_text("\n".join(lines) + "\n")
    proc = cli("repro", str(edited), "--kernel", "add_kernel", "--mode", "compile", "--out", str(tmp_path / "s"))
    assert proc.returncode == 2 and len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    assert "--from ttir" in proc.stderr, proc.stderr
    proc = cli("repro", str(edited), "--kernel", "add_kernel", "--from", "ttir", "--out", str(tmp_path / "i"))
    assert proc.returncode == 0, proc.stderr


def test_line_picks_one_compilation_of_an_autotuned_kernel_that_never_launched(tmp_path: Path) -> None:
    """add_kernel_autotune was compiled for 6 configs: `info` shows each compilation's line,
    `--line N` picks one (its num_warps and BLOCK_SIZE), a line with none is one clear line."""
    trace = next(f for f in EXAMPLES if f.parent.name == "public")
    info = cli("info", str(trace)).stdout
    lines = [int(x) for x in re.findall(r"compilation \w+ \(line (\d+)\): num_warps=8", info)]
    assert len(lines) == 2, info
    for mode in ("source", "ttgir"):
        ctx = _write(trace, "add_kernel_autotune", mode, tmp_path / mode, "--line", str(lines[-1]))
        assert ctx["job"]["options"]["num_warps"] == 8 and ctx["trace"]["line"] == lines[-1], ctx["trace"]
    assert "BLOCK_SIZE=2048" in json.loads((tmp_path / "source" / "compile_context.json").read_text())["signature"]
    proc = cli("repro", str(trace), "--kernel", "add_kernel_autotune", "--mode", "compile", "--line", "99",
               "--out", str(tmp_path / "none"))
    assert proc.returncode == 2 and "its compilations are on lines 2, 3, 4, 5, 6, 7" in proc.stderr, proc.stderr
    assert not (tmp_path / "none").exists()


@needs_triton
def test_a_compilation_only_kernel_compiles_from_source_ttir_and_ttgir(tmp_path: Path) -> None:
    trace = next(f for f in EXAMPLES if f.name.endswith("findhao_.ndjson"))
    for mode in MODES:
        ctx = _write(trace, "add_kernel", mode, tmp_path / mode)
        if mode == "source":
            assert ctx["signature"] == "a_ptr:*fp32/16, b_ptr:*fp32/16, c_ptr:*fp32/16, n_elements:i32/16, BLOCK_SIZE=1024"
        proc, result = run_oracle(tmp_path / mode)
        assert proc.returncode == 0 and result["status"] == "pass", (mode, proc.stdout, proc.stderr[-2000:])
        assert result["target"] == T4 and result["stats"]["sass.total"] > 0


@pytest.mark.slow
@needs_triton
def test_every_kernel_compiles_for_cuda_75_from_source_ttir_and_ttgir(tmp_path: Path) -> None:
    def work(job: tuple[int, Path, str, str]) -> tuple[str, str, dict, str]:
        n, trace, kernel, mode = job
        out = tmp_path / f"{n}-{kernel}-{mode}"
        _write(trace, kernel, mode, out)
        proc, result = run_oracle(out)
        return f"{_short(trace)}::{kernel}", mode, result, proc.stdout + proc.stderr[-1500:]

    jobs = [(n, f, k, m) for n, (f, k) in enumerate(CASES) for m in MODES]
    with ThreadPoolExecutor(max_workers=2) as pool:
        results = list(pool.map(work, jobs))
    assert len(results) == 3 * len(CASES)
    for name, mode, result, out in results:
        assert result.get("status") == "pass", (name, mode, out)
        assert result["target"] == T4 and result["triton_version"] == "3.9.0", (name, mode)
        assert result["stats"]["ptx.total"] > 0 and result["stats"]["sass.total"] > 0, (name, mode)


@needs_torch_triton
def test_launched_kernels_get_runtime_oracles_that_pass_under_the_interpreter(tmp_path: Path) -> None:
    launched = [(f, k) for f, k in CASES if load_trace(f).launches_of(k)]
    assert {k for _, k in launched} == {"matmul_kernel", "fused_op_kernel"}
    env = {**{k: v for k, v in os.environ.items() if k != "TRITONBISECT_RESULT"}, "TRITON_INTERPRET": "1"}
    for trace, kernel in launched:
        out = tmp_path / kernel
        proc = cli("repro", str(trace), "--kernel", kernel, "--out", str(out))
        assert proc.returncode == 0, proc.stderr
        golden = out / "golden.pt"
        for args in (["--record-golden", str(golden)], ["--golden", str(golden)]):
            run = subprocess.run([sys.executable, str(out / "repro.py"), *args], capture_output=True, text=True,
                                 env=env, timeout=300)
            assert run.returncode == 0 and run.stdout.startswith("PASS"), (kernel, args, run.stdout, run.stderr[-2000:])


def test_the_example_files_are_not_in_the_repository() -> None:
    repo = Path(__file__).resolve().parents[1]
    names = {f.name for f in EXAMPLES}
    inside = [p for p in repo.rglob("*.ndjson*") if p.name in names and ".git" not in p.parts]
    assert not inside, inside


def _recorded_files(trace: Path, kernel: str, line: int) -> dict[str, str]:
    """The file_content of the compilation event on `line` of a raw or gzip trace."""
    import gzip

    opener = gzip.open if trace.suffix == ".gz" else open
    with opener(trace, "rt") as fh:
        for n, text in enumerate(fh, 1):
            if n == line:
                files = json.loads(text)["payload"]["file_content"]
                return {name.rsplit(".", 1)[-1]: body for name, body in files.items()}
    raise AssertionError(f"no line {line} in {trace}")


def _code(text: str, stage: str) -> list[str]:
    """The IR's lines without locations; the PTX's instructions (its debug lines and sections
    name the source file, which the oracle cuts out into kernel_source.py)."""
    from tritonbisect.mlir.normalise import drop_locations

    if stage == "ptx":
        return [line.split("//")[0].strip() for line in text.splitlines() if re.match(r"\s+@?[a-z]", line)]
    return [line.rstrip() for line in drop_locations(text).splitlines() if line.strip()]


@pytest.mark.slow
@needs_triton
def test_the_release_that_recorded_them_rebuilds_the_recorded_ir_from_the_source(tmp_path: Path) -> None:
    """Triton 3.4.0 (the release in the traces) compiles each compilation-only kernel from its
    Python source, typed from the TTIR signature and the recorded specialization alone, into
    the very TTIR, TTGIR and PTX the trace recorded (locations aside)."""
    from real_triton import triton_release_python

    python = str(triton_release_python("3.4.0"))
    seen = 0
    for trace, kernel in CASES:
        if load_trace(trace).launches_of(kernel):
            continue
        out = tmp_path / f"{seen}-{kernel}"
        ctx = _write(trace, kernel, "source", out)
        proc, result = run_oracle(out, "--keep", str(tmp_path / f"kept-{seen}"), python=python)
        assert proc.returncode == 0 and result["triton_version"] == "3.4.0", proc.stdout + proc.stderr[-2000:]
        recorded = _recorded_files(trace, kernel, ctx["trace"]["line"])
        for stage in ("ttir", "ttgir", "ptx"):
            produced = Path(result["artifacts"][stage]).read_text()
            assert len(_code(produced, stage)) > 10, stage
            assert _code(produced, stage) == _code(recorded[stage], stage), (_short(trace), kernel, stage)
        seen += 1
    assert seen >= 5
