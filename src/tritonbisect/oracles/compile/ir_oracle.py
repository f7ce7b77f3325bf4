"""The IR oracle: compile a kernel's recorded TTIR or TTGIR (not its Python source) with the
Triton under test, for the recorded GPU target, with no GPU at hand.

    generate_ir_oracle(trace, "add_kernel", out, stage="ttgir")        # from a trace's compilation event
    generate_ir_file_oracle(Path("k.ttgir"), "cuda:90", out)           # from an IR file alone

The folder is a compile-oracle folder (compile_repro.py and its helpers, compile_context.json)
whose job is {"kind": "ir", "file": "<kernel>.<stage>"}; the child parses the IR first, so an
IR this Triton cannot read (an op, attribute or syntax of another dialect version) ends as
`unreadable_ir` (exit 5, verdict skip), apart from a pass error (`compile_error`) or a crash.
"""

from __future__ import annotations

import json
import re
import time
from pathlib import Path
from typing import Any

from tritonbisect import __version__
from tritonbisect.builds.recipes import TestSpec
from tritonbisect.core.errors import InputError
from tritonbisect.core.untrusted import file_component
from tritonbisect.mlir.signature import kernel_function, read_signature
from tritonbisect.oracles.compile import spec as compile_spec
from tritonbisect.oracles.compile.folder import (
    CONTEXT_NAME,
    DEFAULT_TIMEOUT,
    SCRIPT_NAME,
    TRACED_KEYS,
    compile_commands,
    copy_standalone,
)
from tritonbisect.traces.ir_content import recorded_ir
from tritonbisect.traces.reader import Trace, load_trace

STAGES = ("ttir", "ttgir")
SOURCES = ("source", *STAGES)  # what `--from` accepts
_NUM_WARPS = re.compile(r'"?(?:ttg|triton_gpu)\.num-warps"?\s*=\s*(\d+)')


def _function(ir_text: str, kernel: str) -> str:
    """The IR's function of this kernel: of its name, else the IR's first (a dump or reproducer
    names its kernels apart: `triton_mm__4xzbjyvo` is `@triton_mm` in the IR)."""
    return kernel if read_signature(ir_text, kernel) is not None else (kernel_function(ir_text) or kernel)


def _write_folder(out: Path, ir_name: str, ir_text: str, context: dict[str, Any]) -> Path:
    copy_standalone(out)
    (out / ir_name).write_text(ir_text, encoding="utf-8")
    (out / CONTEXT_NAME).write_text(json.dumps(context, indent=1) + "\n", encoding="utf-8")
    return out / SCRIPT_NAME


def _context(kernel: str, ir_name: str, ir_text: str, stage: str, gpu: dict[str, Any], options: dict[str, Any],
             timeout: float | None, **extra: Any) -> dict[str, Any]:
    return {
        "schema": 1,
        "oracle": "ir",
        "generator": f"tritonbisect {__version__}",
        "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "kernel": kernel,
        "stage": stage,
        "signature": f"{compile_spec.ir_signature_line(ir_text, _function(ir_text, kernel))} (from the {stage}, {ir_name})",
        "job": {"what": {"kind": "ir", "file": ir_name}, "target": gpu, "options": options},
        "timeout": float(timeout) if timeout else DEFAULT_TIMEOUT,
        "warnings": [],
        **extra,
    }


def generate_ir_oracle(
    trace: Path | str | Trace,
    kernel: str,
    out_dir: Path | str,
    *,
    stage: str,
    launch_id: int | None = None,
    line: int | None = None,
    target: str | None = None,
    timeout: float | None = None,
) -> Path:
    """Write an IR-oracle folder from the `stage` IR of the kernel's compilation event."""
    if stage not in STAGES:
        raise InputError(f"--from {stage}: the IR oracle replays one of {', '.join(STAGES)}")
    tr = trace if isinstance(trace, Trace) else load_trace(Path(trace))
    comp, launch = compile_spec.select(tr, kernel, launch_id, line)
    text = recorded_ir(comp, kernel, stage)
    meta = dict(comp.metadata)
    gpu = compile_spec.parse_target_text(target) if target else compile_spec.traced_target(meta)
    if gpu is None:
        raise InputError(f"kernel '{kernel}' has no GPU target to compile its {stage} for; give one with "
                         "--compile-target (e.g. --compile-target cuda:90 or hip:gfx942)")
    ir_name = f"{file_component(kernel)}.{stage}"  # the trace names the kernel: never a path
    context = _context(
        kernel, ir_name, text, stage, gpu, compile_spec.compile_options(meta), timeout,
        trace={"path": str(tr.root), "file": str(comp.file), "line": comp.line},
        compilation={"hash": comp.hash, "traced": {k: meta[k] for k in TRACED_KEYS if k in meta}},
        launch={"index": launch.index, "file": str(launch.file), "line": launch.line} if launch else None,
    )
    if meta.get("ir_first_stage") == stage:  # the frontend's IR (a make_ttir reproducer): its own stage runs too
        context["job"]["what"]["first_stage"] = stage
    return _write_folder(Path(out_dir), ir_name, text, context)


def generate_ir_file_oracle(ir_file: Path, target: str, out_dir: Path | str, *, num_warps: int | None = None,
                            timeout: float | None = None) -> Path:
    """Write an IR-oracle folder for an IR file the user has (no trace)."""
    path = Path(ir_file)
    stage = path.suffix.lstrip(".")
    if stage not in STAGES:
        raise InputError(f"--ir {path}: expected a .ttir or .ttgir file")
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"cannot read --ir {path}: {exc}") from None
    kernel = kernel_function(text) or path.stem
    gpu = compile_spec.parse_target_text(target)
    options: dict[str, Any] = {}
    warps = num_warps or (int(m.group(1)) if (m := _NUM_WARPS.search(text)) else None)
    if warps:
        options["num_warps"] = warps
    context = _context(kernel, path.name, text, stage, gpu, options, timeout, trace=None, ir_source=str(path.resolve()))
    return _write_folder(Path(out_dir), path.name, text, context)


def ir_test_spec(trace: Path, kernel: str, launch_id: int | None, out_dir: Path, *, stage: str,
                 timeout: float | None = None, target: str | None = None,
                 check: list[str] | tuple[str, ...] = (), extra: list[str] | tuple[str, ...] = ()) -> TestSpec:
    """The TestSpec of `--repro TRACE --oracle ir --from ttir|ttgir` (or `--repro k.ttgir --oracle ir
    --compile-target T`: an IR file, no trace)."""
    if trace.suffix in (".ttir", ".ttgir") and trace.is_file():
        if not target:
            raise InputError(f"--repro {trace.name} (an IR file) needs --compile-target, e.g. cuda:90")
        generate_ir_file_oracle(trace, target, out_dir, timeout=timeout)
        return compile_commands(out_dir, timeout=timeout, check=check, extra=extra)
    if not kernel:
        raise InputError("--repro needs --kernel K (the kernel whose IR to compile)")
    generate_ir_oracle(trace, kernel, out_dir, stage=stage, launch_id=launch_id, target=target, timeout=timeout)
    return compile_commands(out_dir, timeout=timeout, check=check, extra=extra)
