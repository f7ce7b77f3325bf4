"""`tritonbisect wheels` over real `triton` releases from PyPI (network; CPU; no GPU).

The test (bench/wheels_real/max_nan.py) checks that tl.max over a block with a NaN gives NaN
under TRITON_INTERPRET=1, as torch.max does. Triton 3.2.0 .. 3.4.0 do; 3.5.0 .. 3.9.0 do
not (found by trying small kernels on every release). The bisect over 3.2.0..3.9.0 must name
3.5.0. The target venv sees (through a .pth file) the running Python's packages, so that it reuses the installed
torch 2.13.0 (CPU); the workdir (venv, downloads) is kept under --workdir between runs.

    python bench/wheels_real_bench.py --workdir /tmp/tb-wheels [--out DIR] [--no-results]

Writes the figures (installs, downloads in MB, wall time) to the "tritonbisect wheels:
real releases" section of bench/RESULTS.md and, with --out, to DIR/wheels_real.json.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from real_triton import make_linked_venv  # noqa: E402

HERE = Path(__file__).resolve().parent
GOOD, BAD, FIRST_BAD = "3.2.0", "3.9.0", "3.5.0"
TITLE = "tritonbisect wheels: real releases"


def make_venv(path: Path) -> Path:
    if not (path / "pyvenv.cfg").exists():
        make_linked_venv(path)  # sees the torch of the Python running the bench, venv or not
    return path


def run(workdir: Path) -> dict:
    venv = make_venv(workdir / "venv-torch")
    env = {**os.environ, "PYTHONPATH": str(HERE.parent / "src"), "TRITON_INTERPRET": "1"}
    argv = [sys.executable, "-m", "tritonbisect.cli", "wheels", "--good", GOOD, "--bad", BAD,
            "--venv", str(venv), "--test", f"python {HERE / 'wheels_real' / 'max_nan.py'}",
            "--env", "TRITON_INTERPRET=1", "--timeout", "600", "--workdir", str(workdir / "home"),
            "--json"]
    start = time.monotonic()
    proc = subprocess.run(argv, capture_output=True, text=True, env=env)
    wall = time.monotonic() - start
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("{")]
    if not lines:
        raise SystemExit(f"no result (exit {proc.returncode}):\n{proc.stderr[-3000:]}")
    res = json.loads(lines[-1])
    return {"exit": proc.returncode, "wall_s": round(wall, 1), "result": res}


def section(figs: list[dict]) -> str:
    fig = figs[0]
    r = fig["result"]
    tested = ", ".join(f"{t['version']} {t['verdict']}" for t in r["tested"] if t["role"] != "confirm")
    return "\n".join([
        f"`tritonbisect wheels --good {GOOD} --bad {BAD} --venv V --test 'python "
        "bench/wheels_real/max_nan.py'` over the real `triton` releases on PyPI, under "
        "TRITON_INTERPRET=1 with torch 2.13.0 (CPU), on a 2-core shared machine "
        "(bench/wheels_real_bench.py). The test: tl.max over a block holding a NaN must be NaN, "
        "as torch.max gives; the interpreter of 3.5.0 and later returns the largest number "
        "instead.",
        "",
        "| run | first bad (expected) | first bad (found) | last good | installs | downloads | MB downloaded | wall time |",
        "|---|---|---|---|---|---|---|---|",
        *(f"| {name} | {FIRST_BAD} | {f['result']['first_bad']} | {f['result']['last_good']} "
          f"| {f['result']['installs']} | {f['result']['downloads']} | {f['result']['download_mb']} "
          f"| {f['wall_s']} s |" for name, f in zip(("cold cache", "same workdir again"), figs, strict=False)),
        "",
        f"Versions tested (endpoints, then the search): {tested}; the confirmation re-tests the "
        "first bad (same wheel still installed: no pip run) and the last good (an install). "
        "The second run takes every wheel from the download cache (keyed by the index's sha256).",
    ])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--workdir", type=Path, default=Path("/tmp/tritonbisect-wheels-bench"))
    ap.add_argument("--out", type=Path)
    ap.add_argument("--no-results", action="store_true", help="do not write bench/RESULTS.md")
    args = ap.parse_args()
    args.workdir.mkdir(parents=True, exist_ok=True)
    figs = [run(args.workdir), run(args.workdir)]  # cold, then warm (downloads cached)
    print(json.dumps(figs, indent=1))
    if args.out:
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / "wheels_real.json").write_text(json.dumps(figs, indent=1))
    if not args.no_results and all(f["result"].get("first_bad") for f in figs):
        sys.path.insert(0, str(HERE))
        from results_md import write_section

        write_section(TITLE, section(figs))
    return 0 if all(f["result"].get("first_bad") == FIRST_BAD for f in figs) else 1


if __name__ == "__main__":
    sys.exit(main())
