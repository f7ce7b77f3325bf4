"""Several cases in one session on a GPU: each kernel of a real torch.compile program its own culprit.

    PYTHONPATH=src python bench/cases_gpu_check.py --out OUT
    PYTHONPATH=src python bench/cases_gpu_check.py --results-from bench/data/cases_gpu_check.json

On a machine with CUDA: a torch.compile program (matmul + bias + ReLU, softmax, layer norm,
two reductions: several Inductor kernels) runs once untraced (warm caches, as a user's program
has), then under `tritonbisect trace`; `tritonbisect repro --launches all` makes its
whole-program replay oracle, whose golden is recorded on the GPU. A git history of 40 commits
carries that oracle; from commit 13 on one Inductor kernel's embedded source has a planted bug,
from commit 29 on a second kernel's too (each checked first: the replay of the planted
variant fails that kernel's case only). `tritonbisect run --test 'python replay/replay.py
--golden G'` over the history must name commit 13 for the first kernel and 29 for the second,
in one session.

Writes OUT/cases_gpu_check.json and OUT/cases_gpu_check.md (the bench/RESULTS.md section);
with --results-from, rewrites that section from a saved JSON.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(REPO / "src"))
from results_md import write_section  # noqa: E402
from tritonbisect.oracles.mutations import MUTATIONS, mutate  # noqa: E402

SECTION = "Several cases in one session on the GPU: each kernel of a torch.compile program its own culprit"
COMMITS, FIRST, SECOND = 40, 13, 29

PROGRAM = """
import torch

torch.manual_seed(0)


@torch.compile
def model(x, w, b):
    y = torch.relu(x @ w + b)
    z = torch.softmax(y, dim=-1)
    n = torch.nn.functional.layer_norm(z * 3.0, (z.shape[-1],))
    return n.sum(0), z.amax(-1)


x = torch.randn(512, 256, device="cuda")
w = torch.randn(256, 384, device="cuda")
b = torch.randn(384, device="cuda")
for _ in range(2):
    out = model(x, w, b)
torch.cuda.synchronize()
print("sums", float(out[0].sum()), float(out[1].sum()))
"""


def sh(argv: list[str], *, cwd: Path | None = None, env: dict[str, str] | None = None,
       timeout: float = 600) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)


def tb(*args: str, env: dict[str, str], cwd: Path | None = None, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    return sh([sys.executable, "-m", "tritonbisect", *args], cwd=cwd, env=env, timeout=timeout)


def replay(folder: Path, golden: Path, env: dict[str, str]) -> dict:
    result = folder / "result.json"
    result.unlink(missing_ok=True)
    sh([sys.executable, str(folder / "replay.py"), "--golden", str(golden), "--result", str(result)],
       env=env, timeout=600)
    return json.loads(result.read_text()) if result.is_file() else {}


def planted(folder: Path, kernel: str, golden: Path, env: dict[str, str], work: Path) -> tuple[str, str] | None:
    """(mutation, edited source) of the first planted bug that fails `kernel`'s case only."""
    ctx = json.loads((folder / "replay_context.json").read_text())
    source = ctx["kernels"][kernel]["source"]
    for mutation in MUTATIONS:
        edited = mutate(source, kernel, mutation)
        if not edited or edited == source:
            continue
        variant = work / f"variant-{kernel}-{mutation}"
        shutil.rmtree(variant, ignore_errors=True)
        shutil.copytree(folder, variant)
        vctx = json.loads((variant / "replay_context.json").read_text())
        vctx["kernels"][kernel]["source"] = edited
        (variant / "replay_context.json").write_text(json.dumps(vctx))
        cases = replay(variant, golden, env).get("cases") or {}
        if cases.get(kernel) not in (None, "pass") and all(s == "pass" for k, s in cases.items() if k != kernel):
            return mutation, edited
    return None


def history(root: Path, oracle: Path, plants: list[tuple[int, str, str]]) -> list[str]:
    """A git history of COMMITS commits, each holding the oracle (as replay/); from commit i on,
    each (i, kernel, source) of `plants` is in its replay_context.json."""
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com",
           "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.com"}
    root.mkdir(parents=True)
    sh(["git", "init", "-q", str(root)], env=env)
    shutil.copytree(oracle, root / "replay")
    base = json.loads((oracle / "replay_context.json").read_text())
    shas = []
    for i in range(COMMITS):
        ctx = json.loads(json.dumps(base))
        for at, kernel, source in plants:
            if i >= at:
                ctx["kernels"][kernel]["source"] = source
        (root / "replay" / "replay_context.json").write_text(json.dumps(ctx))
        (root / "counter.txt").write_text(f"{i}\n")
        sh(["git", "add", "-A"], cwd=root, env=env)
        sh(["git", "commit", "-q", "-m", f"c{i}"], cwd=root, env=env)
        shas.append(sh(["git", "rev-parse", "HEAD"], cwd=root, env=env).stdout.strip())
    return shas


def run(out: Path) -> dict:
    work = Path(tempfile.mkdtemp(prefix="tb-cases-gpu-"))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO / "src"), os.environ.get("PYTHONPATH")])),
           "TORCHINDUCTOR_CACHE_DIR": str(work / "inductor"), "TRITON_CACHE_DIR": str(work / "triton-cache")}
    facts: dict = {"device": sh([sys.executable, "-c", "import torch; print(torch.cuda.get_device_name())"]).stdout.strip(),
                   "torch": sh([sys.executable, "-c", "import torch; print(torch.__version__)"]).stdout.strip(),
                   "triton": sh([sys.executable, "-c", "import triton; print(triton.__version__)"]).stdout.strip()}
    prog = work / "prog.py"
    prog.write_text(PROGRAM)
    t0 = time.time()
    first = sh([sys.executable, str(prog)], env=env)  # warm caches, as a user's program has them
    facts["untraced_rc"] = first.returncode
    traced = tb("trace", "--out", str(work / "trace"), "--", sys.executable, str(prog), env=env)
    facts["trace_rc"] = traced.returncode
    facts["trace_said"] = (traced.stderr.strip().splitlines() or [""])[-3:]
    made = tb("repro", str(work / "trace"), "--launches", "all", "--out", str(work / "oracle"), env=env)
    facts["repro_rc"] = made.returncode
    facts["repro_said"] = made.stdout.strip().splitlines()[:3]
    oracle = work / "oracle"
    golden = work / "golden.pt"
    rec = sh([sys.executable, str(oracle / "replay.py"), "--record-golden", str(golden)], env=env)
    facts["golden_rc"] = rec.returncode
    baseline = replay(oracle, golden, env)
    facts["cases_at_good"] = baseline.get("cases")
    kernels = [k for k in (baseline.get("cases") or {}) if k.startswith("triton_")]
    plants: list[tuple[int, str, str]] = []
    facts["planted"] = []
    for kernel in kernels:
        found = planted(oracle, kernel, golden, env, work)
        if found:
            at = FIRST if not plants else SECOND
            plants.append((at, kernel, found[1]))
            facts["planted"].append({"kernel": kernel, "mutation": found[0], "from_commit": at})
        if len(plants) == 2:
            break
    shas = history(work / "history", oracle, plants)
    t1 = time.time()
    res = tb("run", "--repo", str(work / "history"), "--good", shas[0], "--bad", shas[-1],
             "--test", f"{sys.executable} replay/replay.py --golden {golden}", "--workdir", str(work / "home"), "--json",
             env=env, timeout=1800)
    facts["session_seconds"] = round(time.time() - t1, 1)
    facts["setup_seconds"] = round(t1 - t0, 1)
    facts["run_rc"] = res.returncode
    lines = [line for line in res.stdout.splitlines() if line.startswith("{")]
    answer = json.loads(lines[-1]) if lines else {}
    facts["run_tail"] = res.stderr.strip().splitlines()[-25:]
    index = {sha: i for i, sha in enumerate(shas)}
    facts["cases"] = {name: {"culprit_commit": index.get(c.get("culprit")), "status": c.get("status"),
                             "confidence": c.get("confidence"), "tests": c.get("tests")}
                      for name, c in (answer.get("cases") or {}).items()}
    facts["expected"] = {kernel: at for at, kernel, _ in plants}
    facts["right"] = bool(plants) and all(facts["cases"].get(k, {}).get("culprit_commit") == at
                                          for k, at in facts["expected"].items())
    facts["culprit_commit"] = index.get(answer.get("culprit"))
    facts["builds"], facts["tests"] = answer.get("builds"), answer.get("tests")
    out.mkdir(parents=True, exist_ok=True)
    (out / "cases_gpu_check.json").write_text(json.dumps(facts, indent=2))
    shutil.rmtree(work, ignore_errors=True)
    return facts


def section(f: dict) -> str:
    rows = "\n".join(f"| `{k}` | {v.get('culprit_commit')} | {f['expected'].get(k, '—')} | {v.get('status')} | "
                     f"{v.get('confidence')} |" for k, v in sorted(f.get("cases", {}).items()))
    planted = ", ".join(f"`{p['kernel']}` ({p['mutation']}, from commit {p['from_commit']})" for p in f.get("planted", []))
    return (f"`bench/cases_gpu_check.py` on {f.get('device')} (torch {f.get('torch')}, Triton {f.get('triton')}): a "
            f"torch.compile program traced warm, its whole-program replay oracle (golden recorded on the GPU) carried by "
            f"a 40-commit history with planted bugs in {planted or 'no kernel'}.\n\n"
            f"| case (kernel) | culprit found (commit) | planted at | status | confidence |\n| --- | --- | --- | --- | --- |\n"
            f"{rows}\n\n"
            f"One session: {f.get('tests')} test runs, {f.get('builds')} builds, {f.get('session_seconds')} s; "
            f"answer {'right' if f.get('right') else 'WRONG'} for every planted kernel; the session's culprit is commit "
            f"{f.get('culprit_commit')} (the earliest). Cases at the good commit: {f.get('cases_at_good')}.\n")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", type=Path)
    ap.add_argument("--results-from", type=Path)
    ap.add_argument("--results", type=Path, default=HERE / "RESULTS.md")
    args = ap.parse_args()
    if args.results_from:
        write_section(SECTION, section(json.loads(args.results_from.read_text())), args.results)
        return 0
    facts = run(args.out or Path("cases-gpu-out"))
    text = section(facts)
    (args.out or Path("cases-gpu-out")).joinpath("cases_gpu_check.md").write_text(text)
    print(text)
    print(json.dumps({k: facts[k] for k in ("untraced_rc", "trace_rc", "repro_rc", "golden_rc", "run_rc", "right")}))
    return 0 if facts.get("right") else 1


if __name__ == "__main__":
    sys.exit(main())
