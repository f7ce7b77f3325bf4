"""What crash isolation costs in the whole-program replay oracle: a long-lived forked worker
against a fresh interpreter per launch (spawn), with no isolation as the baseline.

    python bench/replay_bench.py [--kernels 12] [--repeat 3] [--device auto|cpu] [--results bench/RESULTS.md]

A generated program chains K distinct kernels (kernel i reads what kernel i-1 wrote); it is
traced with `tritonbisect trace` (under TRITON_INTERPRET=1 without a GPU), `repro --launches
all` writes the replay oracle, and `replay.py --isolation none|fork|spawn` replays it, each run
with a fresh Triton cache (so every kernel compiles, on a GPU). Then one kernel's source is
made to abort (it calls a `@triton.constexpr_function` that calls os.abort(): at JIT time on a GPU,
when it runs under the interpreter): the replay must report that kernel as
`crash` and the others as `pass`, with fork and with spawn. Also the raw primitives: fork+exit
of this process, and a spawn child that imports torch and triton.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "src"))

from results_md import write_section  # noqa: E402

KERNEL = '''
@triton.jit
def k{i}(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    tl.store(y_ptr + offs, x * {scale} + {i}.0, mask=mask)
'''


def program(kernels: int) -> str:
    head = "import os, sys\nimport torch\nimport triton\nimport triton.language as tl\n"
    body = "".join(KERNEL.format(i=i, scale=1.0 + i / 64) for i in range(kernels))
    run = (
        "\n\ngpu = torch.cuda.is_available() and os.environ.get('TRITON_INTERPRET', '0') in ('', '0')\n"
        "torch.set_default_device('cuda' if gpu else 'cpu')\n"
        f"n = 4096\nbufs = [torch.randn(n)] + [torch.empty(n) for _ in range({kernels})]\n"
        + "".join(f"k{i}[(triton.cdiv(n, 1024),)](bufs[{i}], bufs[{i + 1}], n, BLOCK=1024)\n" for i in range(kernels))
        + "torch.save({'last': bufs[-1].cpu()}, sys.argv[1])\n"
    )
    return head + body + run


def env_for(device: str, cache: Path) -> dict[str, str]:
    env = dict(os.environ, PYTHONPATH=str(REPO / "src"), TRITON_CACHE_DIR=str(cache))
    env.pop("TRITON_INTERPRET", None)
    if device == "cpu":
        env["TRITON_INTERPRET"] = "1"
    return env


def cli(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess:
    proc = subprocess.run([sys.executable, "-m", "tritonbisect.cli", *args], env=env, capture_output=True, text=True)
    if proc.returncode != 0:
        raise SystemExit(f"tritonbisect {' '.join(args)} failed: {proc.stderr.strip()[-400:]}")
    return proc


def replay(oracle: Path, isolation: str, device: str, tmp: Path) -> tuple[float, dict]:
    cache = Path(tempfile.mkdtemp(prefix="cache-", dir=tmp))
    result = tmp / "result.json"
    t0 = time.perf_counter()
    proc = subprocess.run([sys.executable, str(oracle / "replay.py"), "--isolation", isolation, "--result", str(result)],
                          env=env_for(device, cache), capture_output=True, text=True)
    seconds = time.perf_counter() - t0
    shutil.rmtree(cache, ignore_errors=True)
    data = json.loads(result.read_text())
    data["rc"] = proc.returncode
    return seconds, data


def plant_abort(oracle: Path, dest: Path, kernel: str) -> Path:
    shutil.rmtree(dest, ignore_errors=True)
    shutil.copytree(oracle, dest)
    path = dest / "replay_context.json"
    ctx = json.loads(path.read_text())
    src = ctx["kernels"][kernel]["source"]
    line = "    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)\n"
    src = src.replace(line, "    _specialize_check(BLOCK)\n" + line, 1)
    at = src.index("@triton.jit")  # the interpreter calls the constexpr function when the kernel runs
    helper = "import os\n\n\n@triton.constexpr_function\ndef _specialize_check(block):\n    os.abort()\n\n\n"
    ctx["kernels"][kernel]["source"] = src[:at] + helper + src[at:] + JIT_HOOK_ABORT
    path.write_text(json.dumps(ctx))
    return dest


# On a GPU the compile-time abort comes from the JIT's cache hook, which Triton calls right before it
# compiles a kernel that is not cached: the module is loaded just before its first launch, so the
# next compile is this kernel's. (Triton 3.6's code generator refuses the constexpr function call
# above with "Unsupported function reference" before it could abort.)
JIT_HOOK_ABORT = """

def _abort_on_compile(*args, **kwargs):
    os.abort()


if hasattr(triton, "knobs"):
    triton.knobs.runtime.jit_cache_hook = _abort_on_compile
else:
    triton.runtime.jit.JITFunction.cache_hook = _abort_on_compile
"""


def _child_imports() -> None:
    import torch  # noqa: F401
    import triton  # noqa: F401


def primitives(repeat: int = 20) -> dict[str, float]:
    import torch  # noqa: F401  (the parent has them imported, as the replay's parent has)
    import triton  # noqa: F401

    forks = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        pid = os.fork()
        if pid == 0:
            os._exit(0)
        os.waitpid(pid, 0)
        forks.append(time.perf_counter() - t0)
    spawns = []
    ctx = multiprocessing.get_context("spawn")
    for _ in range(3):
        t0 = time.perf_counter()
        p = ctx.Process(target=_child_imports)
        p.start()
        p.join()
        spawns.append(time.perf_counter() - t0)
    return {"fork_ms": statistics.median(forks) * 1e3, "spawn_ms": statistics.median(spawns) * 1e3}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--kernels", type=int, default=12)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--device", default="auto", choices=["auto", "cpu", "cuda"])
    ap.add_argument("--results", type=Path, default=None)
    ap.add_argument("--json", type=Path, default=None, help="also write the figures here")
    args = ap.parse_args()
    device = args.device
    if device == "auto":
        import torch

        device = "cuda" if torch.cuda.is_available() else "cpu"
    tmp = Path(tempfile.mkdtemp(prefix="replay-bench-"))
    try:
        prog = tmp / "chain.py"
        prog.write_text(program(args.kernels))
        cli(["trace", "--out", str(tmp / "trace"), "--", sys.executable, str(prog), str(tmp / "out.pt")],
            env_for(device, tmp / "trace-cache"))
        oracle = tmp / "oracle"
        cli(["repro", str(tmp / "trace"), "--launches", "all", "--out", str(oracle)], env_for(device, tmp / "c"))
        times: dict[str, list[float]] = {}
        for _ in range(args.repeat):
            for iso in ("none", "fork", "spawn"):
                seconds, data = replay(oracle, iso, device, tmp)
                if data["status"] != "pass":
                    raise SystemExit(f"replay with --isolation {iso} did not pass: {data.get('reason')}")
                times.setdefault(iso, []).append(seconds)
        victim = f"k{args.kernels // 2}"
        crashed = plant_abort(oracle, tmp / "crash", victim)
        crash = {}
        for iso in ("fork", "spawn"):
            seconds, data = replay(crashed, iso, device, tmp)
            kinds = [e["status"] for e in data["launches"]]
            ok = data["status"] == "crash" and kinds.count("crash") == 1 and kinds.count("pass") == len(kinds) - 1
            crash[iso] = {"seconds": seconds, "ok": ok, "workers": data.get("workers_started"), "rc": data["rc"],
                          "reason": data["reason"][:160]}
        prim = primitives()
        med = {k: statistics.median(v) for k, v in times.items()}
        figures = {"device": device, "kernels": args.kernels, "median_s": med, "all_s": times, "crash": crash,
                   "primitives": prim, "cpus": os.cpu_count(), "python": platform.python_version()}
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print(json.dumps(figures, indent=1))
    if args.json:
        args.json.write_text(json.dumps(figures, indent=1))
    if args.results:
        write_section(section_title(device), render(figures), args.results)
    return 0


def section_title(device: str) -> str:
    return f"Whole-program replay: crash isolation, fork vs spawn ({'GPU' if device == 'cuda' else 'CPU'})"


def render(f: dict) -> str:
    k = f["kernels"]
    med = f["median_s"]
    per = {iso: (med[iso] - med["none"]) / k * 1e3 for iso in ("fork", "spawn")}
    where = ("the GPU, each run with a fresh Triton cache: every kernel is compiled in the worker, then loaded "
             "from the cache by the replaying process") if f["device"] == "cuda" else \
        "the CPU under TRITON_INTERPRET=1: the worker runs each launch on the buffers it is sent"
    lines = [
        f"`bench/replay_bench.py --kernels {k} --repeat {len(f['all_s']['none'])}` on {where}; "
        f"{f['cpus']} cores, Python {f['python']}. A chain of {k} distinct kernels (each reads what the previous "
        "one wrote), traced by `tritonbisect trace`, replayed by `repro --launches all`'s `replay.py`; "
        "wall time of the whole `python replay.py` (median).",
        "",
        "| isolation | replay (s) | isolation cost per launch (ms) | workers started |",
        "| --- | --- | --- | --- |",
        f"| none (one process) | {med['none']:.2f} | - | 0 |",
        f"| fork: long-lived worker from a fork server | {med['fork']:.2f} | {per['fork']:.1f} | 1 |",
        f"| spawn: a fresh interpreter per launch | {med['spawn']:.2f} | {per['spawn']:.1f} | {k} |",
        "",
        f"spawn/fork replay time: {med['spawn'] / med['fork']:.2f}x. Primitives in a process that has imported "
        f"torch and triton: fork + exit + wait {f['primitives']['fork_ms']:.1f} ms, a spawn child importing torch "
        f"and triton {f['primitives']['spawn_ms']:.0f} ms.",
        "",
        f"A planted abort at JIT time in kernel k{f.get('crash_kernels', k) // 2} of a chain of "
        f"{f.get('crash_kernels', k)} (`os.abort()` from a `@triton.constexpr_function` under the interpreter, from "
        "the JIT cache hook on a GPU):",
        "",
        "| isolation | replay (s) | that kernel `crash`, the others `pass` | workers started | result |",
        "| --- | --- | --- | --- | --- |",
    ]
    for iso, c in f["crash"].items():
        lines.append(f"| {iso} | {c['seconds']:.2f} | {'yes' if c['ok'] else 'NO'} | {c['workers']} | "
                     f"exit {c['rc']}: {c['reason'].replace('|', '/')[:120]} |")
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
