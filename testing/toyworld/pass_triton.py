"""A toy Triton whose compiler is a pipeline of named passes, for pass-level narrowing.

`make_pass_triton(path)` writes a git repository of a pure-Python `triton` package (under
python/triton) that the compile oracle's child can drive with an IR job: GPUTarget,
make_backend, parse_options and `triton.compile(path_to.ttir, target=..., options=...)`.
Its compile runs three pipelines of named passes over the IR text (ttir, ttgir, llir); under
MLIR_ENABLE_DUMP=1 it prints the IR before every pass to stderr in MLIR's own format:

    // -----// IR Dump Before TritonGPUCoalesce (tritongpu-coalesce) ('builtin.module' operation) //----- //

Like the real backends, the stages are added by `backend.add_stages(stages, options)` and run
in order from the source's own; every pass does a fixed amount of CPU work (`_work`), and
under MLIR_ENABLE_TIMING=1 each stage prints MLIR's "Execution time report" of its passes to
stderr, as the real pass managers do.

History (commits oldest first; `truth` names them):
    0           the toy, every pass well-behaved
    1 .. c-1    fillers (notes)
    c           the culprit: TritonGPUCoalesce picks sizePerThread = [1] instead of [4]
                (`planted`: "error" -> TritonGPURemoveLayoutConversions later rejects that
                layout, a compile error; "crash" -> it aborts, SIGABRT). The same commit
                also renames SSA values and moves locations in ConvertTritonToTritonGPU: noise that
                narrowing must not count as a difference. `planted="slow"`: the culprit
                compiles the same IR, but TritonGPURemoveLayoutConversions does `slow` times
                the whole pipeline's work more (0.2: a compile about 20% slower).
    c+1 .. n-1  fillers

Like the real tree, the passes are also declared in include/triton/Dialect/TritonGPU/Transforms/
Passes.td and "implemented" in lib/Dialect/TritonGPU/Transforms/<Pass>.cpp (GEN_PASS_DEF_...,
impl::...Base): the culprit and the fillers listed in `touch_pass` change Coalesce.cpp, so a
hint about the pass (--prefer-pass) has sources and commits to weigh.

Build: `mkdir -p build && cp -r python/triton build/` (artifact `build`, env PYTHONPATH=build).
"""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

from testing.toyworld.gitstream import git_env

BUILD_COMMAND = "rm -rf build && mkdir -p build && cp -r python/triton build/"
ARTIFACT = "build"
PLANTED_PASS = "TritonGPUCoalesce"
FAILING_PASS = "TritonGPURemoveLayoutConversions"
SLOW_PASS = "TritonGPURemoveLayoutConversions"  # planted="slow": the pass whose time grows
WORK = 50_000  # iterations of every pass's work: a few ms each

_BACKENDS = '''
import collections

GPUTarget = collections.namedtuple("GPUTarget", ["backend", "arch", "warp_size"])
'''

_COMPILER = '''
"""The toy compiler: named passes over the IR text."""
import dataclasses
import os
import re
import sys
import time


@dataclasses.dataclass(frozen=True)
class Options:
    num_warps: int = 4
    num_stages: int = 3
    num_ctas: int = 1


class Backend:
    def __init__(self, target):
        self.target = target

    def parse_options(self, opts):
        known = {f.name for f in dataclasses.fields(Options)}
        return Options(**{k: v for k, v in opts.items() if k in known})

    def add_stages(self, stages, options):
        for stage, passes in PIPELINES:
            stages[stage] = (lambda passes: lambda ir, metadata: run_pipeline(ir, passes, options))(passes)


def make_backend(target):
    return Backend(target)


class CompiledKernel:
    def __init__(self, asm, metadata):
        self.asm = asm
        self.metadata = metadata


# --- passes ------------------------------------------------------------------------------

WORK = @@WORK@@  # iterations of every pass's own work


def _work(units):
    """Fixed CPU work (some tens of nanoseconds an iteration), as a real pass's is."""
    x = 1
    for _ in range(int(units)):
        x = (x * 1103515245 + 12345) & 0x7FFFFFFF
    return x


def combine_ops(ir, opts):
    return ir.replace("arith.addi %a, %zero", "%a")


def canonicalize(ir, opts):
    return re.sub(r"\\n\\s*\\n+", "\\n", ir)


def cse(ir, opts):
    return ir


def convert_to_gpu(ir, opts):
    if "#blocked" in ir:
        return ir
@@CANON@@
    layout = "#blocked = #ttg.blocked<{sizePerThread = [4], threadsPerWarp = [32], warpsPerCTA = [%d], order = [0]}>" % opts.num_warps
    return layout + "\\n" + ir.replace("module {", 'module attributes {"ttg.num-warps" = %d : i32} {' % opts.num_warps, 1)


def coalesce(ir, opts):
@@COALESCE@@
    return ir


def remove_layout_conversions(ir, opts):
@@SLOW@@
    if "sizePerThread = [1]" in ir:
@@FAIL@@
    return ir.replace("ttg.convert_layout", "ttg.convert_layout_folded")


def optimize_thread_locality(ir, opts):
    return ir


def to_llvm(ir, opts):
    vec = re.search(r"sizePerThread = \\[(\\d+)\\]", ir)
    width = vec.group(1) if vec else "1"
    return "; toy LLVM IR, vector width %s\\n" % width + "\\n".join("; " + line for line in ir.splitlines())


def llvm_opt(ir, opts):
    return ir + "\\n; optimized"


PIPELINES = [
    ("ttir", [("TritonCombineOps", "triton-combine", combine_ops),
              ("Canonicalizer", "canonicalize", canonicalize),
              ("CSE", "cse", cse)]),
    ("ttgir", [("ConvertTritonToTritonGPU", "convert-triton-to-tritongpu", convert_to_gpu),
               ("TritonGPUCoalesce", "tritongpu-coalesce", coalesce),
               ("TritonGPURemoveLayoutConversions", "tritongpu-remove-layout-conversions", remove_layout_conversions),
               ("TritonGPUOptimizeThreadLocality", "tritongpu-optimize-thread-locality", optimize_thread_locality),
               ("Canonicalizer", "canonicalize", canonicalize)]),
    ("llir", [("ConvertTritonGPUToLLVM", "convert-triton-gpu-to-llvm", to_llvm),
              ("LLVMOptimize", "llvm-optimize", llvm_opt)]),
]


def _on(name):
    return os.environ.get(name, "0") not in ("", "0")


def run_pipeline(ir, passes, opts):
    dump, timing = _on("MLIR_ENABLE_DUMP"), _on("MLIR_ENABLE_TIMING")
    times = []
    for name, arg, fn in passes:
        if dump:
            sys.stderr.write("// -----// IR Dump Before %s (%s) ('builtin.module' operation) //----- //\\n%s\\n\\n"
                             % (name, arg, ir))
            sys.stderr.flush()
        t0 = time.perf_counter()
        _work(WORK)
        ir = fn(ir, opts)
        times.append((name, time.perf_counter() - t0))
    if timing:  # MLIR's own report of a pass manager's run
        total = sum(t for _, t in times) or 1e-9
        rule = "===" + "-" * 73 + "==="
        rows = "".join("  %9.4f (%5.1f%%)  %s\\n" % (t, 100 * t / total, name) for name, t in times)
        sys.stderr.write("%s\\n%s... Execution time report ...\\n%s\\n  Total Execution Time: %.4f seconds\\n\\n"
                         "  ----Wall Time----  ----Name----\\n%s  %9.4f (100.0%%)  Total\\n"
                         % (rule, " " * 25, rule, total, rows, total))
        sys.stderr.flush()
    return ir


def compile(src, target=None, options=None):
    with open(src, encoding="utf-8") as fh:
        ir = fh.read()
    backend = make_backend(target)
    opts = backend.parse_options(dict(options or {}))
    stages = {}
    backend.add_stages(stages, opts)
    start = src.rsplit(".", 1)[-1]
    names = list(stages)
    asm = {start: ir}
    for stage in names[names.index(start) + 1 if start in names else 0:]:
        ir = stages[stage](ir, {})
        asm[stage] = ir
    return CompiledKernel(asm, {"num_warps": opts.num_warps, "num_stages": opts.num_stages, "name": "kernel"})
'''

_CANON_NOISE = '''    # renumber SSA values and move locations (no semantic change)
    ir = re.sub(r"%c(\\d+)_i32", lambda m: "%%cst_%s" % m.group(1), ir)
    ir = re.sub(r'loc\\("([^"]*)":(\\d+):(\\d+)\\)', lambda m: 'loc("%s":%s:%d)' % (m.group(1), m.group(2), int(m.group(3)) + 1), ir)'''

_COALESCE_BUG = '''    ir = ir.replace("sizePerThread = [4]", "sizePerThread = [1]")'''

_FAIL = {
    "error": '''        raise RuntimeError("PassManager::run failed: error: failed to legalize operation 'ttg.convert_layout' (sizePerThread = [1])")''',
    "crash": '''        sys.stderr.write("Assertion `vec > 1' failed.\\n")
        sys.stderr.flush()
        os.abort()''',
    "slow": '''        raise RuntimeError("unreachable: the slow culprit keeps the layout")''',
}
# the slow culprit's pass iterates to a fixpoint: `slow` times the whole pipeline's work more
_SLOW = "    _work(WORK * len([p for _, ps in PIPELINES for p in ps]) * %r)"

INIT = '''__version__ = "3.6.0+toy"
from triton.compiler import compile  # noqa: E402,F401
'''

TTIR = '''module {
  tt.func public @add_kernel(%x_ptr: !tt.ptr<f32> {tt.divisibility = 16 : i32} loc("k.py":7:0), %n: i32 loc("k.py":7:0)) {
    %c1024_i32 = arith.constant 1024 : i32 loc("k.py":9:0)
    %pid = tt.get_program_id x : i32 loc("k.py":8:0)
    %offs = arith.muli %pid, %c1024_i32 : i32 loc("k.py":9:0)
    %range = tt.make_range {end = 1024 : i32, start = 0 : i32} : tensor<1024xi32> loc("k.py":9:0)
    %x = tt.load %x_ptr : !tt.ptr<f32> loc("k.py":10:0)
    tt.return loc("k.py":11:0)
  } loc("k.py":7:0)
} loc("k.py":0:0)
'''


_PASSES_TD = "".join(
    f'def {name} : Pass<"{arg}", "mlir::ModuleOp"> {{\n  let summary = "{arg}";\n}}\n\n'
    for name, arg in (("TritonGPUCoalesce", "tritongpu-coalesce"),
                      ("TritonGPURemoveLayoutConversions", "tritongpu-remove-layout-conversions"),
                      ("TritonGPUOptimizeThreadLocality", "tritongpu-optimize-thread-locality"))
)


def _pass_cpp(name: str, struct: str, body: str) -> str:
    return (f"#define GEN_PASS_DEF_{name.upper()}\n#include \"triton/Dialect/TritonGPU/Transforms/Passes.h.inc\"\n\n"
            f"struct {struct} : public impl::{name}Base<{struct}> {{\n  void runOnOperation() override {{\n"
            f"{body}  }}\n}};\n")


def _files(*, culprit: bool, planted: str, note: int, touched: list[int] | None = None,
           work: int = WORK, slow: float = 0.0) -> dict[str, str]:
    slowed = culprit and planted == "slow"
    culprit = culprit and planted != "slow"  # the slow culprit compiles the same IR
    compiler = _COMPILER.replace("@@CANON@@", _CANON_NOISE if culprit else "")
    compiler = compiler.replace("@@COALESCE@@", _COALESCE_BUG if culprit else "")
    compiler = compiler.replace("@@FAIL@@", _FAIL[planted])
    compiler = compiler.replace("@@SLOW@@", _SLOW % slow if slowed else "")
    compiler = compiler.replace("@@WORK@@", str(int(work)))
    remove = "    // fold conversions\n" + ("    // again, until nothing changes\n" if slowed else "")
    coalesce = "    unsigned perThread = " + ("1" if culprit else "4") + ";\n"
    coalesce += "".join(f"    // tuned in change {i}\n" for i in touched or [])
    return {
        "include/triton/Dialect/TritonGPU/Transforms/Passes.td": _PASSES_TD,
        "lib/Dialect/TritonGPU/Transforms/Coalesce.cpp": _pass_cpp("TritonGPUCoalesce", "CoalescePass", coalesce),
        "lib/Dialect/TritonGPU/Transforms/RemoveLayoutConversions.cpp": _pass_cpp(
            "TritonGPURemoveLayoutConversions", "RemoveLayoutConversionsPass", remove),
        "NOTES": f"change {note}\n",
        ".gitignore": "build/\n__pycache__/\n",
        "python/triton/__init__.py": INIT,
        "python/triton/backends/__init__.py": "",
        "python/triton/backends/compiler.py": _BACKENDS,
        "python/triton/compiler/__init__.py": "from triton.compiler.compiler import compile, make_backend  # noqa: F401\n",
        "python/triton/compiler/compiler.py": compiler,
    }


def _git(repo: Path, *args: str, when: int = 0) -> str:
    env = git_env()
    stamp = f"{1735689600 + 60 * when} +0000"  # deterministic shas
    env.update(GIT_AUTHOR_NAME="Toy Developer", GIT_AUTHOR_EMAIL="dev@toy.example", GIT_AUTHOR_DATE=stamp,
               GIT_COMMITTER_NAME="Toy Developer", GIT_COMMITTER_EMAIL="dev@toy.example", GIT_COMMITTER_DATE=stamp)
    return subprocess.run(["git", *args], cwd=repo, env=env, capture_output=True, text=True, check=True).stdout.strip()


def make_pass_triton(path: Path, *, commits: int = 8, culprit: int = 5, planted: str = "error",
                     touch_pass: tuple[int, ...] = (), work: int = WORK, slow: float = 0.5) -> dict[str, Any]:
    """Write the toy repository at `path`; return its truth (order, culprit, parent, ttir, ...).
    `work`: iterations of every pass's work; `slow` (planted="slow"): the culprit's extra work,
    a share of the whole pipeline's."""
    if planted not in _FAIL:
        raise ValueError(f"planted must be one of {sorted(_FAIL)}")
    if not 0 < culprit < commits:
        raise ValueError("the culprit must have a parent inside the history")
    path.mkdir(parents=True)
    _git(path, "init", "-q", "-b", "main")
    order = []
    for i in range(commits):
        touched = [t for t in touch_pass if t <= i and t != culprit]
        for rel, text in _files(culprit=i >= culprit, planted=planted, note=i, touched=touched, work=work,
                                slow=slow).items():
            dest = path / rel
            dest.parent.mkdir(parents=True, exist_ok=True)
            dest.write_text(text, encoding="utf-8")
        _git(path, "add", "-A")
        subject = (f"[BACKEND] {'RemoveLayoutConversions: iterate to a fixpoint' if planted == 'slow' else 'Coalesce: pick the vector width from the layout'} ({i})"
                   if i == culprit else f"change {i}")
        _git(path, "commit", "-q", "-m", subject, when=i)
        order.append(_git(path, "rev-parse", "HEAD"))
    (path.parent / "add_kernel.ttir").write_text(TTIR, encoding="utf-8")
    return {
        "order": order,
        "culprit": order[culprit],
        "parent": order[culprit - 1],
        "planted_pass": SLOW_PASS if planted == "slow" else PLANTED_PASS,
        "failing_pass": FAILING_PASS,
        "ttir": str(path.parent / "add_kernel.ttir"),
        "build": BUILD_COMMAND,
        "artifact": ARTIFACT,
        "pass_commits": [order[t] for t in sorted({*touch_pass, culprit}) if 0 < t < commits],
    }
