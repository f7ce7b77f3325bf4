"""The launch configurations of an Inductor kernel: its constexpr block sizes, num_warps, num_stages.

Where the output code states them they are taken as written: a user kernel's
`@triton_heuristics.user_autotune(configs=[...])`, `fixed_config(config=...)`, a template's
`num_warps`/`num_stages` (its block sizes are constants in its body). A TORCH_TRACE's
`triton_kernel_info` artifact names the one config Inductor ran when there was only one
(`only_config`) or it came from the autotune cache (`best_config`). Otherwise Inductor's heuristics
(pointwise, reduction, persistent_reduction, …) pick configs at run time from `size_hints` and
benchmark them; those are not in the output code, so one is derived here from `size_hints` by a
rule of our own — a config Inductor could launch, not necessarily the one it picked.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from tritonbisect.traces.inductor_code import InductorKernel

_OPTION_KEYS = ("num_warps", "num_stages", "num_ctas", "maxnreg")
_REDUCTIONS = ("reduction", "persistent_reduction", "cooperative_reduction", "split_scan")
_MAX_BLOCK = {2: 32, 3: 16}  # per pointwise dimension, by the kernel's number of dimensions (2-D, 3-D tiles)


@dataclass
class KernelConfig:
    values: dict[str, Any]  # the tuned constexpr parameters
    options: dict[str, int]  # num_warps, num_stages (num_ctas, maxnreg where given)
    origin: str
    notes: list[str] = field(default_factory=list)

    def label(self) -> str:
        parts = [f"{k}={v}" for k, v in self.values.items()] + [f"{k}={v}" for k, v in self.options.items()]
        return ", ".join(parts) or "no parameters"


def _pow2(n: Any) -> int:
    n = int(n) if isinstance(n, (int, float)) and not isinstance(n, bool) else 1
    p = 1
    while p < n:
        p *= 2
    return p


def _split(config: dict[str, Any]) -> tuple[dict[str, Any], dict[str, int]]:
    values = {k: v for k, v in config.items() if k not in _OPTION_KEYS and not k.startswith("__")}
    options = {k: int(v) for k, v in config.items() if k in _OPTION_KEYS and isinstance(v, int)}
    return values, options


def _pairs(recorded: Any) -> dict[str, Any] | None:
    """`only_config`/`best_config` as triton_kernel_info writes it: [[name, value], ...] or a dict."""
    if isinstance(recorded, dict):
        return dict(recorded)
    if isinstance(recorded, list) and all(isinstance(p, list) and len(p) == 2 for p in recorded):
        return {str(p[0]): p[1] for p in recorded}
    return None


def _size_hints(kernel: InductorKernel) -> dict[str, int]:
    hints = kernel.decorator.get("size_hints")
    if isinstance(hints, dict):
        return {str(k): int(v) for k, v in hints.items() if isinstance(v, int)}
    if isinstance(hints, list):  # older Inductor: [x, (y,) r]
        names = ["x", "y", "z"][: len(hints) - (1 if kernel.heuristic in _REDUCTIONS else 0)]
        if kernel.heuristic in _REDUCTIONS:
            names.append("r0_")
        return {n: int(v) for n, v in zip(names, hints, strict=False) if isinstance(v, int)}
    return {}


def derived_config(kernel: InductorKernel) -> KernelConfig:
    """A config for a kernel whose configs Inductor picks at run time (see the module docstring)."""
    hints = _size_hints(kernel)
    tuned = kernel.tuned_params()
    reduction = kernel.heuristic in _REDUCTIONS
    dims = [d for d in ("x", "y", "z") if d in hints]
    rdims = [d for d in hints if d.startswith("r")]
    values: dict[str, Any] = {}
    notes: list[str] = []
    for param in tuned:
        upper = param.upper()
        if upper in ("XBLOCK", "YBLOCK", "ZBLOCK"):
            dim = upper[0].lower()
            if reduction:
                values[param] = 1
            elif len(dims) <= 1:  # as Inductor sizes a 1-D block: numel/128 between 256 and 1024
                numel = hints.get(dim, 1)
                values[param] = min(max(256, min(numel // 128, 1024)), _pow2(numel))
            else:
                values[param] = min(_MAX_BLOCK.get(len(dims), 16), _pow2(hints.get(dim, 1)))
        elif upper.endswith("BLOCK") and upper.startswith("R"):
            rdim = "r0_" if upper in ("RBLOCK", "R0_BLOCK") else f"r{upper[1:-len('_BLOCK')]}_"
            cap = 2048 if len(rdims) <= 1 else 64
            values[param] = min(cap, _pow2(hints.get(rdim, hints.get("r", 1))))
        elif upper == "RSPLIT":
            values[param] = 1
        else:
            values[param] = 1
            notes.append(f"{param}: no rule for it, 1 chosen")
    elements = 1
    for v in values.values():
        if isinstance(v, int) and not isinstance(v, bool):
            elements *= v
    if kernel.heuristic == "persistent_reduction":  # R0_BLOCK is fixed in its body: the whole reduction
        for rdim in rdims:
            elements *= _pow2(hints[rdim])
    if reduction:
        warps = max(2, min(8, _pow2(elements // 128) if elements >= 128 else 1))
    else:
        warps = 4 if elements >= 128 else 2
    return KernelConfig(values=values, options={"num_warps": warps, "num_stages": 1},
                        origin="derived from size_hints: Inductor picks its configs at run time", notes=notes)


def kernel_configs(kernel: InductorKernel, recorded: dict[str, Any] | None = None) -> list[KernelConfig]:
    """Every config this kernel is known or assumed to run with, the first the default."""
    dec = kernel.decorator
    if kernel.heuristic == "user_autotune" and isinstance(dec.get("configs"), list):
        out = []
        for c in dec["configs"]:
            if isinstance(c, dict):
                values, options = _split(c)
                out.append(KernelConfig(values, options, "the decorator's configs (user_autotune)"))
        if out:
            return out
    if kernel.heuristic == "fixed_config" and isinstance(dec.get("config"), dict):
        values, options = _split(dec["config"])
        return [KernelConfig(values, options, "the decorator's fixed config")]
    info = recorded or {}
    for key, origin in (("only_config", "the only config, as TORCH_TRACE's triton_kernel_info records"),
                        ("best_config", "the autotune cache's best config, as TORCH_TRACE's triton_kernel_info records")):
        pairs = _pairs(info.get(key))
        if pairs:
            values, options = _split(pairs)
            return [KernelConfig(values, options, origin)]
    if kernel.heuristic in ("template", "foreach") or not kernel.tuned_params():
        options = {k: int(dec[k]) for k in ("num_warps", "num_stages") if isinstance(dec.get(k), int)}
        if not options and kernel.heuristic not in ("template",):
            options = derived_config(kernel).options
        return [KernelConfig({}, options, f"the {kernel.heuristic or 'kernel'} decorator")]
    config = derived_config(kernel)
    if isinstance(info.get("num_configs"), int) and info["num_configs"] > 1:
        config.notes.append(f"Inductor benchmarked {info['num_configs']} configs at run time; which one won is "
                            "not recorded")
    return [config]
