# ruff: noqa: UP031  (runs on the target's Python, which may be older than the tool's)
"""Codegen statistics of one compiled kernel, and their differences against a golden.

    stats = collect(artifacts, metadata, triton_dir)   # {"regs": 40, "spills": 0, "ptx.wgmma": 64, ...}
    diffs = compare(golden_stats, stats, parse_thresholds(["spills=0", "regs=10%"]))
    "; ".join(d.describe() for d in diffs if d.over)  # "spills 0 → 48; PTX wgmma instructions 64 → 0"

Statistics are flat metric -> number:
  from the compile metadata   shared, num_warps, num_stages, num_ctas, tmem_size, global_scratch_size
  NVIDIA, from the cubin      regs, spills ((local + stack frame bytes) / 4: the driver's n_spills),
                              local_bytes, stack  (cuobjdump -res-usage, which ships in the wheel)
                              sass.<OPCODE> per opcode family, sass.total  (cuobjdump -sass / nvdisasm)
  NVIDIA, from the PTX        ptx.<op> per instruction (ld.global, st.shared, wgmma, mma, cp.async…), ptx.total
  AMD, from the amdgcn        regs (VGPRs), sgprs, spills (scratch bytes / 4), vgpr_spills, sgpr_spills,
                              amdgcn.<op family> (v_mfma, global_load, ds_read…), amdgcn.total
Opcode families drop modifiers (LDG.E.128 -> LDG, ld.global.v4.b32 -> ld.global), so a change
of vector width or register numbering is not a codegen change, but a lost wgmma is.

Standard library only; copied verbatim into compile-oracle folders.
"""

import fnmatch
import os
import re
import shutil
import subprocess

METADATA_KEYS = ("shared", "num_warps", "num_stages", "num_ctas", "tmem_size", "global_scratch_size", "maxnreg")

# Defaults of --check codegen: resources, and the instruction families that decide a kernel's
# speed (tensor-core MMAs, async copies and TMA, local-memory traffic). Every other change is
# reported but not checked. METRIC=LIMIT: LIMIT an absolute count ("0": any change) or a share
# of the golden value ("10%"); the first matching pattern wins.
DEFAULT_THRESHOLDS = (
    ("regs", "10%"),
    ("sgprs", "10%"),
    ("spills", "0"),
    ("vgpr_spills", "0"),
    ("sgpr_spills", "0"),
    ("local_bytes", "0"),
    ("stack", "0"),
    ("shared", "0"),
    ("tmem_size", "0"),
    ("global_scratch_size", "0"),
    ("num_*", "0"),
    ("ptx.wgmma", "10%"),
    ("ptx.mma", "10%"),
    ("ptx.tcgen05", "10%"),
    ("ptx.cp.async", "25%"),
    ("ptx.ld.local", "0"),
    ("ptx.st.local", "0"),
    ("sass.HGMMA", "10%"),
    ("sass.HMMA", "10%"),
    ("sass.IMMA", "10%"),
    ("sass.QGMMA", "10%"),
    ("sass.UTC*", "10%"),
    ("sass.UTMA*", "25%"),
    ("sass.LDGSTS", "25%"),
    ("sass.LDL", "0"),
    ("sass.STL", "0"),
    ("amdgcn.v_mfma", "10%"),
    ("amdgcn.v_wmma", "10%"),
    ("amdgcn.scratch_*", "0"),
    ("*.total", "25%"),
)

LABELS = {
    "regs": "registers",
    "sgprs": "scalar registers",
    "spills": "spills",
    "vgpr_spills": "VGPR spills",
    "sgpr_spills": "SGPR spills",
    "local_bytes": "local memory bytes",
    "stack": "stack bytes",
    "shared": "shared memory bytes",
    "tmem_size": "tensor memory",
    "global_scratch_size": "global scratch bytes",
}

_PTX_SPACES = {"global", "shared", "local", "const", "param", "async", "bulk", "tensor", "cluster"}
_PTX_OPCODE = re.compile(r"^(?:@!?%\w+\s+)?([a-z][a-z0-9_]*(?:\.[A-Za-z0-9_:]+)*)(?:\s|;|$)")
_SASS_LINE = re.compile(r"/\*[0-9a-fA-F]{4,}\*/\s+(?:@!?U?P[T0-9]+\s+)?([A-Z][A-Z0-9_]*)(?:\.[A-Z0-9_.]*)?")
_RES_USAGE = re.compile(r"REG:(\d+)\s+STACK:(\d+)\s+SHARED:(\d+)\s+LOCAL:(\d+)")
_AMD_KEYS = (
    (re.compile(r"^\s*;\s*NumVgprs:\s*(\d+)", re.M), "regs"),
    (re.compile(r"^\s*;\s*NumSgprs:\s*(\d+)", re.M), "sgprs"),
    (re.compile(r"^\s*;\s*ScratchSize:\s*(\d+)", re.M), "local_bytes"),
    (re.compile(r"\.vgpr_spill_count:\s*(\d+)"), "vgpr_spills"),
    (re.compile(r"\.sgpr_spill_count:\s*(\d+)"), "sgpr_spills"),
)
_AMD_OPCODE = re.compile(r"^\s+([sv]_[a-z0-9_]+|global_[a-z0-9_]+|buffer_[a-z0-9_]+|ds_[a-z0-9_]+|"
                         r"scratch_[a-z0-9_]+|flat_[a-z0-9_]+)\b")


# --- collection -------------------------------------------------------------------------


def ptx_counts(ptx):
    """Instruction counts by op (`ld.global`, `wgmma`, `mma`, `cp.async`, `bar`, …)."""
    counts: dict = {}
    total = 0
    for raw in ptx.splitlines():
        line = raw.split("//", 1)[0].strip()
        if not line or line[0] in ".{}()$" or line.endswith(":") or line.startswith("#"):
            continue
        for stmt in line.split(";"):
            stmt = stmt.strip().lstrip("{").strip()
            m = _PTX_OPCODE.match(stmt)
            if not m:
                continue
            parts = m.group(1).split(".")
            key = parts[0]
            if len(parts) > 1 and parts[1] in _PTX_SPACES:
                key += "." + parts[1]
            counts[key] = counts.get(key, 0) + 1
            total += 1
    out = {"ptx." + k: v for k, v in counts.items()}
    out["ptx.total"] = total
    return out


def sass_counts(sass):
    counts: dict = {}
    total = 0
    for m in _SASS_LINE.finditer(sass):
        op = m.group(1)
        if op == "NOP":
            continue
        counts[op] = counts.get(op, 0) + 1
        total += 1
    if not total:
        return {}
    out = {"sass." + k: v for k, v in counts.items()}
    out["sass.total"] = total
    return out


def amdgcn_counts(text):
    out = {}
    for pattern, key in _AMD_KEYS:
        m = pattern.search(text)
        if m:
            out[key] = int(m.group(1))
    if "local_bytes" in out:
        out["spills"] = out["local_bytes"] // 4
    counts: dict = {}
    total = 0
    for line in text.splitlines():
        m = _AMD_OPCODE.match(line)
        if not m:
            continue
        parts = m.group(1).split("_")
        key = "_".join(parts[:2])
        if key in ("s_nop",):
            continue
        counts[key] = counts.get(key, 0) + 1
        total += 1
    out.update({"amdgcn." + k: v for k, v in counts.items()})
    if total:
        out["amdgcn.total"] = total
    return out


def find_tool(name, triton_dir=None):
    """A CUDA tool from the wheel (triton/backends/nvidia/bin), else from PATH."""
    env = os.environ.get("TRITON_%s_PATH" % name.upper())
    if env and os.path.isfile(env):
        return env
    if triton_dir:
        candidate = os.path.join(triton_dir, "backends", "nvidia", "bin", name)
        if os.path.isfile(candidate) and os.access(candidate, os.X_OK):
            return candidate
    return shutil.which(name)


def _run(cmd, timeout=120):
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return None, str(exc)
    if proc.returncode != 0:
        return None, (proc.stderr or proc.stdout).strip()[-300:] or "exit %d" % proc.returncode
    return proc.stdout, None


def cubin_stats(cubin, triton_dir=None, notes=None):
    """regs/spills/local/stack (cuobjdump -res-usage) and SASS counts (cuobjdump -sass, else nvdisasm)."""
    notes = notes if notes is not None else []
    out: dict = {}
    cuobjdump = find_tool("cuobjdump", triton_dir)
    nvdisasm = find_tool("nvdisasm", triton_dir)
    if cuobjdump:
        text, err = _run([cuobjdump, "-res-usage", cubin])
        m = _RES_USAGE.search(text or "")
        if m:
            regs, stack, _shared, local = (int(g) for g in m.groups())
            # the driver's n_spills is its local memory per thread / 4, and the stack frame
            # that spill code uses lives in local memory
            out.update(regs=regs, stack=stack, local_bytes=local, spills=(local + stack) // 4)
        else:
            notes.append("cuobjdump -res-usage: %s" % (err or "no resource line"))
        text, err = _run([cuobjdump, "-sass", cubin])
        sass = sass_counts(text or "")
        if sass:
            out.update(sass)
            return out
        notes.append("cuobjdump -sass: %s" % (err or "no instructions"))
    else:
        notes.append("cuobjdump not found: no register or spill counts")
    if nvdisasm:
        text, err = _run([nvdisasm, "-c", cubin])
        sass = sass_counts(text or "")
        if sass:
            out.update(sass)
        else:
            notes.append("nvdisasm: %s" % (err or "no instructions"))
    else:
        notes.append("nvdisasm not found: no SASS statistics")
    return out


def collect(artifacts, metadata, triton_dir=None):
    """(stats, notes) of one compiled kernel: artifacts maps an extension to its file."""
    notes: list = []
    stats = {}
    for key in METADATA_KEYS:
        value = (metadata or {}).get(key)
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            continue
        stats[key] = value
    if artifacts.get("ptx"):
        with open(artifacts["ptx"], encoding="utf-8", errors="replace") as fh:
            stats.update(ptx_counts(fh.read()))
    if artifacts.get("cubin"):
        stats.update(cubin_stats(artifacts["cubin"], triton_dir, notes))
    if artifacts.get("amdgcn"):
        with open(artifacts["amdgcn"], encoding="utf-8", errors="replace") as fh:
            stats.update(amdgcn_counts(fh.read()))
    return stats, notes


# --- comparison -------------------------------------------------------------------------


class Threshold:
    def __init__(self, pattern, text):
        self.pattern = pattern
        self.text = text
        value = text.strip()
        self.relative = value.endswith("%")
        try:
            self.limit = float(value[:-1] if self.relative else value)
        except ValueError:
            raise ValueError("threshold %s=%s: the limit must be a number or a percentage (e.g. 0, 4, 10%%)"
                             % (pattern, text)) from None
        if self.limit < 0:
            raise ValueError("threshold %s=%s: the limit must not be negative" % (pattern, text))

    def exceeded(self, old, new):
        delta = abs(new - old)
        if delta == 0:
            return False
        if self.relative:
            return delta > self.limit / 100.0 * max(abs(old), 1)
        return delta > self.limit

    def __repr__(self):
        return "%s=%s" % (self.pattern, self.text)


def parse_thresholds(items):
    """["spills=0", "regs=10%", "sass.*=25%"] -> [Threshold]; None or [] -> the defaults."""
    if not items:
        return [Threshold(p, t) for p, t in DEFAULT_THRESHOLDS]
    out = []
    for item in items:
        pattern, sep, text = str(item).partition("=")
        if not sep or not pattern.strip():
            raise ValueError("threshold %r: expected METRIC=LIMIT, e.g. spills=0 or regs=10%%" % (item,))
        out.append(Threshold(pattern.strip(), text))
    return out


def threshold_for(metric, thresholds):
    for t in thresholds:
        if fnmatch.fnmatchcase(metric, t.pattern):
            return t
    return None


class Difference:
    def __init__(self, metric, old, new, threshold):
        self.metric = metric
        self.old = old
        self.new = new
        self.threshold = threshold
        self.over = threshold is not None and threshold.exceeded(old, new)

    def label(self):
        if self.metric in LABELS:
            return LABELS[self.metric]
        family, _, op = self.metric.partition(".")
        if op == "total":
            return "%s instructions (total)" % family.upper()
        if family in ("ptx", "sass", "amdgcn"):
            return "%s %s instructions" % (family.upper(), op)
        return self.metric

    def describe(self):
        def show(v):
            return ("%d" % v) if float(v).is_integer() else ("%.4g" % v)

        text = "%s %s → %s" % (self.label(), show(self.old), show(self.new))
        if self.old and self.metric not in ("spills", "local_bytes", "stack"):
            text += " (%+.0f%%)" % (100.0 * (self.new - self.old) / abs(self.old))
        return text

    def to_dict(self):
        return {"metric": self.metric, "old": self.old, "new": self.new, "over_threshold": self.over,
                "threshold": repr(self.threshold) if self.threshold else None, "text": self.describe()}


def compare(golden, stats, thresholds):
    """Every metric that changed (a metric missing on one side counts as 0), checked ones first.

    A metric is checked when a threshold pattern matches it; only metrics both sides could
    measure are compared (a SASS count missing because a tool was missing is not a change)."""
    families = set()
    for side in (golden, stats):
        for key in side:
            if "." in key:
                families.add(key.split(".", 1)[0])
    measured = {f for f in families if f + ".total" in golden and f + ".total" in stats}
    out = []
    for metric in sorted(set(golden) | set(stats)):
        if "." in metric and metric.split(".", 1)[0] not in measured:
            continue
        if "." not in metric and (metric not in golden or metric not in stats):
            continue
        old = golden.get(metric, 0)
        new = stats.get(metric, 0)
        if not isinstance(old, (int, float)) or not isinstance(new, (int, float)) or old == new:
            continue
        out.append(Difference(metric, old, new, threshold_for(metric, thresholds)))
    # the most telling first: resources, then by size of the change
    out.sort(key=lambda d: (not d.over, "." in d.metric, -abs(d.new - d.old)))
    return out


def summary(stats):
    """One line: the headline numbers of a compile."""
    parts = []
    for key in ("regs", "spills", "shared", "num_warps", "num_stages"):
        if key in stats:
            parts.append("%s %s" % (LABELS.get(key, key), stats[key]))
    for family in ("ptx", "sass", "amdgcn"):
        if family + ".total" in stats:
            parts.append("%s %d instructions" % (family.upper(), stats[family + ".total"]))
    return ", ".join(parts)
