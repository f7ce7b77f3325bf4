#!/usr/bin/env python3
"""How many kernels of real traces become a reproducer oracle, and how many of those run.

For every trace found under the given roots (a folder holding `*.ndjson` trace files: a
scenario's `logs/` or `trace/`; tritonparse's `parsed/` output is skipped since the raw log
beside it is the same trace) and every kernel in it, `generate_oracle` writes the oracle of the
default launch (counted `generated`, or the refusal line is kept). Unless --no-run, each
generated oracle then runs on the CPU under TRITON_INTERPRET=1: `--record-golden` (counted
`runs`), and, when the trace recorded the outputs after the launch on the GPU, once against
them (counted `matches GPU outputs`; interpreter vs GPU numerics, so a miss there is
information, not necessarily a bug); and the compile oracle (`repro --mode compile`) of the
kernel compiles it for the traced target with this Python's Triton (counted `compiles`).

    python bench/oracle_real_share.py --traces /work/shared/traces --out /tmp/share [--write-results]
    python bench/oracle_real_share.py --archives tests/data/gpu_traces/*.tgz --write-results
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tarfile
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "src"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from results_md import write_section  # noqa: E402
from tritonbisect.core.errors import InputError  # noqa: E402
from tritonbisect.oracles.compile.folder import generate_compile_oracle  # noqa: E402
from tritonbisect.oracles.runtime import generate_oracle  # noqa: E402
from tritonbisect.oracles.selfcheck import Job, interpreter_env, run_one  # noqa: E402
from tritonbisect.traces.reader import load_trace  # noqa: E402

TITLE = "Oracle coverage on real traces"
TRACERS = ("tritonbisect", "tritonparse")  # the folder names of tests/data/gpu_traces/<program>/<tracer>/
TRACER_NAMES = {"tritonbisect": "`tritonbisect trace`", "tritonparse": "tritonparse 0.6.0"}


def find_traces(roots: list[Path]) -> list[Path]:
    found: set[Path] = set()
    for root in roots:
        for f in root.rglob("*.ndjson*"):
            if "parsed" in f.parent.parts[len(root.parts):] or "saved_tensors" in f.parts:
                continue
            found.add(f.parent)
    return sorted(found)


def label(trace_dir: Path, roots: list[Path]) -> str:
    for root in roots:
        try:
            return str(trace_dir.relative_to(root.parent))
        except ValueError:
            continue
    return str(trace_dir)


def examine(trace_dir: Path, name: str, out_root: Path, run: bool, timeout: float) -> list[dict]:
    rows = []
    try:
        trace = load_trace(trace_dir)
    except InputError as exc:
        return [{"trace": name, "kernel": "-", "generated": False, "reason": str(exc)}]
    for kernel in trace.kernels():
        row: dict = {"trace": name, "kernel": kernel, "generated": False}
        out = out_root / name.replace("/", "__") / kernel
        try:
            oracle = generate_oracle(trace, kernel, out)
        except InputError as exc:
            row["reason"] = str(exc)
            if run:
                _compile(trace, kernel, out / "compile", row, timeout)
            rows.append(row)
            continue
        row["generated"] = True
        row["has_gpu_outputs"] = any(a.get("after") for a in oracle.context["args"])
        if run:
            env = interpreter_env()
            # not golden.pt: beside the script that file would take the place of the trace's outputs
            rec = run_one(Job("rec", oracle.script, ["--record-golden", str(out / "golden.cpu.pt")], out / "rec.json"),
                          env=env, timeout=timeout)
            row["runs"] = rec.status == "pass"
            row["run_status"] = rec.status
            row["run_reason"] = rec.reason[:300]
            if row["has_gpu_outputs"]:
                gpu = run_one(Job("gpu", oracle.script, [], out / "gpu.json"), env=env, timeout=timeout)
                row["matches_gpu"] = gpu.status == "pass"
                row["gpu_reason"] = gpu.reason[:300]
        if run:
            _compile(trace, kernel, out / "compile", row, timeout)
        rows.append(row)
    return rows


def _compile(trace: object, kernel: str, out: Path, row: dict, timeout: float) -> None:
    """`repro --mode compile` for the traced target, run with this Python's Triton (no GPU)."""
    try:
        generate_compile_oracle(trace, kernel, out)
    except InputError as exc:
        row["compiles"] = False
        row["compile_reason"] = str(exc)[:300]
        return
    result = out / "result.json"
    try:
        subprocess.run([sys.executable, str(out / "compile_repro.py"), "--result", str(result)],
                       capture_output=True, timeout=timeout,
                       env={k: v for k, v in os.environ.items() if k not in ("TRITON_INTERPRET", "TRITONBISECT_RESULT")})
        data = json.loads(result.read_text())
    except (subprocess.TimeoutExpired, OSError, ValueError) as exc:
        data = {"status": "missing", "reason": str(exc)}
    row["compiles"] = data.get("status") == "pass"
    row["compile_reason"] = str(data.get("reason", ""))[:300]


def summarize(rows: list[dict], ran: bool) -> dict:
    kernels = [r for r in rows if r["kernel"] != "-"]
    out = {"kernels": len(kernels), "generated": sum(r["generated"] for r in kernels)}
    if ran:
        out["runs"] = sum(bool(r.get("runs")) for r in kernels)
        with_gpu = [r for r in kernels if r.get("has_gpu_outputs")]
        out["with_gpu_outputs"] = len(with_gpu)
        out["matches_gpu"] = sum(bool(r.get("matches_gpu")) for r in with_gpu)
        out["compiles"] = sum(bool(r.get("compiles")) for r in kernels)
    return out


def markdown(rows: list[dict], summary: dict, command: str, before: dict | None, before_note: str = "") -> str:
    lines = [
        f"`python bench/oracle_real_share.py {command}` — every kernel of every real trace "
        "(H100, torch 2.11, Triton 3.6; written by `tritonbisect trace` and by tritonparse 0.6.0): is an oracle "
        "generated (default launch), does it run on the CPU under TRITON_INTERPRET=1 (`--record-golden`, "
        "torch 2.13 CPU, Triton 3.9), where the trace holds the GPU's outputs after the launch, does the "
        "interpreter's result match them, and does `repro --mode compile` compile it for the traced sm90.",
        "",
    ]
    if before:
        lines += [f"Before this change: {before['generated']}/{before['kernels']} generated.", ""]
    if before_note:
        lines += [f"Before this change: {before_note}", ""]
    s = summary
    lines.append(f"**{s['generated']}/{s['kernels']} generated**"
                 + (f", {s['runs']}/{s['kernels']} run under the interpreter, {s['matches_gpu']}/"
                    f"{s['with_gpu_outputs']} match the GPU outputs recorded in the trace, {s['compiles']}/"
                    f"{s['kernels']} compile for the traced sm90 with `--mode compile`" if "runs" in s else ""))
    for tracer in TRACERS:
        mine = [r for r in rows if r["kernel"] != "-" and tracer in r["trace"].split("/")]
        if mine:
            t = summarize(mine, "runs" in s)
            lines.append(f"- traces written by {TRACER_NAMES[tracer]}: {t['generated']}/{t['kernels']} generated"
                         + (f", {t['runs']} run under the interpreter, {t['compiles']} compile" if "runs" in t else ""))
    lines += ["", "| trace | kernel | generated | runs (interpreter) | matches GPU outputs | compiles (sm90) "
              "| refusal / failure |", "| --- | --- | --- | --- | --- | --- | --- |"]
    for r in rows:
        why = r.get("reason") or (r.get("run_reason") if r.get("runs") is False else "") or (
            r.get("gpu_reason") if r.get("matches_gpu") is False else "") or (
            r.get("compile_reason") if r.get("compiles") is False else "")
        why = (why or "").replace("|", "\\|").replace("\n", " ")[:160]
        lines.append(
            f"| {r['trace']} | `{r['kernel'][:48]}` | {'yes' if r['generated'] else 'no'} | "
            f"{ {True: 'yes', False: 'no', None: '-'}[r.get('runs')] } | "
            f"{ {True: 'yes', False: 'no', None: '-'}[r.get('matches_gpu')] } | "
            f"{ {True: 'yes', False: 'no', None: '-'}[r.get('compiles')] } | {why} |"
        )
    return "\n".join(lines) + "\n"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--traces", nargs="*", default=None, help="folders to search for traces")
    ap.add_argument("--archives", nargs="*", default=None, metavar="TGZ",
                    help="trace archives to unpack and search, e.g. tests/data/gpu_traces/*.tgz")
    ap.add_argument("--out", default=None, help="folder for the oracles and share.json (default: a temp dir)")
    ap.add_argument("--no-run", action="store_true", help="only generate, do not run under the interpreter")
    ap.add_argument("--timeout", type=float, default=300.0)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--before", default=None, help="a share.json of an earlier run, quoted as 'before'")
    ap.add_argument("--before-note", default="", help="a sentence on the share before this change, quoted as is")
    ap.add_argument("--write-results", action="store_true", help=f"write the '{TITLE}' section of bench/RESULTS.md")
    args = ap.parse_args()
    out = Path(args.out) if args.out else Path(tempfile.mkdtemp(prefix="oracle-share-"))
    out.mkdir(parents=True, exist_ok=True)
    roots = [Path(t).resolve() for t in args.traces or []]
    if args.archives:
        unpacked = out / "gpu_traces"
        for archive in args.archives:
            with tarfile.open(archive) as tar:
                tar.extractall(unpacked, filter="data")
        roots.append(unpacked.resolve())
    if not roots:
        roots = [Path("/work/shared/traces")]
    traces = find_traces(roots)
    with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        parts = list(pool.map(lambda t: examine(t, label(t, roots), out / "oracles", not args.no_run, args.timeout),
                              traces))
    rows = [r for part in parts for r in part]
    summary = summarize(rows, not args.no_run)
    before = json.loads(Path(args.before).read_text())["summary"] if args.before else None
    (out / "share.json").write_text(json.dumps({"summary": summary, "rows": rows}, indent=1) + "\n")
    command = (f"--traces {' '.join(args.traces)} " if args.traces else "") + (
        f"--archives {' '.join(args.archives)}" if args.archives else "")
    md = markdown(rows, summary, command.strip() or "--traces /work/shared/traces", before, args.before_note)
    (out / "share.md").write_text(md)
    print(md)
    if args.write_results:
        write_section(TITLE, md)
    return 0


if __name__ == "__main__":
    sys.exit(main())
