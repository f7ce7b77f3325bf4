"""What the generated oracles say of an environment that lacks a module the kernel source
imports (torch, for every Inductor kernel): env_unusable with the fix, never a false
compile_error; and every generated script answers --help."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from compile_support import DATA, needs_triton, run_oracle
from oracle_support import cli, scenarios

pytestmark = needs_triton
VADD = next((p for p in scenarios() if p.name == "vadd"), None)  # a shared H100 trace


def triton_without_torch(root: Path) -> Path:
    """A real venv holding this machine's Triton (package and metadata) and no torch: the
    target environment of a user who bisects Triton alone."""
    import triton

    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(root)], check=True)
    site = next((root / "lib").glob("python3*/site-packages"))
    package = Path(triton.__file__).parent
    for path in [package, *package.parent.glob(f"triton-{triton.__version__}.dist-info")]:
        (site / path.name).symlink_to(path)
    python = root / "bin" / "python"
    check = subprocess.run([str(python), "-c", "import triton; import torch"], capture_output=True, text=True)
    assert "No module named 'torch'" in check.stderr, check.stderr
    return python


@pytest.fixture(scope="module")
def compile_oracle(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("co") / "oracle"
    proc = cli("repro", str(DATA / "inductor_templates"), "--kernel", "triton_mm", "--mode", "compile",
               "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    return out


def test_compile_oracle_of_a_torch_kernel_without_torch_is_env_unusable(compile_oracle: Path, tmp_path: Path) -> None:
    source = compile_oracle / "kernel_source.py"
    source.write_text("import torch\n" + source.read_text())  # as every Inductor kernel does
    python = triton_without_torch(tmp_path / "venv")
    proc, result = run_oracle(compile_oracle, python=str(python))
    assert (proc.returncode, result.get("status")) == (125, "env_unusable"), result.get("reason")
    assert "imports torch" in result["reason"] and f"{python} -m pip install torch" in result["reason"]
    # a module of Triton's own that this Triton lacks is still the Triton's failure
    source.write_text("import triton.language.no_such_part\n" + source.read_text())
    proc, result = run_oracle(compile_oracle, python=str(python))
    assert result.get("status") == "compile_error", result.get("reason")


def _generated_scripts(tmp_path: Path) -> list[Path]:
    scripts = []
    co = tmp_path / "co"
    assert cli("repro", str(DATA / "inductor_templates"), "--kernel", "triton_mm", "--mode", "compile",
               "--out", str(co)).returncode == 0
    scripts.append(co / "compile_repro.py")
    ir = next((Path(__file__).parent / "data" / "ir").rglob("*.ttgir"), None)
    if ir is not None:
        out = tmp_path / "ir"
        proc = cli("repro", "--ir", str(ir), "--target", "cuda:90", "--out", str(out))
        assert proc.returncode == 0, proc.stderr
        scripts.extend(out.glob("*.py"))
    if VADD is not None:
        for args, name in ((["--out"], "rt"), (["--launches", "all", "--out"], "replay")):
            out = tmp_path / name
            proc = cli("repro", str(VADD), *args, str(out))
            assert proc.returncode == 0, proc.stderr
            scripts.extend(p for p in out.glob("*.py") if p.name in ("repro.py", "replay.py"))
    return scripts


def test_every_generated_script_answers_help(tmp_path: Path) -> None:
    scripts = _generated_scripts(tmp_path)
    assert any(p.name == "compile_repro.py" for p in scripts)
    for script in scripts:
        if script.name.startswith(("tb_", "oracle_")) or script.name == "replay_workers.py":  # helpers
            continue
        proc = subprocess.run([sys.executable, str(script), "--help"], capture_output=True, text=True, timeout=120)
        assert proc.returncode == 0 and "usage:" in proc.stdout, (script, proc.stderr[-2000:])
        assert "Traceback" not in proc.stderr
    compile_help = subprocess.run([sys.executable, str(scripts[0]), "--help"], capture_output=True, text=True)
    assert "regs=10%" in compile_help.stdout  # the limits as the user types them


@pytest.mark.skipif(VADD is None, reason="the shared H100 traces are not here (set TRITONBISECT_TRACES)")
@pytest.mark.parametrize("launches", [False, True])
def test_runtime_oracle_of_a_kernel_importing_a_missing_module(tmp_path: Path, launches: bool) -> None:
    from tritonbisect.oracles.selfcheck import interpreter_env

    out = tmp_path / "rt"
    args = ["--launches", "all"] if launches else []
    assert cli("repro", str(VADD), *args, "--out", str(out)).returncode == 0
    script = out / ("replay.py" if launches else "repro.py")
    holder = script if not launches else out / "replay_context.json"
    text = holder.read_text()
    needle = "import triton.language as tl\\n" if launches else "import triton.language as tl\n"
    assert needle in text
    holder.write_text(text.replace(needle, needle + ("import tb_no_such_helper" + ("\\n" if launches else "\n")), 1))
    result_file = tmp_path / "result.json"
    env = dict(interpreter_env(), TRITONBISECT_RESULT=str(result_file))
    proc = subprocess.run([sys.executable, str(script), "--record-golden", str(tmp_path / "g.pt")],
                          capture_output=True, text=True, env=env, timeout=300)
    result = json.loads(result_file.read_text())
    assert (proc.returncode, result["status"]) == (125, "env_unusable"), (proc.stdout, proc.stderr[-2000:])
    assert "imports tb_no_such_helper" in result["reason"] and "pip install" in result["reason"]
