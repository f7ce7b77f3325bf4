"""Compile oracles from tritonparse's own example traces, and narrowing a real release pair.

    python bench/tritonparse_examples_bench.py [--traces DIR] [--results bench/RESULTS.md]

1. Every kernel of every file in DIR/tritonparse-examples (default: $TRITONBISECT_TRACES, else
   ../shared/traces): `repro --mode compile` (from the Python source), `--from ttir` and
   `--from ttgir`, each oracle then run once (`python compile_repro.py`) with the Triton of
   this Python for the recorded target: status, where the parameters came from, wall seconds
   of writing and of compiling.
2. A layernorm compiled for sm90 by the PyPI releases 3.4.0 and 3.5.1 (venvs from
   tests/real_triton.py) with per-pass dumps: the pass narrowing names, the pipelines'
   moved/renamed/added/removed passes, and the seconds.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "src"))
sys.path.insert(0, str(REPO / "tests"))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # testing/: the toy worlds

from results_md import write_section  # noqa: E402
from tritonbisect.traces.reader import load_trace  # noqa: E402

SECTION = "Compile oracles from tritonparse's example traces; narrowing 3.4.0 -> 3.5.1"
MODES = {"source": ["--mode", "compile"], "ttir": ["--from", "ttir"], "ttgir": ["--from", "ttgir"]}


def _timed(cmd: list[str], env: dict[str, str]) -> tuple[subprocess.CompletedProcess, float]:
    start = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=900)
    return proc, time.perf_counter() - start


def examples(root: Path, work: Path) -> tuple[list[str], int, int]:
    env = {k: v for k, v in os.environ.items() if k != "TRITONBISECT_RESULT"}
    env["PYTHONPATH"] = str(REPO / "src")
    rows, passed, total = [], 0, 0
    folder = root / "tritonparse-examples"
    for trace in sorted(folder.rglob("*.ndjson*")):
        for kernel in load_trace(trace).kernels():
            for mode, args in MODES.items():
                out = work / f"{total}"
                proc, write_s = _timed([sys.executable, "-m", "tritonbisect.cli", "repro", str(trace), "--kernel",
                                        kernel, *args, "--out", str(out)], env)
                total += 1
                if proc.returncode != 0:
                    rows.append(f"| {trace.relative_to(folder)} | {kernel} | {mode} | refused: {proc.stderr.strip()[:80]} | | |")
                    continue
                ctx = json.loads((out / "compile_context.json").read_text())
                result_file = out / "result.json"
                run, run_s = _timed([sys.executable, str(out / "compile_repro.py"), "--result", str(result_file)], env)
                status = json.loads(result_file.read_text())["status"] if result_file.is_file() else f"exit {run.returncode}"
                passed += status == "pass"
                where = "launch" if ctx.get("launch") else "compilation only"
                rows.append(f"| {trace.relative_to(folder)} | {kernel} | {mode} ({where}) | {status} | "
                            f"{write_s:.1f} | {run_s:.1f} |")
    return rows, passed, total


def layernorm(work: Path) -> str:
    from real_triton import triton_release_python
    from test_narrow_releases import KERNEL, _job
    from tritonbisect.narrow.narrowing import narrow_compiles

    kernel = work / "layernorm.py"
    kernel.write_text(KERNEL)
    env = {k: v for k, v in os.environ.items() if k != "TRITONBISECT_RESULT"}
    old = (str(triton_release_python("3.4.0")), env, work)
    new = (str(triton_release_python("3.5.1")), env, work)
    start = time.perf_counter()
    result, _ = narrow_compiles(_job(kernel), old, new, work, codegen=None)
    seconds = time.perf_counter() - start
    first = result["first_difference"] or {}
    return (f"Layernorm (two `tl.sum` reductions) for sm90, 3.4.0 → 3.5.1, {result['passes']['parent']} / "
            f"{result['passes']['culprit']} passes, {result['passes']['aligned']} aligned, {seconds:.1f} s for both "
            f"dumped compiles and the comparison: first pass whose output differs `{first.get('pass')}` "
            f"({first.get('note')}); last agreeing `{result['last_agreeing']}`; moved {result['moved']}; renamed "
            f"{[' → '.join(r) for r in result['renamed']]}; added {result['added']}; removed {result['removed']}. "
            "Before the region-scoped normaliser and the moved/renamed alignment the same pair named "
            "`Canonicalizer (canonicalize)` (\"same input, different output\": 3.4.0's printer reuses `%arg6`, `%40` "
            "in the second `tt.reduce` combiner), listed `triton-nvidia-mma-lowering` as both added and removed and "
            "`allocate-shared-memory` / `allocate-shared-memory-nv` as removed / added.")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    default = os.environ.get("TRITONBISECT_TRACES") or str(REPO.parent / "shared" / "traces")
    parser.add_argument("--traces", type=Path, default=Path(default))
    parser.add_argument("--results", type=Path, default=REPO / "bench" / "RESULTS.md")
    args = parser.parse_args()
    import triton

    with tempfile.TemporaryDirectory() as tmp:
        rows, passed, total = examples(args.traces, Path(tmp) / "ex")
        (Path(tmp) / "ln").mkdir()
        narrowing = layernorm(Path(tmp) / "ln")
    body = (
        f"`bench/tritonparse_examples_bench.py`, {time.strftime('%Y-%m-%d')}, 2-core CPU, Triton {triton.__version__} "
        "(PyPI), no GPU. Every kernel of every file of tritonparse's example traces (Triton 3.4.0, target cuda 75): "
        "the compile oracle from the Python source and the IR oracles from the recorded TTIR and TTGIR, written by "
        "`tritonbisect repro` and compiled once. Seconds: writing the oracle (CLI start included) and one compile.\n\n"
        "| file | kernel | oracle | status | write s | compile s |\n| --- | --- | --- | --- | --- | --- |\n"
        + "\n".join(rows) + f"\n\n{passed}/{total} pass.\n\n" + narrowing + "\n"
    )
    write_section(SECTION, body, args.results)
    print(body)


if __name__ == "__main__":
    main()
