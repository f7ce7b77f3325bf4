"""The runtime IR oracle on a GPU: `repro TRACE --from ttir|ttgir --mode runtime` on the shared
H100 traces, each checked four ways against a golden that the source oracle records:

    python bench/ir_runtime_gpu_check.py prepare DIR [--traces ../shared/traces/h100-triton3.6]
    python bench/ir_runtime_gpu_check.py run DIR --json OUT.json          # on the GPU
    python bench/ir_runtime_gpu_check.py render OUT.json [--results bench/RESULTS.md]

- the recorded IR as it is: pass;
- the IR with one operation changed (addf -> subf, a zero constant -> one, ...): mismatch;
- the IR with an operation this Triton does not know: unreadable_ir (exit 5, a skip);
- the embedded Python source changed instead (the same change that makes the source
  oracle fail): still pass, since the IR oracle compiles the IR, not the source.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "src"))
sys.path.insert(0, str(REPO / "bench"))

IR_EDITS = [("arith.addf", "arith.subf"), ("arith.mulf", "arith.addf"), ("arith.subf", "arith.addf"),
            ("arith.maxnumf", "arith.minnumf"), ("dense<0.000000e+00>", "dense<1.000000e+00>")]
UNKNOWN_OP = ("tt.return", "tt.tritonbisect_unknown_op")
STAGES = ("ttir", "ttgir")
EXPECTED = {"ir": "pass", "ir_edited": "mismatch", "ir_unreadable": "unreadable_ir", "source_edited": "pass",
            "source_oracle_source_edited": "mismatch"}


def _cli(*args: str) -> None:
    proc = subprocess.run([sys.executable, "-m", "tritonbisect", *args], capture_output=True, text=True,
                          env={"PYTHONPATH": str(REPO / "src"), "PATH": "/usr/bin:/bin"})
    if proc.returncode != 0:
        raise SystemExit(f"tritonbisect {' '.join(args)}: {proc.stderr.strip()}")


def _edit_ir(folder: Path, stage: str, old: str, new: str) -> bool:
    path = next(folder.glob(f"*.{stage}"))
    text = path.read_text()
    if old not in text:
        return False
    path.write_text(text.replace(old, new, 1))
    return True


def _edit_source(folder: Path, kernel: str) -> bool:
    from tritonbisect.oracles.mutations import mutate_script

    script = folder / "repro.py"
    for mutation in ("op_swap", "store_dtype", "mask_shrink"):
        text = mutate_script(script.read_text(), kernel, mutation, {})
        if text is not None:
            script.write_text(text)
            return True
    return False


def _share_blobs(out: Path) -> None:
    """Every oracle of a scenario reads the same blobs: one copy, relative links elsewhere."""
    for scenario in out.iterdir():
        shared = scenario / "source" / "blobs"
        if not shared.is_dir():
            continue
        for blobs in scenario.glob("*/blobs"):
            if blobs != shared and blobs.is_dir() and not blobs.is_symlink():
                shutil.rmtree(blobs)
                blobs.symlink_to(Path("..") / "source" / "blobs")


def prepare(out: Path, traces: Path) -> None:
    from tritonbisect.traces.reader import load_trace

    shutil.rmtree(out, ignore_errors=True)
    plan = []
    for scenario in sorted(p for p in traces.iterdir() if (p / "logs").is_dir()
                           and not p.name.endswith(("_gzip", "_zstd"))):  # same kernels, other encodings
        kernel = load_trace(scenario / "logs").kernels()[0]
        source = out / scenario.name / "source"
        _cli("repro", str(scenario / "logs"), "--kernel", kernel, "--out", str(source))
        entry = {"scenario": scenario.name, "kernel": kernel, "oracles": {}}
        edited = out / scenario.name / "source_edited"
        shutil.copytree(source, edited)
        if _edit_source(edited, kernel):
            entry["oracles"]["source_oracle_source_edited"] = str(edited.relative_to(out))
        for stage in STAGES:
            base = out / scenario.name / stage
            _cli("repro", str(scenario / "logs"), "--kernel", kernel, "--from", stage, "--mode", "runtime",
                 "--out", str(base))
            entry["oracles"][f"{stage}:ir"] = str(base.relative_to(out))
            for name, edit in (("ir_edited", lambda f, s=stage: any(_edit_ir(f, s, a, b) for a, b in IR_EDITS)),
                               ("ir_unreadable", lambda f, s=stage: _edit_ir(f, s, *UNKNOWN_OP)),
                               ("source_edited", lambda f, k=kernel: _edit_source(f, k))):
                folder = out / scenario.name / f"{stage}_{name}"
                shutil.copytree(base, folder)
                if edit(folder):
                    entry["oracles"][f"{stage}:{name}"] = str(folder.relative_to(out))
        plan.append(entry)
    _share_blobs(out)
    (out / "plan.json").write_text(json.dumps(plan, indent=1))
    print(f"{sum(len(e['oracles']) for e in plan)} oracles for {len(plan)} scenarios in {out}")


def _run_oracle(folder: Path, *args: str) -> dict:
    result = folder / f"result-{time.monotonic_ns()}.json"
    t0 = time.perf_counter()
    proc = subprocess.run([sys.executable, str(folder / "repro.py"), "--result", str(result), *args],
                          capture_output=True, text=True, timeout=600)
    data = json.loads(result.read_text()) if result.is_file() else {"status": "?", "reason": proc.stderr[-300:]}
    return {"status": data.get("status"), "rc": proc.returncode, "seconds": round(time.perf_counter() - t0, 2),
            "reason": str(data.get("reason", ""))[:240]}


def run(out: Path) -> dict:
    from concurrent.futures import ThreadPoolExecutor

    import torch
    import triton

    plan = json.loads((out / "plan.json").read_text())
    rows = []
    with ThreadPoolExecutor(max_workers=6) as pool:
        goldens = list(pool.map(lambda e: _run_oracle(out / e["scenario"] / "source", "--record-golden",
                                                      str(out / e["scenario"] / "golden.pt")), plan))
        for entry, rec in zip(plan, goldens, strict=True):
            golden = str(out / entry["scenario"] / "golden.pt")
            keys = list(entry["oracles"])
            results = list(pool.map(lambda k, e=entry, g=golden: _run_oracle(out / e["oracles"][k], "--golden", g),
                                    keys))
            row = {"scenario": entry["scenario"], "kernel": entry["kernel"], "golden": rec, "checks": {}}
            for key, got in zip(keys, results, strict=True):
                got["expected"] = EXPECTED[key.split(":", 1)[-1]]
                row["checks"][key] = got
            rows.append(row)
            print(entry["scenario"], {k: v["status"] for k, v in row["checks"].items()}, flush=True)
    return {"device": torch.cuda.get_device_name(0), "torch": torch.__version__, "triton": triton.__version__,
            "rows": rows}


def render(data: dict) -> str:
    lines = [
        f"`bench/ir_runtime_gpu_check.py` on {data['device']} (torch {data['torch']}, Triton {data['triton']}): "
        "`repro TRACE --from ttir|ttgir --mode runtime` on the shared H100 traces; the JIT compiles the "
        "recorded IR instead of the source and launches it with the rebuilt arguments, against a golden "
        "recorded by the source oracle. Each cell: status (expected).",
        "",
        "| scenario | stage | IR as recorded | IR with one op changed | unknown op in the IR | source changed, IR not |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    ok = total = 0
    for row in data["rows"]:
        for stage in STAGES:
            cells = []
            for kind in ("ir", "ir_edited", "ir_unreadable", "source_edited"):
                c = row["checks"].get(f"{stage}:{kind}")
                if c is None:
                    cells.append("n/a")
                    continue
                total += 1
                ok += c["status"] == c["expected"]
                mark = "" if c["status"] == c["expected"] else f" (expected {c['expected']})"
                cells.append(f"{c['status']}{mark}")
            lines.append(f"| {row['scenario']} | {stage} | " + " | ".join(cells) + " |")
    control = [r["checks"].get("source_oracle_source_edited") for r in data["rows"]]
    control = [c for c in control if c]
    lines += ["", f"{ok}/{total} checks as expected. Control: the source oracle with the same source change: "
              f"{sum(c['status'] == 'mismatch' for c in control)}/{len(control)} mismatch."]
    return "\n".join(lines)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("action", choices=["prepare", "run", "render"])
    ap.add_argument("path", type=Path)
    ap.add_argument("--traces", type=Path, default=REPO.parent / "shared" / "traces" / "h100-triton3.6")
    ap.add_argument("--json", type=Path)
    ap.add_argument("--results", type=Path)
    args = ap.parse_args()
    if args.action == "prepare":
        prepare(args.path, args.traces)
    elif args.action == "run":
        data = run(args.path)
        if args.json:
            args.json.write_text(json.dumps(data, indent=1))
        print(render(data))
    else:
        from results_md import write_section

        text = render(json.loads(args.path.read_text()))
        print(text)
        if args.results:
            write_section("Runtime IR oracle on the GPU", text, args.results)
    return 0


if __name__ == "__main__":
    sys.exit(main())
