"""The changes a workaround search tries (pure): one setting at a time, then small combinations.

A `Change` sets compile options (num_warps=4), constexpr parameters (BLOCK_N=64) and
environment variables (DISABLE_LLVM_OPT=disable-lsr) of the oracle's launch; `apply` turns a
compile oracle's context into the candidate's. Where the values come from:

    launch options   num_warps (powers of two up to 1024 threads), num_stages (1 to 5),
                     num_ctas (sm_90+), maxnreg (NVIDIA), enable_fp_fusion (flipped);
                     AMD: waves_per_eu, matrix_instr_nonkdim
    configs          each configuration the kernel is known to run with (its autotune decorator's
                     literal configs, the trace's other compilations): all of its values at once
    block sizes      each constexpr those configs set, one at a time, to the other values they use
    switches         the bad Triton's own (`Facts`): each codegen switch its compiler reads,
                     flipped; DISABLE_LLVM_OPT=1 and =<one LLVM flag>; the good Triton's ptxas
"""

from __future__ import annotations

import copy
import math
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

# switches that only dump, time, debug, redirect or change numerics: never a workaround
_NOT_A_WORKAROUND = ("DUMP", "TIMING", "DEBUG", "REMARK", "DIAGNOSTIC", "LINE_INFO", "IR_LOC", "OVERRIDE",
                     "CACHE", "PRINT", "INTERPRET", "ALWAYS_COMPILE", "ASAN", "CONSAN", "FPSAN", "REPRODUCER",
                     "PATH", "_DIR", "PLUGIN", "MOCK", "STORE_BINARY", "FRONT_END", "NON_CONSTEXPR", "LOG",
                     "F32_DEFAULT", "FP_FUSION", "MULTITHREADING", "EXTRACT_DI", "INSTRUMENTATION", "PROTON",
                     "NVTX", "SMALL_TENSOR_RANGE", "MISCHED")
_NVIDIA_ONLY = ("NVPTX_", "PTXAS", "MMA_V")
_AMD_ONLY = ("AMDGCN_", "TRITON_HIP_")
# switches Triton documents (README's "Tips for hacking", GetEnv.hpp): offered when the
# bad Triton's compiler says it reads them
DOCUMENTED_SWITCHES = ("DISABLE_LLVM_OPT", "DISABLE_MMA_V3", "DISABLE_MMA_V5", "DISABLE_PTXAS_OPT",
                       "DISABLE_FAST_REDUCTION", "ENABLE_MMA_V3", "ENABLE_TMA",
                       "TRITON_DISABLE_RESHAPE_ENCODING_INFERENCE", "AMDGCN_USE_BUFFER_OPS",
                       "AMDGCN_USE_BUFFER_ATOMICS", "TRITON_HIP_USE_BLOCK_PINGPONG", "TRITON_HIP_USE_ASYNC_COPY",
                       "TRITON_HIP_USE_IN_THREAD_TRANSPOSE", "TRITON_HIP_LOCAL_PREFETCH",
                       "TRITON_HIP_GLOBAL_PREFETCH", "AMDGCN_SCALARIZE_PACKED_FOPS")
PTXAS_ENV = ("TRITON_PTXAS_PATH", "TRITON_PTXAS_BLACKWELL_PATH")


@dataclass(frozen=True)
class Change:
    options: tuple[tuple[str, Any], ...] = ()
    constexprs: tuple[tuple[str, Any], ...] = ()
    env: tuple[tuple[str, str], ...] = ()
    config: str = ""  # "autotune config (decorator)": a known configuration, all of it

    @property
    def size(self) -> int:
        return 1 if self.config else len(self.options) + len(self.constexprs) + (1 if self.env else 0)

    def keys(self) -> set[str]:
        return {k for k, _ in self.options} | {k for k, _ in self.constexprs} | {k for k, _ in self.env}

    def describe(self) -> str:
        parts = [f"{k}={v}" for k, v in (*self.constexprs, *self.options)]
        parts += [f"{k}={v}" for k, v in self.env if k not in PTXAS_ENV[1:]]
        text = ", ".join(parts)
        return f"{self.config}: {text}" if self.config else text

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"options": dict(self.options), "constexprs": dict(self.constexprs),
                               "env": dict(self.env)}
        if self.config:
            out["config"] = self.config
        return out

    def plus(self, other: Change) -> Change | None:
        """Both changes at once; None when they set the same thing (or both are whole configs)."""
        if self.keys() & other.keys() or (self.config and other.config):
            return None
        return Change(tuple(sorted((*self.options, *other.options))), tuple(sorted((*self.constexprs, *other.constexprs))),
                      tuple(sorted((*self.env, *other.env))), self.config or other.config)


@dataclass
class Facts:
    """What the Triton under test lets a user switch (workaround/triton_facts.py)."""

    version: str = "?"
    fingerprint: str = ""
    knobs: dict[str, bool | None] = field(default_factory=dict)
    cache_invalidating: list[str] | None = None
    llvm_flags: list[str] = field(default_factory=list)
    ptxas: dict[str, str] = field(default_factory=dict)


def _options(ctx: dict[str, Any]) -> dict[str, Any]:
    return dict((ctx.get("job") or {}).get("options") or {})


def _constexprs(ctx: dict[str, Any]) -> dict[str, Any]:
    params = ((ctx.get("job") or {}).get("what") or {}).get("params") or []
    return {p["name"]: p.get("value") for p in params if p.get("kind") == "constexpr"}


def apply(ctx: dict[str, Any], change: Change) -> dict[str, Any]:
    """The compile oracle context with `change`'s options and constexprs (env is not in it)."""
    out = copy.deepcopy(ctx)
    job = out["job"]
    options = job.setdefault("options", {})
    for key, value in change.options:
        if value is None:
            options.pop(key, None)
        else:
            options[key] = value
    wanted = dict(change.constexprs)
    for param in (job.get("what") or {}).get("params") or []:
        if param.get("kind") == "constexpr" and param["name"] in wanted:
            param["value"] = wanted[param["name"]]
    return out


def _near(current: int, values: Iterable[int], *, ratio: bool = False) -> list[int]:
    """Values other than `current`, the nearest first (by ratio for powers of two; lower first
    on a tie)."""
    def far(v: int) -> float:
        return abs(math.log2(v / current)) if ratio and v > 0 and current > 0 else abs(v - current)

    return sorted((v for v in set(values) if v != current), key=lambda v: (far(v), v))


def option_changes(ctx: dict[str, Any]) -> list[Change]:
    target = (ctx.get("job") or {}).get("target") or {}
    options = _options(ctx)
    cuda = target.get("backend") == "cuda"
    arch = target.get("arch")
    warp = int(target.get("warp_size") or 32)
    out: list[Change] = []
    warps = int(options.get("num_warps") or 4)
    out += [Change(options=(("num_warps", w),)) for w in _near(warps, [1, 2, 4, 8, 16, 32], ratio=True) if w * warp <= 1024]
    stages = int(options.get("num_stages") or (3 if cuda else 2))
    out += [Change(options=(("num_stages", s),)) for s in _near(stages, range(1, 6))]
    if cuda and isinstance(arch, int) and arch >= 90:
        ctas = int(options.get("num_ctas") or 1)
        out += [Change(options=(("num_ctas", c),)) for c in _near(ctas, [1, 2])]
    if cuda:
        given = options.get("maxnreg")
        out += [Change(options=(("maxnreg", r),)) for r in (255, 168, 128, 96) if r != given]
        if given is not None:
            out.append(Change(options=(("maxnreg", None),)))
    fusion = options.get("enable_fp_fusion", True)
    out.append(Change(options=(("enable_fp_fusion", not fusion),)))
    if target.get("backend") == "hip":
        waves = options.get("waves_per_eu") or 0
        out += [Change(options=(("waves_per_eu", w),)) for w in (1, 2, 4) if w != waves]
        nonk = options.get("matrix_instr_nonkdim") or 0
        out += [Change(options=(("matrix_instr_nonkdim", k),)) for k in (16, 32) if k != nonk]
    return out


def config_changes(ctx: dict[str, Any]) -> list[Change]:
    """Each known configuration as one change, then each block size its configs use."""
    current = _constexprs(ctx)
    options = _options(ctx)
    out: list[Change] = []
    seen: dict[str, set[Any]] = {}
    for number, config in enumerate(ctx.get("configs") or [], 1):
        constexprs = {k: v for k, v in (config.get("constexprs") or {}).items() if k in current}
        opts = dict(config.get("options") or {})
        change = Change(tuple(sorted((k, v) for k, v in opts.items() if options.get(k) != v)),
                        tuple(sorted((k, v) for k, v in constexprs.items() if current.get(k) != v)),
                        config=f"config {number} ({config.get('from') or 'recorded'})")
        if change.options or change.constexprs:
            out.append(change)
        for key, value in constexprs.items():
            if isinstance(value, int) and not isinstance(value, bool):
                seen.setdefault(key, set()).add(value)
    for key, values in sorted(seen.items()):
        now = current.get(key)
        for value in _near(now, values) if isinstance(now, int) else sorted(values):
            out.append(Change(constexprs=((key, value),)))
    return out


def _applies(name: str, backend: str) -> bool:
    if any(word in name for word in _NOT_A_WORKAROUND):
        return False
    if backend == "cuda" and name.startswith(_AMD_ONLY):
        return False
    return not (backend == "hip" and any(word in name for word in _NVIDIA_ONLY))


def switch_changes(ctx: dict[str, Any], facts: Facts, good: Facts | None, ptxas_wanted: bool) -> list[Change]:
    """The bad Triton's own switches, flipped; DISABLE_LLVM_OPT with single LLVM flags; the
    good Triton's ptxas where it is another one."""
    backend = str(((ctx.get("job") or {}).get("target") or {}).get("backend") or "")
    reads = set(facts.cache_invalidating or []) | set(facts.knobs)
    out: list[Change] = []
    for name in sorted(reads):
        if name == "DISABLE_LLVM_OPT" or not _applies(name, backend):
            continue
        default = facts.knobs.get(name)
        out.append(Change(env=((name, "0" if default is True else "1"),)))
    if "DISABLE_LLVM_OPT" in reads:
        out.append(Change(env=(("DISABLE_LLVM_OPT", "1"),)))
        if backend == "cuda":
            out += [Change(env=(("DISABLE_LLVM_OPT", flag),)) for flag in facts.llvm_flags]
    if ptxas_wanted and good is not None and backend == "cuda" and good.ptxas.get("path") and \
            good.ptxas.get("version") != facts.ptxas.get("version"):
        env = [(PTXAS_ENV[0], good.ptxas["path"])]
        if facts.ptxas.get("blackwell"):  # this Triton may pick its Blackwell ptxas for the target
            env.append((PTXAS_ENV[1], good.ptxas.get("blackwell") or good.ptxas["path"]))
        out.append(Change(env=tuple(env)))
    return out


def singles(ctx: dict[str, Any], facts: Facts, good: Facts | None = None, *, ptxas: bool = False) -> list[Change]:
    """Every single change, in the order they are tried: recorded configs and block sizes, launch
    options, the Triton's switches."""
    out: list[Change] = []
    for change in (*config_changes(ctx), *option_changes(ctx), *switch_changes(ctx, facts, good, ptxas)):
        if change not in out:
            out.append(change)
    return out


def _lowers(change: Change, key: str, current: Any) -> bool:
    value = dict(change.options).get(key, dict(change.constexprs).get(key))
    return isinstance(value, int) and isinstance(current, int) and value < current


def prefer(changes: list[Change], ctx: dict[str, Any], over_limits: list[dict[str, Any]]) -> list[Change]:
    """The same changes, those that lower what the exceeded limits measure first: fewer stages
    and smaller blocks for shared or tensor memory, fewer warps and a register cap for threads."""
    limits = {str(o.get("limit")) for o in over_limits}
    options, constexprs = _options(ctx), _constexprs(ctx)
    blocks = [k for k in constexprs if "BLOCK" in k.upper()]

    def first(change: Change) -> bool:
        if limits & {"shared memory", "tensor memory"}:
            if _lowers(change, "num_stages", options.get("num_stages") or 3):
                return True
            if any(_lowers(change, k, constexprs[k]) for k in blocks):
                return True
        if limits & {"threads", "registers per thread"}:
            return _lowers(change, "num_warps", options.get("num_warps") or 4) or \
                dict(change.options).get("maxnreg") is not None
        return False

    return sorted(changes, key=lambda c: not first(c))


def pairs(movers: list[Change], ranked: list[Change], limit: int) -> list[Change]:
    """Combinations of two single changes, at least one of which moved the failure (`movers`,
    nearest to passing first; `ranked`: every change, nearest first), at most `limit`, those of
    the nearest changes first."""
    partners = sorted(ranked, key=lambda c: (c not in movers, ranked.index(c)))
    scored: list[tuple[int, Change]] = []
    for i, first in enumerate(movers):
        for j, second in enumerate(partners):
            both = first.plus(second)
            if both is not None and all(both != other for _, other in scored):
                scored.append((i + j, both))
    return [c for _, c in sorted(scored, key=lambda sc: sc[0])][:limit]
