"""Shared helpers of the compile-oracle tests: planted Triton changes and how to run the oracle.

A planted change is a `sitecustomize.py` in a folder put on PYTHONPATH: it patches the Triton
of the Python that runs the oracle's child, the way a bad Triton commit would behave. Each
one makes the real compiler do something real: abort() in a pipeline stage (SIGABRT, as a
failed LLVM assertion does), dereference NULL (SIGSEGV), cap registers with the real
`maxnreg` option (ptxas then spills, or refuses), or hang.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

DATA = Path(__file__).resolve().parent / "data" / "compile_traces"

has_triton = importlib.util.find_spec("triton") is not None
needs_triton = pytest.mark.skipif(not has_triton, reason="triton is not installed")

_STAGE_PATCH = '''
from triton.backends.nvidia import compiler as _nv

_add_stages = _nv.CUDABackend.add_stages


def add_stages(self, stages, options, *args, **kwargs):
    _add_stages(self, stages, options, *args, **kwargs)
    original = stages["{stage}"]

    def planted(src, metadata):
{body}
        return original(src, metadata)

    stages["{stage}"] = planted


_nv.CUDABackend.add_stages = add_stages
'''


def _stage_plant(doc: str, stage: str, body: str, imports: str = "") -> str:
    return f'"""{doc}"""\n{imports}' + _STAGE_PATCH.format(stage=stage, body=body)


PLANTS = {
    # abort() in the llir stage: what a failed LLVM/MLIR assertion does
    "abort": _stage_plant(
        "Planted regression: the llir stage aborts, as a failed LLVM assertion does.", "llir",
        '        sys.stderr.write("planted: Assertion `isLegal()\' failed.\\n")\n'
        "        sys.stderr.flush()\n"
        "        os.abort()",
        "import os\nimport sys\n",
    ),
    # a NULL dereference in the ttgir stage: SIGSEGV
    "segfault": _stage_plant(
        "Planted regression: the ttgir stage dereferences NULL.", "ttgir",
        "        ctypes.string_at(0)", "import ctypes\n",
    ),
    # LLVM's report_fatal_error: prints and exits 1, no Python exception
    "fatal": _stage_plant(
        "Planted regression: the ptx stage dies like LLVM's report_fatal_error.", "ptx",
        '        sys.stderr.write("LLVM ERROR: Cannot select: planted\\n")\n'
        "        sys.stderr.flush()\n"
        "        os._exit(1)",
        "import os\nimport sys\n",
    ),
    # a pass that never ends
    "hang": _stage_plant(
        "Planted regression: the ttgir stage hangs.", "ttgir",
        "        time.sleep(3600)", "import time\n",
    ),
}


def maxnreg_plant(registers: int) -> str:
    """Every CUDA compile capped at `registers` per thread (the real maxnreg option)."""
    return (
        f'"""Planted codegen regression: CUDA kernels capped at {registers} registers per thread."""\n'
        "from triton.backends.nvidia import compiler as _nv\n\n"
        "_parse = _nv.CUDABackend.parse_options\n\n\n"
        "def parse_options(self, opts):\n"
        f"    return _parse(self, dict(opts, maxnreg={registers}))\n\n\n"
        "_nv.CUDABackend.parse_options = parse_options\n"
    )


def plant(folder: Path, code: str) -> dict[str, str]:
    """Write the sitecustomize.py and return an environment that loads it."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "sitecustomize.py").write_text(code)
    env = dict(os.environ)
    env["PYTHONPATH"] = str(folder)
    env.pop("TRITONBISECT_RESULT", None)
    return env


def run_oracle(folder: Path, *args: str, env: dict | None = None, python: str | None = None,
               timeout: float = 300) -> tuple[subprocess.CompletedProcess, dict]:
    """Run a compile oracle's script; return the process and its JSON result."""
    result = folder / f"result-{os.getpid()}-{len(list(folder.glob('result-*')))}.json"
    if env is None:
        env = {k: v for k, v in os.environ.items() if k != "TRITONBISECT_RESULT"}
    proc = subprocess.run(
        [python or sys.executable, str(folder / "compile_repro.py"), "--result", str(result), *args],
        capture_output=True, text=True, env=env, timeout=timeout,
    )
    data = json.loads(result.read_text()) if result.is_file() else {}
    return proc, data
