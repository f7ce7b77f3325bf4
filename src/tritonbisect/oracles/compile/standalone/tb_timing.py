# ruff: noqa: UP031  (runs on the target's Python, which may be older than the tool's)
"""Where a compile's time goes: the stages of triton.compile timed from inside the child, and
the pass timings MLIR and LLVM print when asked.

In the child (`Timer.install` before triton.compile): every stage the backend adds (ttir,
ttgir, llir, ptx, cubin; amdgcn, hsaco) and the frontend (`src.make_ir`, Python AST to TTIR)
are wrapped, and each records its wall and CPU seconds (the process's and its waited-for
children's: ptxas runs as one) and the byte offsets of the child's stderr before and after it.

Every release from 3.2.0 to 3.9.0 (those checked) prints, with MLIR_ENABLE_TIMING=1, one MLIR "Execution time report"
per pass-manager run (wall time per pass, nested in pipelines, analyses marked "(A)") and,
with LLVM_ENABLE_TIMING=1, LLVM's legacy "Pass execution timing report" of the code
generator (user/system/wall columns). LLVM's optimization pipeline (the llir stage's O3) and
ptxas print no timings: they are what is left of their stage once its timed passes are taken
out. `parse_reports` reads the reports out of the stderr text and gives each to the stage
whose offsets hold it; `breakdown` makes the flat list narrowing compares:

    {"name": "TritonGPURemoveLayoutConversions", "kind": "mlir", "stage": "ttgir",
     "seconds": 0.08, "runs": 4}

kinds: mlir, llvm (a code-generator pass), rest (an MLIR pass manager's time outside its
passes, its report's Rest), stage (a stage's time outside its timed passes: "ptxas" for
cubin, "LLVM IR translation and optimization" for llir, the frontend, ...).
Standard library only; copied verbatim into compile-oracle folders.
"""

import contextlib
import os
import re
import resource
import time

REST = "Rest"  # MLIR's name for a pass manager's time outside its passes
TIMING_ENV = {"MLIR_ENABLE_TIMING": "1", "LLVM_ENABLE_TIMING": "1"}

# what a stage's time outside its timed passes is, by the stage's name
UNTIMED = {
    "frontend": "frontend (Python AST to TTIR)",
    "ttir": "TTIR stage outside its timed passes",
    "ttgir": "TTGIR stage outside its timed passes",
    "llir": "LLVM IR translation and optimization (llir stage)",
    "ptx": "LLVM code generation outside its timed passes (ptx stage)",
    "cubin": "ptxas (cubin stage)",
    "amdgcn": "LLVM code generation outside its timed passes (amdgcn stage)",
    "hsaco": "linking the code object (hsaco stage)",
}


def _cpu():
    own = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


def _stderr_offset():
    try:
        import sys

        sys.stderr.flush()
        return os.lseek(2, 0, os.SEEK_CUR)
    except (OSError, ValueError):
        return None


KEY = "tritonbisect-compile-time"  # the cache key's Triton part in a timed compile


def warm_up():
    """Keep out of the time what the first triton.compile of a process does whatever the kernel:
    import the code generator (3.9's imports Gluon: half a second where the installer wrote no
    .pyc files), and hash Triton's own files and libtriton.so (`triton_key`, over a second of
    CPU for a 500 MB library), which a fresh TRITON_CACHE_DIR and TRITON_ALWAYS_COMPILE=1 make
    pointless: a constant stands for it, as in Triton's own compile workers (3.9's
    _compile_warmup_pool). Returns whether this Triton has a triton_key."""
    with contextlib.suppress(ImportError):
        __import__("triton.compiler.code_generator")
    for module_name in ("triton.runtime.cache", "triton.compiler.compiler"):
        try:
            module = __import__(module_name, fromlist=["triton_key"])
        except ImportError:
            continue
        if callable(getattr(module, "triton_key", None)):
            setattr(module, "triton_key", lambda: KEY)  # noqa: B010 (a module found at run time)
            return True
    return False


class Timer:
    """Stage times of one triton.compile, recorded from inside it."""

    def __init__(self):
        self.stages = []  # {"stage", "wall", "cpu", "err_start", "err_end"} in the order run
        self.total = None

    def timed(self, name, fn):
        def run(*args, **kwargs):
            start = {"stage": name, "err_start": _stderr_offset()}
            w0, c0 = time.perf_counter(), _cpu()
            try:
                return fn(*args, **kwargs)
            finally:
                start.update(wall=round(time.perf_counter() - w0, 6), cpu=round(_cpu() - c0, 6),
                             err_end=_stderr_offset())
                self.stages.append(start)

        return run

    def install(self, backend, src):
        """Wrap the stages `backend`'s class adds from now on, and `src.make_ir` (the frontend)."""
        cls = type(backend)
        original = cls.add_stages
        timer = self

        def add_stages(self, stages, *args, **kwargs):
            original(self, stages, *args, **kwargs)
            for name in list(stages):
                stages[name] = timer.timed(name, stages[name])

        cls.add_stages = add_stages
        if src is not None and hasattr(src, "make_ir"):
            # a source whose make_ir cannot be replaced keeps its time in the total
            with contextlib.suppress(AttributeError):
                src.make_ir = self.timed("frontend", src.make_ir)

    def to_dict(self):
        return {"stages": list(self.stages), "total": self.total}


# --- reading the reports ------------------------------------------------------------------

_MLIR_HEAD = re.compile(r"^\s*\.\.\. Execution time report \.\.\.\s*$", re.M)
_LLVM_HEAD = re.compile(r"^\s*(Pass|Analysis) execution timing report\s*$", re.M)
_RULE = re.compile(r"^===-+===\s*$")
_MLIR_ROW = re.compile(r"^(\s*)(-?\d+\.\d+)\s+\(\s*-?[\d.]+%\)\s{2}(\s*)(\S.*?)\s*$")
_VALUE = re.compile(r"(-?\d+\.\d+)\s+\(\s*-?[\d.]+%\)")
_COLUMN = re.compile(r"-{2,}\s*([A-Za-z+ ]+?)\s*-{2,}")
_INSTANCE = re.compile(r" #\d+$")


def _block_end(lines, i):
    """The index after a report's rows starting at line i (a blank line after rows, or the next rule)."""
    seen = False
    while i < len(lines):
        line = lines[i]
        if _RULE.match(line):
            return i
        if not line.strip():
            if seen:
                return i
        else:
            seen = True
        i += 1
    return i


def _mlir_rows(lines):
    """(depth, seconds, name) of an MLIR report's rows: depth from the name's indentation."""
    rows = []
    for line in lines:
        m = _MLIR_ROW.match(line)
        if m:
            rows.append((len(m.group(3)) // 2, float(m.group(2)), m.group(4)))
    return rows


def _mlir_passes(rows):
    """The passes of an MLIR report and their wall seconds: every row but pipelines (their
    passes are listed inside them), analyses (inside the pass that asked for them) and Total;
    REST, the pass manager's time outside its passes, is kept."""
    out = []
    for _depth, seconds, name in rows:
        if name == "Total" or name.startswith("(A)") or name.endswith(" Pipeline"):
            continue
        out.append((name, max(seconds, 0.0)))
    return out


def _llvm_passes(lines):
    """The passes of an LLVM timing report and their wall seconds (the Wall Time column, else
    the last one), instance suffixes (` #2`) dropped."""
    columns = None
    out = []
    for line in lines:
        if "--- Name ---" in line:
            columns = [c.strip() for c in _COLUMN.findall(line.split("--- Name ---")[0])]
            continue
        if columns is None:
            continue
        values = _VALUE.findall(line)
        if not values or len(values) != len(columns):
            continue
        name = _VALUE.split(line)[-1].strip()
        if not name or name == "Total":
            continue
        col = columns.index("Wall Time") if "Wall Time" in columns else len(columns) - 1
        out.append((_INSTANCE.sub("", name), max(float(values[col]), 0.0)))
    return out


def parse_reports(text):
    """The timing reports in `text` (a child's stderr), in order:
    [{"kind": "mlir"|"llvm", "offset": byte offset of its header, "passes": [(name, seconds)]}]."""
    reports = []
    data = text.encode("utf-8", "replace")
    for kind, head in (("mlir", _MLIR_HEAD), ("llvm", _LLVM_HEAD)):
        for m in head.finditer(text):
            rest = text[m.end():].split("\n")
            # skip the rule under the title and the "Total Execution Time" line
            i = 0
            while i < len(rest) and (not rest[i].strip() or _RULE.match(rest[i]) or "Total Execution Time" in rest[i]):
                i += 1
            body = rest[i:_block_end(rest, i)] if i < len(rest) else []
            passes = _mlir_passes(_mlir_rows(body)) if kind == "mlir" else _llvm_passes(body)
            offset = len(text[:m.start()].encode("utf-8", "replace"))
            reports.append({"kind": kind, "offset": min(offset, len(data)), "passes": passes})
    reports.sort(key=lambda r: r["offset"])
    return reports


def _stage_of(offset, stages):
    for st in stages:
        lo, hi = st.get("err_start"), st.get("err_end")
        if lo is not None and hi is not None and lo <= offset < hi:
            return st["stage"]
    return None


def breakdown(timing, stderr_text):
    """Flat list of where the time went (see the module docstring), largest first."""
    stages = list((timing or {}).get("stages") or [])
    items: dict = {}

    def add(name, kind, stage, seconds, runs=1):
        key = (kind, name)
        item = items.setdefault(key, {"name": name, "kind": kind, "stage": stage, "seconds": 0.0, "runs": 0})
        item["seconds"] += seconds
        item["runs"] += runs
        if item["stage"] != stage:
            item["stage"] = item["stage"] if stage is None else (stage if item["stage"] is None else "several")

    timed_in: dict = {}
    for report in parse_reports(stderr_text or ""):
        stage = _stage_of(report["offset"], stages)
        for name, seconds in report["passes"]:
            kind = report["kind"]
            if name == REST:  # each pass manager's own: the stage tells them apart
                name, kind = "MLIR time outside the passes, %s stage (the report's Rest)" % (stage or "?"), "rest"
            add(name, kind, stage, seconds)
            if stage is not None:
                timed_in[stage] = timed_in.get(stage, 0.0) + seconds
    for st in stages:
        name = st["stage"]
        left = max(0.0, float(st.get("wall") or 0.0) - timed_in.get(name, 0.0))
        add(UNTIMED.get(name, "%s stage outside its timed passes" % name), "stage", name, left)
    out = []
    for item in items.values():
        item["seconds"] = round(item["seconds"], 6)
        out.append(item)
    out.sort(key=lambda it: -it["seconds"])
    return out


def stage_seconds(timing):
    """{stage: wall seconds} (a stage run twice is summed)."""
    out: dict = {}
    for st in (timing or {}).get("stages") or []:
        out[st["stage"]] = round(out.get(st["stage"], 0.0) + float(st.get("wall") or 0.0), 6)
    return out


# --- one compile's time, as the oracle reports it -------------------------------------------

CLOCKS = ("cpu", "wall")


def record(child, stderr_text=None, clock="cpu"):
    """The compile time of a child's result (tb_child with job["timing"]): the metric on
    `clock` (cpu: the compile's CPU seconds, its own and ptxas's, which other tenants of the
    machine barely move; wall: its elapsed seconds), both clocks, the stages, and where the
    time went when `stderr_text` holds the MLIR/LLVM timing reports."""
    if clock not in CLOCKS:
        raise ValueError("clock must be cpu or wall, not %r" % (clock,))
    timing = child.get("timing") or {}
    wall, cpu = child.get("compile_seconds"), child.get("compile_cpu_seconds")
    out = {
        "clock": clock,
        "metric": cpu if clock == "cpu" else wall,
        "seconds": wall,
        "cpu_seconds": cpu,
        "stages": [{"stage": st["stage"], "wall": st.get("wall"), "cpu": st.get("cpu")} for st in timing.get("stages") or []],
    }
    if stderr_text is not None:
        out["passes"] = breakdown(timing, stderr_text)
    return out


def describe(rec, passes=3):
    """`1.234 s of CPU (2.9 s wall; frontend 0.05, ttgir 0.2, llir 0.6, ptx 0.1, cubin 0.3 s of CPU)`."""
    key = "cpu" if rec["clock"] == "cpu" else "wall"
    first = "%.3f s %s" % (rec["metric"], "of CPU" if key == "cpu" else "wall")
    other = "%.3f s wall" % rec["seconds"] if key == "cpu" else "%.3f s of CPU" % rec["cpu_seconds"]
    stages = ", ".join("%s %.3g" % (st["stage"], st[key] or 0.0) for st in rec["stages"])
    text = "%s (%s%s)" % (first, other, "; stages: " + stages if stages else "")
    top = [p for p in rec.get("passes") or [] if p["kind"] != "stage"][:passes]
    if top:
        text += "; slowest passes: " + ", ".join("%s %.3g s" % (p["name"], p["seconds"]) for p in top)
    return text
