"""What `reduce` leaves in --out: the reduced oracle (a folder of the input's kind that runs
as the original did) and `issue.py`, one file to paste into a Triton issue."""

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


def write(oracle: OracleDir, cand: Candidate, out: Path, pool: Pool, good_python: str, labels: tuple[str, str],
          signature: str, work: Path, timeout: float) -> None:
    script = oracle_io.write(oracle, cand, out.resolve(), copy_blobs=True)
    dumped = work / "inputs.json"
    run = pool.run(good_python, HELPERS / "dump_inputs.py", [str(script), str(dumped)], timeout=timeout,
                   log=work / "inputs.log")
    if run.rc != 0:
        raise OSError(f"cannot read the reduced inputs back (see {work / 'inputs.log'})")
    inputs = json.loads(dumped.read_text(encoding="utf-8"))
    text = issue_script(cand.source, oracle.kernel, inputs, cand.context, labels[0], labels[1], signature)
    (out / "issue.py").write_text(text, encoding="utf-8")
