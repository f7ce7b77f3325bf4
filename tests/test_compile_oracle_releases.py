"""The compile oracle against real Triton releases from the package index (slow: venvs).

The releases cover the three compiler-API flavours the bridge knows (3.0: `constants` +
AttrsDescriptor sets; 3.2: AttrsDescriptor hints; 3.3+: `constexprs` + attribute dicts). The
oracle folders are written once by this tool and run by each release's own Python:

  * every kernel of the shared H100 traces compiles for sm90 under every release;
  * the trimmed captures (TMA descriptors, a tuple argument, Inductor templates) compile
    where the release has the features, and otherwise end as a skip or a compile error of
    the kernel, never as a harness error or a crash;
  * at the traced release (3.6.0) the TTIR and TTGIR are the ones recorded on the H100;
  * the codegen check sees a real statistic change between two releases.
"""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest

from compile_support import DATA, run_oracle
from oracle_support import cli, needs_traces, scenario
from real_triton import triton_release_python
from tritonbisect.traces.reader import find_trace_files, iter_records, load_trace

pytestmark = [pytest.mark.slow, needs_traces]

RELEASES = ("3.0.0", "3.2.0", "3.3.1", "3.6.0", "3.9.0")
SHARED = ("vadd", "softmax", "matmul", "transpose")
# release -> the data kernels it cannot take, and the outcome that says so
TOO_OLD = {
    "3.0.0": {"tma_matmul": "env_unusable", "tuple_axpy": "env_unusable", "device_desc_scale": "compile_error",
              "triton_mm": "compile_error", "triton_tem_fused_add_mm_relu_0": "compile_error"},
    "3.2.0": {"tma_matmul": "env_unusable", "tuple_axpy": "env_unusable", "device_desc_scale": "compile_error"},
    "3.3.1": {"tma_matmul": "env_unusable", "device_desc_scale": "compile_error"},
}  # fmt: skip


@pytest.fixture(scope="module")
def oracles(tmp_path_factory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("release-oracles")
    out: dict[str, Path] = {}
    jobs = [(name, scenario(name), load_trace(scenario(name) / "logs").kernels()[0]) for name in SHARED]
    for folder in sorted(p for p in DATA.iterdir() if p.is_dir()):
        jobs += [(kernel, folder, kernel) for kernel in load_trace(folder).kernels()]
    for name, trace, kernel in jobs:
        proc = cli("repro", str(trace), "--kernel", kernel, "--mode", "compile", "--out", str(root / name))
        assert proc.returncode == 0, proc.stderr
        out[name] = root / name
    return out


@pytest.mark.parametrize("release", RELEASES)
def test_every_traced_kernel_under_a_release(oracles, release: str) -> None:
    python = str(triton_release_python(release))
    for name, folder in oracles.items():
        proc, result = run_oracle(folder, python=python)
        assert result.get("triton_version") == release or result["status"] == "env_unusable", (name, result)
        expected = TOO_OLD.get(release, {}).get(name, "pass")
        assert result["status"] == expected, (release, name, result.get("reason"), proc.stderr[-1500:])
        if expected == "pass":
            assert result["stats"]["regs"] > 0 and result["stats"]["sass.total"] > 0, (release, name)


def _norm(text: str) -> str:
    text = re.sub(r"\s*loc\([^()]*(\([^()]*\))?[^()]*\)", "", text)
    return "\n".join(line for line in text.splitlines() if line.strip() and not line.startswith("#loc"))


def test_the_traced_release_gives_back_the_traced_ir(oracles, tmp_path: Path) -> None:
    python = str(triton_release_python("3.6.0"))
    for name, folder in oracles.items():
        kept = tmp_path / name
        proc, result = run_oracle(folder, "--keep", str(kept), python=python)
        assert result["status"] == "pass", (name, result.get("reason"))
        ctx = json.loads((folder / "compile_context.json").read_text())
        recorded = {}
        for tf in find_trace_files(Path(ctx["trace"]["path"])):
            for _line, rec in iter_records(tf):
                meta = (rec.get("payload") or {}).get("metadata") or {}
                if rec.get("event_type") == "compilation" and meta.get("hash") == ctx["compilation"]["hash"]:
                    recorded = rec["payload"]["file_content"]
        for ext in ("ttir", "ttgir"):
            theirs = next(v for k, v in recorded.items() if k.endswith("." + ext))
            mine = (kept / f"{ctx['kernel']}.{ext}").read_text()
            assert _norm(mine) == _norm(theirs), (name, ext)


def test_the_codegen_check_sees_a_real_change_between_releases(oracles, tmp_path: Path) -> None:
    folder = oracles["matmul"]
    golden = tmp_path / "golden.json"
    proc, result = run_oracle(folder, "--record-golden", str(golden), python=str(triton_release_python("3.3.1")))
    assert result["status"] == "pass", result.get("reason")
    regs = json.loads(golden.read_text())["stats"]["regs"]
    proc, result = run_oracle(folder, "--golden", str(golden), "--check", "codegen", "--threshold", "regs=0",
                              python=str(triton_release_python("3.9.0")))
    assert proc.returncode == 1 and result["status"] == "codegen", result.get("reason")
    now = result["stats"]["regs"]
    assert now != regs and f"registers {regs} → {now}" in result["reason"]
    # the same release against its own golden: nothing moved
    proc, result = run_oracle(folder, "--golden", str(golden), "--check", "codegen", "--threshold", "*=0",
                              python=str(triton_release_python("3.3.1")))
    assert proc.returncode == 0 and "equal the golden" in result["reason"], result.get("reason")


def test_a_release_without_a_triton_import_is_a_skip(oracles, tmp_path: Path) -> None:
    """A venv whose triton is gone (a broken install at a bisect step): env_unusable, a skip."""
    venv = tmp_path / "venv"
    subprocess.run(["python3", "-m", "venv", "--without-pip", str(venv)], check=True)
    proc, result = run_oracle(oracles["vadd"], python=str(venv / "bin" / "python"))
    assert proc.returncode == 125 and result["status"] == "env_unusable", result.get("reason")
