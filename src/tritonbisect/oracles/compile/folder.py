"""Write the compile-oracle folder for one traced kernel, and its bisect TestSpec.

The folder can be copied to any machine with a Python and a Triton (no GPU, no torch needed
unless the kernel's own source imports it):

    compile_repro.py       the oracle (see standalone/compile_repro.py)
    compile_context.json   target, options, parameters and their specialization, provenance
    kernel_source.py       the kernel cut out of the traced source (shared with the runtime oracle)
    tb_runner.py tb_child.py tb_bridge.py tb_codegen.py tb_limits.py tb_timing.py   its standard-library helpers
"""

from __future__ import annotations

import json
import shlex
import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tritonbisect import __version__
from tritonbisect.builds.recipes import TestSpec
from tritonbisect.core.errors import InputError
from tritonbisect.oracles.compile import spec as compile_spec
from tritonbisect.oracles.compile.configs import kernel_configs
from tritonbisect.oracles.kernel_source import extract_kernel_source
from tritonbisect.traces.reader import Compilation, Launch, Trace, load_trace

STANDALONE = Path(__file__).with_name("standalone")
SCRIPT_NAME = "compile_repro.py"
CONTEXT_NAME = "compile_context.json"
SOURCE_NAME = "kernel_source.py"
GOLDEN_NAME = "golden_codegen.json"
HELPERS = ("tb_runner.py", "tb_child.py", "tb_bridge.py", "tb_codegen.py", "tb_limits.py", "tb_timing.py")
DEFAULT_TIMEOUT = 600.0
TRACED_KEYS = ("shared", "num_warps", "num_stages", "num_ctas", "tmem_size", "global_scratch_size", "triton_version")


@dataclass
class CompileOracle:
    out_dir: Path
    script: Path
    context: dict[str, Any]
    compilation: Compilation
    launch: Launch | None
    warnings: list[str] = field(default_factory=list)

    def summary(self) -> str:
        job = self.context["job"]
        target = job["target"]
        opts = " ".join(f"{k}={v}" for k, v in job["options"].items() if k in ("num_warps", "num_stages", "num_ctas"))
        where = f"launch {self.launch.index} ({self.launch.where()})" if self.launch else "compiled, never launched"
        return (
            f"wrote {self.script} — compile oracle for kernel {self.context['kernel']} ({where}); "
            f"target {target['backend']} {target['arch']} (warp {target['warp_size']}), {opts}; "
            f"{len(job['what']['params'])} parameters from {', '.join(self.context['sources']) or 'the source'}"
        )


def copy_standalone(out: Path) -> None:
    """The oracle's script and its helpers into `out` (made if missing; read-only copies replaced)."""
    out.mkdir(parents=True, exist_ok=True)
    for name in (SCRIPT_NAME, *HELPERS):
        dest = out / name
        if dest.exists():
            dest.chmod(0o644)
        shutil.copyfile(STANDALONE / name, dest)
    (out / SCRIPT_NAME).chmod(0o755)

def _signature_line(params: list[dict[str, Any]]) -> str:
    def one(p: dict[str, Any]) -> str:
        kind = p["kind"]
        if kind == "tuple":
            return f"{p['name']}=({', '.join(one(i) for i in p['items'])})"
        if kind == "constexpr":
            return f"{p['name']}={p.get('value')!r}"
        if kind == "none":
            return f"{p['name']}=None"
        flags = "/16" if p.get("divisible_16") else ("=1" if p.get("equal_to_1") else "")
        return f"{p['name']}:{p['type']}{flags}"

    return ", ".join(one(p) for p in params)


def generate_compile_oracle(
    trace: Path | str | Trace,
    kernel: str,
    out_dir: Path | str,
    *,
    launch_id: int | None = None,
    line: int | None = None,
    target: str | None = None,
    timeout: float | None = None,
) -> CompileOracle:
    """Write the compile-oracle folder for `kernel`; InputError (one line) when it cannot."""
    tr = trace if isinstance(trace, Trace) else load_trace(Path(trace))
    comp, launch = compile_spec.select(tr, kernel, launch_id, line)
    meta = dict(comp.metadata)
    if launch is not None:
        meta.update({k: v for k, v in launch.compilation_metadata.items() if k in compile_spec.COMPILE_OPTION_KEYS})
    if target:
        gpu = compile_spec.parse_target_text(target)
    else:
        found = compile_spec.traced_target(meta)
        if found is None:
            backend = (meta.get("target") or {}).get("backend") if isinstance(meta.get("target"), dict) else None
            why = ("it was captured under TRITON_INTERPRET=1" if backend == "interpreter" or
                   meta.get("backend_name") == "interpreter" else "its compilation metadata names no GPU target")
            raise InputError(
                f"kernel '{kernel}' has no GPU target to compile for: {why}; give one with "
                "--compile-target (e.g. --compile-target cuda:90, cuda:80 or hip:gfx942)"
            )
        gpu = found
    try:
        ks = extract_kernel_source(comp.python_source, kernel)
        params, sources = compile_spec.derive_params(kernel, ks.params, ks.constexpr_params, meta, comp.ttir, launch)
    except InputError as exc:
        stages = [s for s in ("ttir", "ttgir") if comp.ir.get(s)]
        if not stages:
            raise
        raise InputError(f"{exc}; the compilation's recorded IR can still be compiled instead of the Python source "
                         f"(the IR oracle): add --from {' or --from '.join(stages)}") from None
    options = compile_spec.compile_options(meta)
    current = {"constexprs": {p["name"]: p.get("value") for p in params if p.get("kind") == "constexpr"},
               "options": options}
    known_configs = kernel_configs(tr, comp, kernel, ks.constexpr_params, ks.params, current)
    warnings: list[str] = []
    if gpu["backend"] == "hip":
        warnings.append("HIP targets compile on a CPU-only machine with Triton 3.5 or later (older ones need ROCm's ld.lld, TRITON_HIP_LLD_PATH)")

    out = Path(out_dir)
    copy_standalone(out)
    (out / SOURCE_NAME).write_text(ks.text, encoding="utf-8")
    context: dict[str, Any] = {
        "schema": 1,
        "oracle": "compile",
        "generator": f"tritonbisect {__version__}",
        "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "kernel": kernel,
        "trace": {"path": str(tr.root), "file": str(comp.file), "line": comp.line},
        "compilation": {"hash": comp.hash, "traced": {k: meta[k] for k in TRACED_KEYS if k in meta}},
        "launch": {"index": launch.index, "file": str(launch.file), "line": launch.line} if launch else None,
        "source": {"origin": ks.origin, "helpers": ks.helpers, "dropped_decorators": ks.dropped_decorators},
        "sources": sources,
        "signature": _signature_line(params),
        "job": {
            "what": {"kind": "python", "file": SOURCE_NAME, "kernel": kernel, "params": params},
            "target": gpu,
            "options": options,
        },
        "timeout": float(timeout) if timeout else DEFAULT_TIMEOUT,
        # the kernel's other known configurations (its autotune decorator's, the trace's)
        "configs": known_configs,
        "warnings": warnings,
    }
    (out / CONTEXT_NAME).write_text(json.dumps(context, indent=1) + "\n", encoding="utf-8")
    return CompileOracle(out_dir=out, script=out / SCRIPT_NAME, context=context, compilation=comp, launch=launch,
                         warnings=warnings)


def compile_commands(
    out_dir: Path,
    *,
    timeout: float | None = None,
    check: list[str] | tuple[str, ...] = (),
    thresholds: list[str] | tuple[str, ...] = (),
    target: str | None = None,
    extra: list[str] | tuple[str, ...] = (),
) -> TestSpec:
    """Record the codegen golden at the good commit; compile (and check) everywhere else.
    `extra`: more arguments of the oracle's test command (--no-limits, --compile-clock)."""
    out = Path(out_dir).resolve()
    script = shlex.quote(str(out / SCRIPT_NAME))
    golden = shlex.quote(str(out / GOLDEN_NAME))
    opts = ""
    if timeout:
        # leave the engine's own timeout room to see the oracle's structured "timeout" result
        opts += f" --timeout {max(1.0, min(timeout - 5.0, timeout * 0.95)):g}"
    if target:
        opts += f" --target {shlex.quote(target)}"
    checks = "".join(f" --check {shlex.quote(c)}" for c in check)
    checks += "".join(f" --threshold {shlex.quote(t)}" for t in thresholds)
    checks += "".join(f" {shlex.quote(a)}" for a in extra)
    if "compile-time" in check and "codegen" not in check:  # only the time: no golden to record
        return TestSpec(command=f"python {script}{checks}{opts}")
    return TestSpec(
        command=f"python {script} --golden {golden}{checks}{opts}",
        record_command=f"python {script} --record-golden {golden}{opts}",
    )


def compile_test_spec(
    trace: Path,
    kernel: str,
    launch_id: int | None,
    out_dir: Path,
    *,
    timeout: float | None = None,
    check: list[str] | tuple[str, ...] = (),
    thresholds: list[str] | tuple[str, ...] = (),
    target: str | None = None,
    extra: list[str] | tuple[str, ...] = (),
) -> TestSpec:
    """The TestSpec of `--repro TRACE --oracle compile` (the oracle folder is written to out_dir)."""
    if not kernel:
        raise InputError("--repro needs --kernel K (the kernel to compile)")
    generate_compile_oracle(trace, kernel, out_dir, launch_id=launch_id, target=target, timeout=timeout)
    return compile_commands(out_dir, timeout=timeout, check=check, thresholds=thresholds, extra=extra)
