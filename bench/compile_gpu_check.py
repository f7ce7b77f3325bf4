"""GPU check of the compile oracle: are its CPU-side register and spill counts the driver's?

    PYTHONPATH=src python bench/compile_gpu_check.py --traces /path/to/shared/traces --out $OUT/compile_gpu

Needs a machine with a GPU, torch and triton (no tritonbisect dependencies beyond the standard
library: `src` on PYTHONPATH is enough). For every kernel of the traces (and of
tests/data/compile_traces) it

  1. writes the compile oracle and runs it as a bisect step would (`python compile_repro.py`,
     a child process, no GPU used): registers and spills come from the cubin
     (`cuobjdump -res-usage`), as on a CPU-only machine;
  2. compiles the same job in this process with the same bridge and loads the binary on the
     GPU (`CompiledKernel._init_handles()`), which makes the driver report `n_regs` and
     `n_spills`;
  3. compares them, and the shared memory with the traced compile's.

Writes `compile_gpu_check.json` and `compile_gpu_check.md` under --out and prints the table.
Expected: every row `same`; the oracle's target is the traced one (sm90 for the shared H100
traces), so on a different GPU pass `--target cuda:<its arch>` to load the binaries.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "src"))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # testing/: the toy worlds

from tritonbisect.core.errors import InputError  # noqa: E402
from tritonbisect.oracles.compile.folder import generate_compile_oracle  # noqa: E402
from tritonbisect.traces.reader import load_trace  # noqa: E402

STANDALONE = REPO / "src" / "tritonbisect" / "oracles" / "compile" / "standalone"


def kernels(traces: Path) -> list[tuple[str, Path, str]]:
    out = []
    for logs in sorted(traces.glob("*/*/logs")) + sorted(traces.glob("*/logs")):
        out += [(logs.parent.name, logs, k) for k in load_trace(logs).kernels()]
    data = REPO / "tests" / "data" / "compile_traces"
    if data.is_dir():
        for folder in sorted(p for p in data.iterdir() if p.is_dir()):
            out += [(f"{folder.name}/{k}", folder, k) for k in load_trace(folder).kernels()]
    return out


def driver_counts(folder: Path) -> dict:
    """Compile the oracle's job here and let the driver load it: n_regs, n_spills."""
    sys.path.insert(0, str(STANDALONE))
    import tb_bridge
    import triton

    ctx = json.loads((folder / "compile_context.json").read_text())
    job = ctx["job"]
    what = job["what"]
    target = tb_bridge.gpu_target(job["target"])
    backend = tb_bridge.make_backend(target)
    options, _ = tb_bridge.filter_options(backend, job["options"])
    fn = tb_bridge.load_kernel(str(folder / what["file"]), what["kernel"])
    _, src = tb_bridge.make_source(triton, fn, what["params"], backend)
    kernel = triton.compile(src, target=target, options=options)
    kernel._init_handles()
    return {"n_regs": kernel.n_regs, "n_spills": kernel.n_spills, "shared": kernel.metadata.shared}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--traces", type=Path, required=True)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--target", default=None, help="compile for this target instead of the traced one")
    args = ap.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="compile-gpu-check-"))
    os.environ["TRITON_CACHE_DIR"] = str(work / "cache")
    rows = []
    for i, (name, trace, kernel) in enumerate(kernels(args.traces)):
        folder = work / f"k{i:02d}"
        row: dict = {"kernel": name}
        try:
            generate_compile_oracle(trace, kernel, folder, target=args.target)
        except InputError as exc:
            row["refused"] = exc.message
            rows.append(row)
            continue
        result = folder / "result.json"
        proc = subprocess.run([sys.executable, str(folder / "compile_repro.py"), "--result", str(result)],
                              capture_output=True, text=True)
        data = json.loads(result.read_text()) if result.is_file() else {}
        row["oracle_status"] = data.get("status")
        stats = data.get("stats") or {}
        row["oracle"] = {"regs": stats.get("regs"), "spills": stats.get("spills"), "shared": stats.get("shared")}
        try:
            row["driver"] = driver_counts(folder)
        except Exception as exc:  # noqa: BLE001 - reported per kernel
            row["driver_error"] = f"{type(exc).__name__}: {exc}"[:300]
        d = row.get("driver") or {}
        row["same"] = bool(d) and d["n_regs"] == row["oracle"]["regs"] and d["n_spills"] == row["oracle"]["spills"] \
            and d["shared"] == row["oracle"]["shared"]
        if proc.returncode != 0:
            row["oracle_stdout"] = proc.stdout[-500:]
        rows.append(row)
        print(json.dumps(row), flush=True)
    (args.out / "compile_gpu_check.json").write_text(json.dumps(rows, indent=1))
    lines = ["| kernel | oracle (CPU: cuobjdump) regs / spills / shared | driver n_regs / n_spills / shared | same |",
             "|---|---|---|---|"]
    for row in rows:
        if "refused" in row:
            lines.append(f"| {row['kernel']} | refused: {row['refused'][:80]} | | |")
            continue
        o, d = row.get("oracle") or {}, row.get("driver") or {}
        drv = f"{d.get('n_regs')} / {d.get('n_spills')} / {d.get('shared')}" if d else row.get("driver_error", "?")
        lines.append(f"| {row['kernel']} | {o.get('regs')} / {o.get('spills')} / {o.get('shared')} | {drv} | "
                     f"{'same' if row.get('same') else 'DIFFERENT'} |")
    text = "\n".join(lines)
    (args.out / "compile_gpu_check.md").write_text(text + "\n")
    print(text)


if __name__ == "__main__":
    main()
