"""What `reduce` leaves in --out: the reduced oracle (a folder of the input's kind that runs
as the original did) and `issue.py`, one file to paste into a Triton issue: the kernel and its
launch (runtime), its cross-compile (compile), or its IR and the compile of that (IR)."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from tritonbisect.oracles.kinds import OracleKind
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


# a tensor of more elements than this is tried as zeros in issue.py: when neither Triton's result
# depends on what it held (an output the kernel only writes, recorded as torch.empty's garbage),
# it is written as torch.zeros(shape) instead of a literal of that garbage
ZERO_TRY = 8


def _flat(values: Any) -> list[Any]:
    return [x for v in values for x in _flat(v)] if isinstance(values, list) else [values]


def _tensor_line(name: str, arg: dict[str, Any], zeroed: bool) -> str:
    shape = tuple(arg.get("shape") or ())
    flat = _flat(arg["tensor"])
    dtype = f"dtype=torch.{arg['dtype']}, device=device"
    if zeroed and shape:
        return f"    {name} = torch.zeros({shape!r}, {dtype})"
    if len(flat) > 1 and shape and all(repr(x) == repr(flat[0]) for x in flat):
        return f"    {name} = torch.full({shape!r}, {_value(flat[0])}, {dtype})"
    return f"    {name} = torch.tensor({_value(arg['tensor'])}, {dtype})"


def issue_script(source: str, kernel: str, inputs: dict[str, Any], context: dict[str, Any],
                 good: str, bad: str, signature: str, *, zeroed: frozenset[str] = frozenset(),
                 expected: dict[str, Any] | None = None) -> str:
    """issue.py of a runtime oracle: the kernel, its reduced inputs, its launch, what each output
    holds after it, and (`expected`: the good Triton's outputs) a line saying whether this
    Triton gives what the good one gave."""
    grid = tuple((context.get("launch") or {}).get("grid") or [1])
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
            lines.append(_tensor_line(name, arg, name in zeroed))
            tensors.append(name)
            call.append(f"{name}={name}")
        else:
            call.append(f"{name}={_value(arg['value'])}")
    launch = ", ".join(call + [f"{k}={v}" for k, v in options.items()])
    lines.append(f"    {kernel}[{grid!r}]({launch})")
    lines.append("    return {" + ", ".join(f"{name!r}: {name}.tolist()" for name in tensors) + "}")
    lines += ["", ""]
    if expected is None:
        lines += ["for name, value in main().items():", "    print(name, value)", ""]
        return "\n".join(lines)
    shown = {name: expected[name] for name in tensors if name in expected}
    lines += [
        f"# what Triton {good} gives (the expected result), recorded when the kernel was reduced",
        f"EXPECTED = {_value_dict(shown)}",
        "",
        "",
        "def same(a, b):",
        "    a, b = torch.tensor(a, dtype=torch.float64), torch.tensor(b, dtype=torch.float64)",
        "    return a.shape == b.shape and bool(torch.allclose(a, b, rtol=1e-5, atol=1e-8, equal_nan=True))",
        "",
        "",
        "got = main()",
        "differs = [name for name in EXPECTED if not same(got[name], EXPECTED[name])]",
        "for name in differs:",
        f"    print(f'{{name}}: expected (Triton {good}) {{EXPECTED[name]}}')",
        "    print(f'{name}: actual   (Triton {triton.__version__}) {got[name]}')",
        "if differs:",
        f"    print(f'DIFFERS from Triton {good}: {{\", \".join(differs)}} (Triton {{triton.__version__}})')",
        "else:",
        f"    print(f'SAME as Triton {good}: {{\", \".join(EXPECTED)}} (Triton {{triton.__version__}})')",
        "",
    ]
    return "\n".join(lines)


def _value_dict(values: dict[str, Any]) -> str:
    return "{" + ", ".join(f"{name!r}: {_value(v)}" for name, v in values.items()) + "}"


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
          signature: str, work: Path, timeout: float, bad_python: str | None = None) -> None:
    script = oracle_io.write(oracle, cand, out.resolve(), copy_blobs=True)
    if oracle.kind == OracleKind.IR:
        text = ir_issue_script(cand.source, oracle.ir_file, oracle.kernel, cand.context, labels[0], labels[1], signature)
        (out / "issue.py").write_text(text, encoding="utf-8")
        return
    if oracle.kind == OracleKind.COMPILE:
        text = compile_issue_script(cand.source, oracle.kernel, cand.context, labels[0], labels[1], signature)
        (out / "issue.py").write_text(text, encoding="utf-8")
        return
    dumped = work / "inputs.json"
    run = pool.run(good_python, HELPERS / "dump_inputs.py", [str(script), str(dumped)], timeout=timeout,
                   log=work / "inputs.log")
    if run.rc != 0:
        raise OSError(f"cannot read the reduced inputs back (see {work / 'inputs.log'})")
    inputs = json.loads(dumped.read_text(encoding="utf-8"))
    args = (cand.source, oracle.kernel, inputs, cand.context, labels[0], labels[1], signature)
    pythons = [good_python, *([bad_python] if bad_python else [])]
    probe = _Probe(pool, work, timeout, out)
    base = [probe.results(issue_script(*args), py) for py in pythons]
    zeroed: set[str] = set()
    for name, arg in inputs.items():
        if "tensor" in arg and len(_flat(arg["tensor"])) > ZERO_TRY and None not in base:
            trial = issue_script(*args, zeroed=frozenset(zeroed | {name}))
            if [probe.results(trial, py) for py in pythons] == base:
                zeroed.add(name)  # neither Triton reads what it held: its recorded garbage goes
    expected = json.loads(base[0]) if base[0] is not None else None
    text = issue_script(*args, zeroed=frozenset(zeroed), expected=expected)
    (out / "issue.py").write_text(text, encoding="utf-8")


class _Probe:
    """Runs a draft of issue.py under a Python and reads back what main() returned (None when it
    fails): the draft runs in the reduced oracle's folder, as issue.py will."""

    def __init__(self, pool: Pool, work: Path, timeout: float, out: Path) -> None:
        self.pool, self.work, self.timeout, self.out = pool, work, timeout, out
        self.n = 0

    def results(self, text: str, python: str) -> str | None:
        """main()'s results as JSON text (NaN as NaN: two runs compare equal when they print
        the same), or None."""
        self.n += 1
        script = self.out / f".issue-probe-{self.n}.py"
        found = self.work / f"issue-probe-{self.n}.json"
        body = text.rsplit("for name, value in main().items():", 1)[0]
        script.write_text(body + "import json, sys\n\nwith open(sys.argv[1], 'w') as fh:\n"
                          "    json.dump(main(), fh, allow_nan=True)\n", encoding="utf-8")
        try:
            run = self.pool.run(python, script, [str(found)], timeout=self.timeout,
                                log=self.work / f"issue-probe-{self.n}.log")
            if run.rc != 0 or not found.is_file():
                return None
            return json.dumps(json.loads(found.read_text(encoding="utf-8")), sort_keys=True)
        finally:
            script.unlink(missing_ok=True)
