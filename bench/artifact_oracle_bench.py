"""Oracle coverage on what PyTorch 2.11 and Triton 3.6 wrote on an H200 (tests/data/inductor_artifacts),
CPU only, with Triton 3.6.0 from PyPI (the release that wrote them).

    python bench/artifact_oracle_bench.py [--jobs 2] [--results bench/RESULTS.md]

For each source a user has — the output_code.py of each graph, the TORCH_TRACE folder, every
TRITON_KERNEL_DUMP kernel folder, every TRITON_REPRODUCER_PATH file — every kernel is made an
oracle the way the docs say (`tritonbisect repro SOURCE [--kernel K] [--mode compile] --out D`) and
its step run as a bisect runs it (`python D/compile_repro.py`): how many pass, the median wall
seconds of a step, and, for the output-code kernels whose config is known (TORCH_TRACE's
only_config, a user kernel's or a template's decorator), how many compile to the TTIR the H200
dumped (locations aside). Writes its section of bench/RESULTS.md.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "src"))
sys.path.insert(0, str(REPO / "tests"))

from real_triton import triton_release_python  # noqa: E402
from results_md import write_section  # noqa: E402
from tritonbisect.mlir.normalise import normalise  # noqa: E402
from tritonbisect.traces.reader import load_trace  # noqa: E402

ARCHIVE = REPO / "tests" / "data" / "inductor_artifacts" / "artifacts.tar.xz"
PROGRAMS = ("pointwise_reduction", "matmul_epilogue", "softmax_layernorm")
SECTION = "Oracles from PyTorch's and Triton's debug output (H200 artifacts, CPU)"


def cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "tritonbisect.cli", *args], capture_output=True, text=True)


def jobs_of(root: Path) -> list[tuple[str, str, Path, list[str], bool]]:
    """(kind, label, source, extra repro args, config known) for every kernel of every source."""
    out = []
    for program in PROGRAMS:
        base = root / program
        sources = [("output_code.py", p) for p in sorted((base / "debug").rglob("output_code.py"))]
        sources.append(("TORCH_TRACE", base / "torch_trace"))
        for kind, source in sources:
            listed = json.loads(cli("info", str(source), "--json").stdout)
            origins = {c.name: c.metadata["inductor"]["config_origin"] for c in load_trace(source).compilations.values()}
            for k in listed["kernels"]:
                extra = ["--kernel", k["name"], "--mode", "compile"]
                known = not origins.get(k["name"], "").startswith("derived")
                if len(k.get("launches") or []) > 1:  # one oracle per config: a user kernel's launch per config
                    out.extend((kind, f"{program}/{k['name']}#{i}", source, [*extra, "--launch-id", str(i)], known)
                               for i in range(len(k["launches"])))
                else:
                    out.append((kind, f"{program}/{k['name']}", source, extra, known))
        out.extend(("kernel dump folder", f"{program}/{d.name[:8]}", d, [], False)
                   for d in sorted((base / "kernel_dump").iterdir()) if d.is_dir())
        out.extend(("reproducer", f"{program}/{f.name}", f, [], False)
                   for f in sorted((base / "reproducer").glob("*.mlir")))
    return out


def run_one(job: tuple[str, str, Path, list[str], bool], work: Path, python: Path,
            dumped: dict[str, set[str]]) -> dict:
    kind, label, source, extra, known = job
    out = work / label.replace("/", "__").replace("#", "_")
    made = cli("repro", str(source), *extra, "--out", str(out))
    if made.returncode != 0:
        return {"kind": kind, "label": label, "status": "no oracle", "reason": made.stderr.strip()[-200:]}
    keep = out / "kept"
    t0 = time.monotonic()
    proc = subprocess.run([str(python), str(out / "compile_repro.py"), "--result", str(out / "r.json"), "--keep",
                           str(keep)], capture_output=True, text=True)
    seconds = time.monotonic() - t0
    result = json.loads((out / "r.json").read_text()) if (out / "r.json").is_file() else {}
    same = None
    ctx = json.loads((out / "compile_context.json").read_text())
    ttir = next(keep.rglob("*.ttir"), None) if known and result.get("status") == "pass" else None
    if ttir is not None:
        text = normalise(ttir.read_text()).replace("@scaled_add_0(", "@scaled_add(")
        fn = ctx["kernel"] if ctx["kernel"] != "scaled_add_0" else "scaled_add"
        same = text in dumped.get(fn, set())
    return {"kind": kind, "label": label, "status": result.get("status", f"exit {proc.returncode}"),
            "seconds": round(seconds, 2), "same_ttir": same}


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--results", type=Path, default=REPO / "bench" / "RESULTS.md")
    args = ap.parse_args()
    python = triton_release_python("3.6.0")
    with tempfile.TemporaryDirectory(prefix="artifact-bench-") as tmp:
        root = Path(tmp) / "artifacts"
        with tarfile.open(ARCHIVE) as archive:
            archive.extractall(root, filter="data")
        dumped: dict[str, set[str]] = {}
        for ttir in root.glob("*/kernel_dump/*/*.ttir"):
            dumped.setdefault(ttir.stem, set()).add(normalise(ttir.read_text()))
        jobs = jobs_of(root)
        work = Path(tmp) / "work"
        with ThreadPoolExecutor(max_workers=args.jobs) as pool:
            rows = list(pool.map(lambda j: run_one(j, work, python, dumped), jobs))
    kinds: dict[str, list[dict]] = {}
    for row in rows:
        kinds.setdefault(row["kind"], []).append(row)
    lines = [
        "`python bench/artifact_oracle_bench.py` — the artifacts of three torch.compile programs written by",
        "PyTorch 2.11 / Triton 3.6 on an H200 (tests/data/inductor_artifacts: a pointwise + reduction with a user",
        "`@triton.autotune` kernel, a matmul + gelu under max-autotune, a softmax of a layer norm); each kernel made",
        "an oracle as the docs say and its step run on this CPU-only machine with Triton 3.6.0 from PyPI.",
        "",
        "| source | oracles | pass | median step (s) | TTIR = the H200's dump (config known) |",
        "| --- | --- | --- | --- | --- |",
    ]
    for kind in ("output_code.py", "TORCH_TRACE", "kernel dump folder", "reproducer"):
        group = kinds.get(kind, [])
        passed = [r for r in group if r["status"] == "pass"]
        secs = [r["seconds"] for r in group if "seconds" in r]
        compared = [r for r in group if r.get("same_ttir") is not None]
        same = sum(1 for r in compared if r["same_ttir"])
        lines.append(f"| {kind} | {len(group)} | {len(passed)} | {statistics.median(secs) if secs else '-':} | "
                     f"{f'{same} of {len(compared)}' if compared else '-'} |")
    failed = [r for r in rows if r["status"] != "pass"]
    lines.append("")
    lines.append(f"{len(rows) - len(failed)} of {len(rows)} oracles pass" + (
        ": " + "; ".join(f"{r['label']} {r['status']}" for r in failed) if failed else "."))
    body = "\n".join(lines)
    print(body)
    write_section(SECTION, body, args.results)
    return 0 if not failed else 1


if __name__ == "__main__":
    sys.exit(main())
