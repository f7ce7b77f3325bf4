"""What `reduce` leaves in --out: the reduced oracle (a folder of the input's kind that runs
as the original did) and `issue.py`, one file to paste into a Triton issue: the kernel and its
launch (runtime), its cross-compile (compile), or its IR and the compile of that (IR)."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from tritonbisect.reduce import oracle_io
from tritonbisect.reduce.oracle_io import Candidate, OracleDir
from tritonbisect.reduce.pool import Pool

HELPERS = Path(__file__).parent


def _value(v: Any) -> str:
    if isinstance(v, float) and not math.isfinite(v):
        return "nan" if v != v else ("inf" if v > 0 else "-inf")
    if isinstance(v, list):
        return "[" + ", ".join(_value(x) for x in v) + "]"
    return repr(v)


def issue_script(source: str, kernel: str, inputs: dict[str, Any], context: dict[str, Any],
                 good: str, bad: str, signature: str) -> str:
    grid = tuple(context.get("launch", {}).get("grid") or [1])
    lines = [
        f"# {kernel}: a different result under Triton {bad} than under {good} ({signature}).",
        "# Reduced by tritonbisect. Run it under both: python issue.py (TRITON_INTERPRET=1 on a machine without a GPU).",
        "import torch",
        *[line for line in ("import triton", "import triton.language as tl") if line not in source.splitlines()],
        "",
        "nan, inf = float('nan'), float('inf')",
        "",
        source.rstrip(),
        "",
        "",
        "def main():",
        "    device = 'cuda' if torch.cuda.is_available() else 'cpu'",
    ]
    tensors = []
    call = []
    options = {k: v for k, v in (context.get("compile") or {}).items() if k in ("num_warps", "num_stages")}
    for name, arg in inputs.items():
        if "tensor" in arg:
            lines.append(f"    {name} = torch.tensor({_value(arg['tensor'])}, dtype=torch.{arg['dtype']}, device=device)")
            tensors.append(name)
            call.append(f"{name}={name}")
        else:
            call.append(f"{name}={_value(arg['value'])}")
    launch = ", ".join(call + [f"{k}={v}" for k, v in options.items()])
    lines.append(f"    {kernel}[{grid!r}]({launch})")
    lines += [f"    print({name!r}, {name}.tolist())" for name in tensors]
    lines += ["", "", "main()", ""]
    return "\n".join(lines)


def compile_issue_script(source: str, kernel: str, context: dict[str, Any], good: str, bad: str,
                         signature: str) -> str:
    """The kernel and a cross-compile for the oracle's target (Triton 3.3+'s ASTSource), printing
    the count of each PTX instruction."""
    job = context["job"]
    target = job["target"]
    types, constexprs = {}, {}
    for i, p in enumerate(job["what"].get("params") or []):
        if p.get("kind") == "constexpr":
            types[p["name"]] = "constexpr"
            constexprs[(i,)] = p.get("value")
        else:
            types[p["name"]] = p.get("type") or "i32"
    return "\n".join([
        f"# {kernel}: compiled differently by Triton {bad} than by {good} ({signature}).",
        "# Reduced by tritonbisect. Needs no GPU: python issue.py under each Triton (3.3 or later) and compare.",
        *[line for line in ("import triton", "import triton.language as tl") if line not in source.splitlines()],
        "from collections import Counter",
        "",
        "from triton.backends.compiler import GPUTarget",
        "from triton.compiler import ASTSource",
        "",
        source.rstrip(),
        "",
        "",
        "def main():",
        f"    source = ASTSource(fn={kernel}, signature={types!r}, constexprs={constexprs!r})",
        f"    target = GPUTarget({target['backend']!r}, {target['arch']!r}, {target.get('warp_size', 32)!r})",
        f"    compiled = triton.compile(source, target=target, options={_options(job)!r})",
        *_PTX_COUNTS,
    ])


def _options(job: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in (job.get("options") or {}).items() if k in ("num_warps", "num_stages", "num_ctas")}


# the end of issue.py's main() for a compile: how many of each PTX instruction it got
_PTX_COUNTS = [
    "    ptx = [line.split()[0] for line in compiled.asm['ptx'].splitlines()",
    "           if line.startswith('\\t') and line.split() and line.split()[0][0].isalpha()]",
    "    for op, n in sorted(Counter(ptx).items()):",
    "        print(op, n)",
    "",
    "",
    "main()",
    "",
]


def ir_issue_script(ir: str, ir_file: str, kernel: str, context: dict[str, Any], good: str, bad: str,
                    signature: str) -> str:
    """The IR and its compile for the oracle's target (triton.compile of a .ttir/.ttgir file),
    printing the count of each PTX instruction."""
    job = context["job"]
    target = job["target"]
    return "\n".join([
        f"# {kernel}: its {ir_file.rsplit('.', 1)[-1].upper()} compiled differently by Triton {bad} than by {good} "
        f"({signature}).",
        "# Reduced by tritonbisect. Needs no GPU: python issue.py under each Triton and compare.",
        "import os",
        "import tempfile",
        "from collections import Counter",
        "",
        "import triton",
        "from triton.backends.compiler import GPUTarget",
        "",
        f"IR = {oracle_io.source_literal(ir)}",
        "",
        "",
        "def main():",
        f"    path = os.path.join(tempfile.mkdtemp(), {ir_file!r})",
        "    with open(path, 'w') as fh:",
        "        fh.write(IR.lstrip('\\n'))",
        f"    target = GPUTarget({target['backend']!r}, {target['arch']!r}, {target.get('warp_size', 32)!r})",
        f"    compiled = triton.compile(path, target=target, options={_options(job)!r})",
        *_PTX_COUNTS,
    ])


def write(oracle: OracleDir, cand: Candidate, out: Path, pool: Pool, good_python: str, labels: tuple[str, str],
          signature: str, work: Path, timeout: float) -> None:
    script = oracle_io.write(oracle, cand, out.resolve(), copy_blobs=True)
    if oracle.kind == "ir":
        text = ir_issue_script(cand.source, oracle.ir_file, oracle.kernel, cand.context, labels[0], labels[1], signature)
        (out / "issue.py").write_text(text, encoding="utf-8")
        return
    if oracle.kind == "compile":
        text = compile_issue_script(cand.source, oracle.kernel, cand.context, labels[0], labels[1], signature)
        (out / "issue.py").write_text(text, encoding="utf-8")
        return
    dumped = work / "inputs.json"
    run = pool.run(good_python, HELPERS / "dump_inputs.py", [str(script), str(dumped)], timeout=timeout,
                   log=work / "inputs.log")
    if run.rc != 0:
        raise OSError(f"cannot read the reduced inputs back (see {work / 'inputs.log'})")
    inputs = json.loads(dumped.read_text(encoding="utf-8"))
    text = issue_script(cand.source, oracle.kernel, inputs, cand.context, labels[0], labels[1], signature)
    (out / "issue.py").write_text(text, encoding="utf-8")
