"""Generate the whole-program replay oracle: every selected launch of a trace, in order.

`tritonbisect repro TRACE --launches all|K1,K2 --out DIR` writes `replay.py` (see
replay_template.py), `replay_context.json`, the helpers of standalone/ (the single-launch
oracle's blobs, arguments and comparison, and the replay's workers) and `blobs/`.

Memory: every tensor argument of every selected launch is placed in a *buffer*; tensors whose
recorded memory ranges (`data_ptr` .. end) overlap, in any launches, share one buffer, so what
kernel 1 writes is what kernel 2 reads. A tensor's first appearance initialises its range from
its recorded "before" blob (else statistics, else seeded random data). A later appearance
*flows* (the buffer keeps what the replay left there) unless the trace proves the host wrote
the memory in between: the recorded "before" hash differs from the previous launch's recorded
"after" hash of the same range. Then the recorded blob is loaded again ("host write").

Autotuner benchmark launches are left out (they carry no data), and so are launches made during
CUDA-graph capture (no data can be read there): each is reported, with the eager warm-up launch
of the same kernel on the same buffers that is replayed in its place where the trace has one.
Any other launch that cannot be rebuilt is refused in one line (InputError).
"""

from __future__ import annotations

import json
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from tritonbisect import __version__
from tritonbisect.core.errors import InputError
from tritonbisect.core.untrusted import one_line
from tritonbisect.oracles.kernel_source import extract_kernel_source
from tritonbisect.oracles.runtime import (
    ALIGN,
    COMPILE_KEYS,
    DEFAULT_TIMEOUT,
    DTYPE_SIZES,
    _extent,
    _tensor_spec,
    launch_arg_specs,
)
from tritonbisect.oracles.standalone import REPLAY_HELPERS, copy_helpers
from tritonbisect.traces.reader import Launch, Trace, load_trace
from tritonbisect.traces.replayable import capture_reason, refuse_reason, stand_in_words

REPLAY_TEMPLATE = Path(__file__).with_name("replay_template.py")
REPLAY_SCRIPT = "replay.py"
REPLAY_CONTEXT = "replay_context.json"


@dataclass
class ReplayOracle:
    out_dir: Path
    script: Path
    context: dict[str, Any]
    warnings: list[str] = field(default_factory=list)
    not_replayed: list[NotReplayed] = field(default_factory=list)

    def summary(self) -> str:
        launches = self.context["launches"]
        kernels = list(self.context["kernels"])
        flows = sum(1 for launch in launches for a in launch["args"] if a.get("mode") == "flow")
        hosts = sum(1 for launch in launches for a in launch["args"] if a.get("mode") == "host_write")
        return (
            f"wrote {self.script} — {len(launches)} launches of {len(kernels)} kernels "
            f"({', '.join(kernels)}), {len(self.context['buffers'])} buffers; "
            f"{flows} inputs flow from earlier launches, {hosts} reloaded from their blobs (host writes, reused memory)"
        )


@dataclass
class NotReplayed:
    """Launches of one kernel the replay leaves out, and why."""

    kernel: str
    launches: list[int]  # indices among the kernel's launches
    reason: str
    # eager launches replayed in their place: (index, tensor arguments that were elsewhere in memory)
    stand_ins: list[tuple[int, list[str]]] = field(default_factory=list)
    layout_known: bool = False  # the trace says where a captured launch's tensors were (ours does)

    def line(self) -> str:
        ids = ", ".join(str(i) for i in self.launches[:8]) + (", …" if len(self.launches) > 8 else "")
        what = f"{len(self.launches)} launch{'es' if len(self.launches) != 1 else ''} of '{self.kernel}' ({ids})"
        text = f"not replayed: {what}: {self.reason}"
        for index, moved in self.stand_ins:
            text += f"; replayed in its place: its eager warm-up launch {index}, {stand_in_words(moved)}"
        if self.layout_known and len(self.stand_ins) < len(self.launches):
            text += ("; no eager launch of the same kernel with the same arguments was recorded before "
                     f"{'the others' if self.stand_ins else 'it' if len(self.launches) == 1 else 'them'}")
        return text


def plan_capture(trace: Trace, chosen: list[Launch]) -> tuple[list[Launch], list[NotReplayed]]:
    """Leave out the launches made during CUDA-graph capture (no data recorded) and the kernels
    that ran only in an autotuner's benchmark; say which, and which eager launch stands for each."""
    kept: list[Launch] = []
    left: dict[tuple[str, str], NotReplayed] = {}
    for launch in chosen:
        if not launch.graph_capture:
            kept.append(launch)
            continue
        reason = capture_reason(launch).removeprefix("was ")
        entry = left.setdefault((launch.name, reason), NotReplayed(launch.name, [], reason))
        entry.launches.append(launch.index)
        entry.layout_known = entry.layout_known or launch.layout() is not None
        warmup = trace.warmup_for(launch)
        if warmup is not None and warmup[0].index not in [i for i, _ in entry.stand_ins]:
            entry.stand_ins.append((warmup[0].index, warmup[1]))
    return kept, list(left.values())


def benchmark_only(trace: Trace, names: list[str] | None) -> list[NotReplayed]:
    result = []
    for name in names if names is not None else trace.kernels():
        launches = trace.launches_of(name)
        if launches and all(launch.autotune_benchmark for launch in launches):
            result.append(NotReplayed(name, [launch.index for launch in launches],
                                      "it ran only while an autotuner benchmarked it (no outputs recorded)"))
    return result


def select_launches(trace: Trace, launches: str) -> list[Launch]:
    """`all`, or a comma list of kernel names: their launches in trace order, without the
    autotuner's benchmark runs."""
    text = launches.strip()
    if not text:
        raise InputError("--launches wants 'all' or a comma list of kernel names")
    chosen = trace.launches
    if text != "all":
        names = [n.strip() for n in text.split(",") if n.strip()]
        if not names:
            raise InputError("--launches wants 'all' or a comma list of kernel names")
        for name in names:
            trace.require_kernel(name)  # unknown, or compiled but never launched: one line each
        chosen = [launch for launch in trace.launches if launch.name in names]
    chosen = [launch for launch in chosen if not launch.autotune_benchmark]
    if not chosen:
        raise InputError(f"trace {trace.root} has no launches to replay (only autotuner benchmark runs, or none)")
    return chosen


def _ptr(value: Any) -> int | None:
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, str):
        try:
            return int(value, 16)
        except ValueError:
            return None
    return None


def _plan_buffers(launch_specs: list[dict[str, Any]], warnings: list[str]) -> list[dict[str, Any]]:
    """Group every tensor (of every launch) whose recorded memory overlaps into one buffer;
    set each tensor's `buffer` and `byte_offset` (recorded alignment modulo ALIGN kept)."""
    items = []
    for launch in launch_specs:
        for t in launch["args"]:
            if t["kind"] != "tensor":
                continue
            size = DTYPE_SIZES[t["dtype"]]
            ptr = _ptr(t.pop("_data_ptr", None))
            extent = _extent(t["shape"], t["stride"]) * size
            items.append({"t": t, "size": size, "start": ptr, "end": None if ptr is None else ptr + max(extent, 1)})
    known = sorted((i for i in items if i["start"] is not None), key=lambda i: i["start"])
    groups: list[list[dict]] = []
    end = -1
    for item in known:
        if groups and item["start"] < end:
            groups[-1].append(item)
            end = max(end, item["end"])
        else:
            groups.append([item])
            end = item["end"]
    buffers: list[dict[str, Any]] = []

    def add(members: list[dict], alloc: int, hi: int) -> None:
        nbytes = hi - alloc
        nbytes += (-nbytes) % 16
        index = len(buffers)
        lo = min(m["start"] for m in members) - alloc
        buffers.append({"nbytes": max(nbytes, 16), "lo": lo, "hi": hi - alloc,  # bytes used: guards outside
                        "tensors": sorted({f"{m['t']['launch']}:{m['t']['name']}" for m in members})})
        for m in members:
            m["t"]["buffer"] = index
            m["t"]["byte_offset"] = m["start"] - alloc

    for group in groups:
        lo = min(i["start"] for i in group)
        alloc = lo - (lo % ALIGN)
        bad = [i for i in group if (i["start"] - alloc) % i["size"]]
        good = [i for i in group if i not in bad]
        if good:
            add(good, alloc, max(i["end"] for i in good))
        for i in bad:
            warnings.append(f"{i['t']['name']} of launch {i['t']['launch']} overlaps other tensors at an offset its "
                            "dtype cannot express: rebuilt apart")
            add([i], i["start"] - (i["start"] % ALIGN), i["end"])
    for item in items:
        if item["start"] is None:
            extent = _extent(item["t"]["shape"], item["t"]["stride"]) * item["size"]
            item["start"] = item["t"]["storage_offset"] * item["size"]
            add([item], 0, item["start"] + max(extent, 1))
    return buffers


def _plan_flow(launch_specs: list[dict[str, Any]], warnings: list[str]) -> None:
    """Each tensor argument's `mode`: `load` (first touch of its memory), `flow` (what the
    replay left there), or `host_write` (the trace shows the host changed it in between)."""
    history: dict[int, list[dict[str, Any]]] = {}  # buffer -> earlier tensor specs touching it
    for launch in launch_specs:
        for t in launch["args"]:
            if t["kind"] != "tensor":
                continue
            lo = t["byte_offset"]
            hi = lo + _extent(t["shape"], t["stride"]) * DTYPE_SIZES[t["dtype"]]
            earlier = [p for p in history.get(t["buffer"], []) if p["launch"] != t["launch"] and p["_lo"] < hi and lo < p["_hi"]]
            t["_lo"], t["_hi"] = lo, hi
            if not earlier:
                t["mode"] = "load"
            else:
                prev = earlier[-1]
                same_view = all(prev[k] == t[k] for k in ("dtype", "shape", "stride", "byte_offset"))
                before = t.get("before_hash")
                if same_view and before and prev.get("after_hash"):
                    t["mode"] = "flow" if prev["after_hash"] == before else "host_write"
                elif same_view:
                    t["mode"] = "flow"  # nothing recorded says the host touched it
                else:
                    # another view of memory an earlier launch used (often a freed block the
                    # allocator handed out again): what it holds cannot be checked against the
                    # recorded input, so the input's blob, where there is one, is the truth
                    t["mode"] = "host_write"
            if t["mode"] == "host_write" and t["init"]["source"] != "blob":
                warnings.append(f"{t['name']} of launch {t['launch']} was changed by the host before the launch "
                                "and has no blob: its data flows from the replay instead")
                t["mode"] = "flow"
            history.setdefault(t["buffer"], []).append(t)
    for launch in launch_specs:
        for t in launch["args"]:
            t.pop("_lo", None)
            t.pop("_hi", None)


def generate_replay(
    trace: Path | str | Trace,
    launches: str,
    out_dir: Path | str,
    *,
    timeout: float | None = None,
) -> ReplayOracle:
    """Write the replay oracle folder for the selected launches; InputError when it cannot."""
    tr = trace if isinstance(trace, Trace) else load_trace(Path(trace))
    chosen, not_replayed = plan_capture(tr, select_launches(tr, launches))
    names = None if launches.strip() == "all" else [n.strip() for n in launches.split(",") if n.strip()]
    not_replayed += benchmark_only(tr, names)
    if not chosen:
        raise InputError(f"trace {tr.root} has no launch to replay: " + "; ".join(n.line() for n in not_replayed))
    kernels: dict[str, dict[str, Any]] = {}
    keys: list[str] = []
    for launch in chosen:  # every refusal before anything is written
        reason = refuse_reason(tr, launch)
        if reason:
            raise InputError(reason)
        comp = tr.compilation_of(launch)
        assert comp is not None
        key = launch.name if launch.name not in kernels or kernels[launch.name]["hash"] == comp.hash else f"{launch.name}#{comp.hash[:8]}"
        if key not in kernels:
            ks = extract_kernel_source(comp.python_source, launch.name)
            kernels[key] = {"name": launch.name, "hash": comp.hash, "source": ks.text, "params": ks.params,
                            "autotuned": ks.autotuned, "dropped_decorators": ks.dropped_decorators}
        if sorted(kernels[key]["params"]) != sorted(launch.args):
            raise InputError(
                f"the source of '{launch.name}' in the trace does not match launch {launch.index} "
                f"({launch.where()}): parameters {kernels[key]['params']}, recorded arguments {list(launch.args)}"
            )
        keys.append(key)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    warnings: list[str] = []
    copied: dict[Path, str] = {}
    specs: list[dict[str, Any]] = []
    for order, (launch, key) in enumerate(zip(chosen, keys, strict=True)):
        comp = tr.compilation_of(launch)
        assert comp is not None
        params = kernels[key]["params"]

        def tensor(name: str, info: dict[str, Any], after: Any, launch: Launch = launch,
                   order: int = order) -> dict[str, Any]:
            spec = _tensor_spec(name, info, launch, tr, out, copied, warnings, after)
            spec.pop("recorded_data_ptr", None)
            spec["launch"] = order
            spec["before_hash"] = info.get("tensor_hash")
            spec["after_hash"] = after.get("tensor_hash") if isinstance(after, dict) else None
            return spec

        args = launch_arg_specs(launch, params, tensor)
        meta = dict(comp.metadata)
        meta.update({k: v for k, v in launch.compilation_metadata.items() if k in COMPILE_KEYS})
        specs.append({
            "order": order, "kernel": key, "name": launch.name, "index": launch.index, "where": launch.where(),
            "grid": list(launch.grid), "compile": {k: meta.get(k) for k in COMPILE_KEYS if k in meta},
            "env": meta.get("env") if isinstance(meta.get("env"), dict) else {}, "args": args,
        })  # fmt: skip
    buffers = _plan_buffers(specs, warnings)
    _plan_flow(specs, warnings)
    context: dict[str, Any] = {
        "schema": 1,
        "kind": "replay",
        "generator": f"tritonbisect {__version__}",
        "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "trace": {"path": str(tr.root)},
        "kernels": kernels,
        "launches": specs,
        "buffers": buffers,
        "seed": 0,
        "timeout": float(timeout) if timeout else DEFAULT_TIMEOUT,
        "tolerances": {},
        "warnings": warnings,
        "not_replayed": [asdict(n) for n in not_replayed],
    }
    _write_folder(out, context, chosen)
    return ReplayOracle(out_dir=out, script=out / REPLAY_SCRIPT, context=context, warnings=warnings,
                        not_replayed=not_replayed)


def _write_folder(out: Path, context: dict[str, Any], chosen: list[Launch]) -> None:
    # the single-launch oracle's helpers (blob loading, comparison…) and the replay's workers
    copy_helpers(out, REPLAY_HELPERS)
    header = (
        f"# Generated by tritonbisect {__version__}: replay of {len(chosen)} launches from {one_line(context['trace']['path'])}"
    )
    text = REPLAY_TEMPLATE.read_text(encoding="utf-8").replace("# <<HEADER>>", header, 1)
    script = out / REPLAY_SCRIPT
    script.write_text(text, encoding="utf-8")
    script.chmod(0o755)
    (out / REPLAY_CONTEXT).write_text(json.dumps(context, indent=1) + "\n", encoding="utf-8")


def replay_commands(out_dir: Path, *, timeout: float | None = None) -> tuple[str, str]:
    """(record command, compare command) of a replay oracle folder."""
    import shlex

    root = Path(out_dir).resolve()
    script = shlex.quote(str(root / REPLAY_SCRIPT))
    golden = shlex.quote(str(root / "golden_replay.pt"))
    extra = f" --timeout {timeout:g}" if timeout else ""
    return f"python {script} --record-golden {golden}{extra}", f"python {script} --golden {golden}{extra}"
