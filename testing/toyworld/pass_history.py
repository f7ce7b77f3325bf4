"""A long toy Triton history laid out like the real tree, for the pass hint (--prefer-pass).

`make_pass_history(path, ...)` writes ~600 commits between two tags (`v3.5.0` .. `v3.6.0`)
of a repository with real Triton's pass layout:

    include/triton/Dialect/TritonGPU/Transforms/Passes.td     def TritonGPUCoalesce : Pass<...>
    lib/Dialect/TritonGPU/Transforms/Coalesce.cpp             GEN_PASS_DEF_..., impl::...Base
    lib/Dialect/TritonGPU/Transforms/RemoveLayoutConversions.cpp, Pipeline.cpp, ...
    third_party/nvidia/include/TritonNVIDIAGPUToLLVM/Passes.td  def ConvertTritonGPUToLLVM
    third_party/nvidia/lib/TritonNVIDIAGPUToLLVM/*.cpp        the conversion and its patterns
    lib/Conversion/TritonGPUToLLVM/*.cpp                      vendor-neutral patterns
    python/src/passes.cc                                      uses createTritonGPUCoalesce()

About `share` of the commits touch the hinted pass's sources (Coalesce.cpp or the Passes.td);
the others touch other files. The culprit writes REGRESSION_MARK into a file: into
Coalesce.cpp when `culprit_in_pass` (the hint is right), else into another file (a
misleading hint). `broken` commits in a row (never the culprit or its parent) carry a
BROKEN file: the toy's build fails there. Deterministic: the same arguments give the same
shas. The truth returned names the culprit, the hinted commits and the tags.
"""

from __future__ import annotations

import random
import subprocess
from pathlib import Path
from typing import Any

from testing.toyworld.gitstream import CommitSpec, git_env, write_history

REGRESSION_MARK = "vectorWidth = 1; // REGRESSION"
BUILD_COMMAND = "test ! -e BROKEN && rm -rf out && mkdir -p out && git rev-parse HEAD > out/built"
ARTIFACT = "out"
HINTED_PASS = "TritonGPUCoalesce"

_TD_GPU = """include "mlir/Pass/PassBase.td"

def TritonGPUCoalesce: Pass<"tritongpu-coalesce", "mlir::ModuleOp"> {
  let summary = "coalesce";
  let dependentDialects = ["mlir::triton::gpu::TritonGPUDialect"];
}

def TritonGPURemoveLayoutConversions : Pass<"tritongpu-remove-layout-conversions", "mlir::ModuleOp"> {
  let summary = "remove superfluous layout conversions";
}

def TritonGPUPipeline : Pass<"tritongpu-pipeline", "mlir::ModuleOp"> {
  let summary = "pipeline";
}

def TritonGPUOptimizeThreadLocality : Pass<"tritongpu-optimize-thread-locality", "mlir::ModuleOp"> {
  let summary = "Reduce the cost of synchronization between threads in an SM";
}
"""

_TD_NV = """include "mlir/Pass/PassBase.td"

def ConvertTritonGPUToLLVM : Pass<"convert-triton-gpu-to-llvm", "mlir::ModuleOp"> {
  let summary = "Convert TritonGPU to LLVM";
}
"""


def _pass_cpp(name: str, struct: str, ns: str = "") -> str:
    return (f'#define GEN_PASS_DEF_{name.upper()}\n#include "Passes.h.inc"\n\n'
            f"struct {struct} : public {ns}impl::{name}Base<{struct}> {{\n"
            "  void runOnOperation() override {\n    // rev 0\n  }\n};\n")


def base_tree() -> dict[str, str]:
    gpu = "lib/Dialect/TritonGPU/Transforms"
    return {
        "include/triton/Dialect/TritonGPU/Transforms/Passes.td": _TD_GPU,
        f"{gpu}/Coalesce.cpp": _pass_cpp("TritonGPUCoalesce", "CoalescePass"),
        f"{gpu}/RemoveLayoutConversions.cpp": _pass_cpp("TritonGPURemoveLayoutConversions", "RemoveLayoutConversionsPass"),
        f"{gpu}/Pipeline.cpp": _pass_cpp("TritonGPUPipeline", "PipelinePass"),
        f"{gpu}/OptimizeThreadLocality.cpp": _pass_cpp("TritonGPUOptimizeThreadLocality", "OptimizeThreadLocalityPass"),
        f"{gpu}/Utility.cpp": "// shared helpers\n// rev 0\n",
        "third_party/nvidia/include/TritonNVIDIAGPUToLLVM/Passes.td": _TD_NV,
        "third_party/nvidia/lib/TritonNVIDIAGPUToLLVM/TritonGPUToLLVM.cpp":
            _pass_cpp("ConvertTritonGPUToLLVM", "ConvertTritonGPUToLLVM", "triton::"),
        "third_party/nvidia/lib/TritonNVIDIAGPUToLLVM/LoadStoreOpToLLVM.cpp": "// load/store patterns\n// rev 0\n",
        "lib/Conversion/TritonGPUToLLVM/ElementwiseOpToLLVM.cpp": "// elementwise patterns\n// rev 0\n",
        "python/src/passes.cc": 'ADD_PASS_WRAPPER_0("add_coalesce", createTritonGPUCoalesce);\n// rev 0\n',
        "python/triton/language/core.py": "# rev 0\n",
        "python/triton/runtime/jit.py": "# rev 0\n",
        "docs/index.rst": "rev 0\n",
        "test/TritonGPU/coalesce.mlir": "// rev 0\n",
    }


HINT_FILES = ("lib/Dialect/TritonGPU/Transforms/Coalesce.cpp", "include/triton/Dialect/TritonGPU/Transforms/Passes.td")


def make_pass_history(path: Path, *, commits: int = 600, share: float = 0.05, culprit_in_pass: bool = True,
                      seed: int = 0, broken: int = 0) -> dict[str, Any]:
    """Write the repository (tags v3.5.0 at the first commit, v3.6.0 at the last); its truth."""
    rng = random.Random(seed)
    n = commits  # commits after the good tag
    hinted = set(rng.sample(range(1, n), max(1, round(share * n))))
    broken_at: set[int] = set()
    if broken:
        start = rng.randrange(n // 4, n - broken - 2)
        broken_at = set(range(start, start + broken))
    pool = [i for i in range(2, n) if (i in hinted) == culprit_in_pass and i not in broken_at
            and i - 1 not in broken_at]
    culprit = rng.choice(pool)
    tree = base_tree()
    others = [p for p in tree if p not in HINT_FILES and not p.endswith(".td")]
    specs = [CommitSpec(tree=dict(tree), subject="Release 3.5.0", timestamp=1735689600)]
    for i in range(1, n + 1):
        tree = dict(tree)
        if i in hinted:
            target = HINT_FILES[0] if rng.random() < 0.8 else HINT_FILES[1]
        else:
            target = rng.choice(others)
        tree[target] = tree[target] + f"// change {i}\n"
        if i == culprit:
            where = HINT_FILES[0] if culprit_in_pass else target
            tree[where] = tree[where] + REGRESSION_MARK + "\n"
        if i in broken_at:
            tree["BROKEN"] = "this commit does not build\n"
        else:
            tree.pop("BROKEN", None)
        subject = f"[BACKEND] change {i}" if i != n else "Release 3.6.0"
        specs.append(CommitSpec(tree=tree, subject=subject, timestamp=1735689600 + 60 * i))
    shas = write_history(path, specs)
    for tag, sha in (("v3.5.0", shas[0]), ("v3.6.0", shas[-1])):
        subprocess.run(["git", "tag", tag, sha], cwd=path, env=git_env(), check=True, capture_output=True)
    return {
        "order": shas,  # shas[0] is the good tag
        "culprit": shas[culprit],
        "culprit_index": culprit,
        "hinted": [shas[i] for i in sorted(hinted)],
        "broken": [shas[i] for i in sorted(broken_at)],
        "good": "v3.5.0",
        "bad": "v3.6.0",
        "build": BUILD_COMMAND,
        "artifact": ARTIFACT,
        "pass": HINTED_PASS,
    }
