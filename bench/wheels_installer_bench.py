"""pip against uv as the installer of `tritonbisect wheels` over the real `triton` releases.

The run is the real one of bench/wheels_real_bench.py: `wheels --good 3.2.0 --bad 3.9.0`
with bench/wheels_real/max_nan.py under TRITON_INTERPRET=1, the index read through this
machine's pip configuration. For each installer: a *cold* run (a new venv, an empty download
cache, an empty uv cache) and then a *warm* run (same workdir: the wheels are in the download
cache, uv's cache holds them unpacked; the venv holds the last version tested). Figures: the
installs, the seconds each took (purge, install, check; from the steps' wheel-step.json) and
the wall time.

    python bench/wheels_installer_bench.py --workdir /tmp/tb-installers [--no-results]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from real_triton import make_linked_venv  # noqa: E402

HERE = Path(__file__).resolve().parent
GOOD, BAD = "3.2.0", "3.9.0"
TITLE = "Published wheels: pip or uv as the installer"


def run(workdir: Path, installer: str) -> dict:
    venv = workdir / "venv"
    if not (venv / "pyvenv.cfg").exists():
        make_linked_venv(venv)  # sees the torch of the Python running the bench, venv or not
    env = {**os.environ, "PYTHONPATH": str(HERE.parent / "src"), "TRITON_INTERPRET": "1",
           "UV_CACHE_DIR": str(workdir / "uv-cache")}
    argv = [sys.executable, "-m", "tritonbisect.cli", "wheels", "--good", GOOD, "--bad", BAD,
            "--venv", str(venv), "--installer", installer,
            "--test", f"python {HERE / 'wheels_real' / 'max_nan.py'}", "--env", "TRITON_INTERPRET=1",
            "--timeout", "600", "--workdir", str(workdir / "home"), "--json"]
    start = time.monotonic()
    proc = subprocess.run(argv, capture_output=True, text=True, env=env)
    wall = time.monotonic() - start
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("{")]
    if not lines:
        raise SystemExit(f"no result (exit {proc.returncode}):\n{proc.stderr[-3000:]}")
    res = json.loads(lines[-1])
    return {"installer": installer, "exit": proc.returncode, "wall_s": round(wall, 1),
            "first_bad": res.get("first_bad"), "installs": res.get("installs"),
            "downloads": res.get("downloads"), "download_mb": res.get("download_mb"),
            "install_s": res.get("install_s") or [], "used": res.get("installer"),
            "index_lines": [ln for ln in proc.stderr.splitlines() if " index " in ln or "find-links" in ln]}


def section(rows: list[dict]) -> str:
    table = ["| installer | run | installs | s per install (median, max) | downloads | wall time | first bad |",
             "|---|---|---:|---:|---:|---:|---|"]
    for r in rows:
        s = r["install_s"]
        per = f"{statistics.median(s):.1f}, {max(s):.1f}" if s else "-"
        table.append(f"| {r['used'] or r['installer']} | {r['run']} | {r['installs']} | {per} | "
                     f"{r['downloads']} ({r['download_mb']} MB) | {r['wall_s']} s | {r['first_bad']} |")
    med = {(r["used"] or r["installer"], r["run"]): statistics.median(r["install_s"]) for r in rows if r["install_s"]}
    verdict = ""
    if all(k in med for k in (("pip", "cold"), ("uv", "cold"), ("pip", "warm"), ("uv", "warm"))):
        verdict = (f"uv's median install is {med['pip', 'cold'] / med['uv', 'cold']:.1f}x faster than pip's cold "
                   f"and {med['pip', 'warm'] / med['uv', 'warm']:.1f}x warm (its cache hard-links the files "
                   "it unpacked once; pip unpacks every time): uv is the default where it is available.")
    return "\n".join([
        f"`tritonbisect wheels --good {GOOD} --bad {BAD} --venv V --installer pip|uv --test 'python "
        "bench/wheels_real/max_nan.py'` over the real `triton` releases, the index read through this "
        "machine's pip configuration, on a 2-core machine shared with other jobs "
        "(bench/wheels_installer_bench.py). Cold: new venv, empty download cache, empty uv cache; "
        "warm: the same workdir again. Seconds per install: purge, install and check of one "
        "250-400 MB Triton wheel.",
        "",
        *table,
        *(["", verdict] if verdict else []),
    ])


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--workdir", type=Path, required=True)
    ap.add_argument("--no-results", action="store_true")
    ap.add_argument("--rows", type=Path, help="write the section from the JSON lines a run printed")
    args = ap.parse_args()
    rows = []
    if args.rows:
        rows = [json.loads(ln) for ln in args.rows.read_text().splitlines() if ln.startswith("{")]
    for installer in () if args.rows else ("pip", "uv"):
        wd = args.workdir / installer
        shutil.rmtree(wd, ignore_errors=True)
        wd.mkdir(parents=True)
        for which in ("cold", "warm"):
            r = run(wd, installer)
            r["run"] = which
            rows.append(r)
            print(json.dumps(r), flush=True)
    text = section(rows)
    print(text)
    if not args.no_results:
        sys.path.insert(0, str(HERE))
        from results_md import write_section

        write_section(TITLE, text)


if __name__ == "__main__":
    main()
