"""What the build sandbox costs per probe: the same commands run unsandboxed, in bubblewrap
and in unshare, through the runner the recipes use (proc.SandboxedRunner over run_logged).

    python bench/sandbox_bench.py [--reps N] [--write]

Three workloads:
  start   `true`: the fixed cost of one process: unsandboxed without the keeper (how every
          logged command started before the keeper), unsandboxed under the keeper (every
          command now: core/keeper.py, which kills what a command leaves behind), and in each
          sandbox (namespaces, mounts, capabilities dropped, limits, private $HOME and /tmp);
  wheel   a Triton-style wheel (pip wheel --no-build-isolation of a C extension, setuptools,
          gcc through ccache with a warm cache, the LLVM headers taken from TRITON_HOME): one
          probe's build, on the recipe's own path (TritonRecipe.build_wheel, fresh tree each time);
  session `tritonbisect run [--sandbox] --json` over a 32-commit history (a shell build and
          test per step): the wall time of the whole session as a user runs it, and the
          tests and builds its --json reports.
A toy-world compat probe runs a few such processes (the wheel build, the smoke test); a real
Triton build takes 30-60 min, beside which the figures below vanish.
--write puts the tables into bench/RESULTS.md (section "Build sandbox overhead").
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # testing/: the toy worlds

from tritonbisect.builds import sandbox as sb
from tritonbisect.builds.build_process import SandboxedRunner, run_logged  # noqa: E402

MODES = ("none", sb.BWRAP, sb.UNSHARE)
NAMES = {"none": "none (unsandboxed)", sb.BWRAP: "bubblewrap", sb.UNSHARE: "unshare"}


def median_ms(samples: list[float]) -> float:
    return statistics.median(samples) * 1000


def bench_start(mode: str, reps: int, tmp: Path, *, keeper: bool = True) -> list[float]:
    from tritonbisect.core import process

    work = tmp / "work"
    work.mkdir(exist_ok=True)
    run = run_logged
    if mode != "none":
        run = SandboxedRunner(run_logged, sb.detect(mode), writable=[work])
    real = process.keeper_argv
    if not keeper:  # the command started directly, as before the keeper
        process.keeper_argv = lambda argv, **_: list(argv)  # type: ignore[assignment]
    try:
        times = []
        for _ in range(reps):
            start = time.perf_counter()
            res = run(["true"], cwd=work, env=dict(os.environ), log=tmp / "start.log")
            times.append(time.perf_counter() - start)
            assert res.returncode == 0, (tmp / "start.log").read_text()
    finally:
        process.keeper_argv = real
    return times


def session_runner(tmp: Path):
    """A function that runs one whole `tritonbisect run [--sandbox] --json` session in `mode`
    over a fresh workdir and returns (seconds, its --json)."""
    import json

    from engine_repo import BUILD, TEST, linear

    repo = tmp / "session-repo"
    shas = linear(repo, 32, culprit=19)
    counter = iter(range(10**6))

    def run(mode: str) -> tuple[float, dict]:
        workdir = tmp / f"session-{mode}-{next(counter)}"
        env = {**os.environ, "TRITONBISECT_HOME": str(workdir), sb.CHOICE_ENV: mode if mode != "none" else "auto"}
        argv = [sys.executable, "-m", "tritonbisect.cli", "run", "--repo", str(repo), "--good", shas[0],
                "--bad", shas[-1], "--build", BUILD, "--test", TEST, "--json",
                *(["--sandbox"] if mode != "none" else [])]
        start = time.perf_counter()
        proc = subprocess.run(argv, cwd=repo, env=env, capture_output=True, text=True, check=False)
        took = time.perf_counter() - start
        assert proc.returncode == 0, proc.stderr
        out = json.loads(proc.stdout.strip().splitlines()[-1])
        assert out["culprit"] == shas[19], out
        return took, out

    return run


def wheel_builder(mode: str, tmp: Path, venv):
    """A function that builds the next commit's wheel of a fresh project in `mode` and returns
    the seconds it took (the recipe's own build path)."""
    from test_sandbox_toolchain import EXT_C, LLVM_URL, SETUP_PY
    from tritonbisect.builds.downloads import store_dir
    from tritonbisect.builds.recipes import StepContext
    from tritonbisect.domains.triton.recipe import TritonRecipe

    repo = tmp / f"proj-{mode}"
    (repo / "src").mkdir(parents=True)
    (repo / "setup.py").write_text(SETUP_PY.format(url=LLVM_URL))
    (repo / "src" / "ext.c").write_text(EXT_C)
    git = ["git", "-C", str(repo), "-c", "user.name=b", "-c", "user.email=b@b"]
    subprocess.run([*git, "init", "-q"], check=True)
    workdir = tmp / "workdir"
    llvm = store_dir(workdir) / "llvm" / "llvm-toy-x64"  # the download store every worker links
    (llvm / "include").mkdir(parents=True, exist_ok=True)
    (llvm / "include" / "toyllvm.h").write_text("#define TOY_LLVM_ANSWER 42\n")
    (llvm / "version.txt").write_text(LLVM_URL)
    recipe = TritonRecipe({"test": {"command": "true"}})
    counter = iter(range(10**6))

    def build() -> float:
        i = next(counter)
        (repo / "README").write_text(f"{i}\n")
        subprocess.run([*git, "add", "-A"], check=True)
        subprocess.run([*git, "commit", "-qm", str(i)], check=True)
        commit = subprocess.run([*git, "rev-parse", "HEAD"], check=True, capture_output=True,
                                text=True).stdout.strip()
        subprocess.run([*git, "clean", "-fdxq"], check=True)
        ctx = StepContext(worktree=repo, log_dir=tmp / f"logs-{mode}-{i}", worker=0, workdir=workdir,
                          sandbox=mode != "none")
        ctx.log_dir.mkdir()
        os.environ[sb.CHOICE_ENV] = mode if mode != "none" else "auto"
        start = time.perf_counter()
        wb = recipe.build_wheel(repo, commit, ctx, venv, log=ctx.log_dir / "build.log")
        took = time.perf_counter() - start
        assert wb.kind.value == "pass", wb.log.read_text()
        return took

    return build


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=20)
    parser.add_argument("--wheel-reps", type=int, default=5)
    parser.add_argument("--session-reps", type=int, default=3)
    parser.add_argument("--write", action="store_true")
    args = parser.parse_args()
    from tritonbisect.builds.env import TargetEnv

    rows = []
    sessions: dict[str, list[tuple[float, dict]]] = {}
    with tempfile.TemporaryDirectory(prefix="sandbox-bench-") as d:
        tmp = Path(d)
        os.environ["CCACHE_DIR"] = str(tmp / "ccache")
        venv = TargetEnv.ensure(tmp / "venv")
        modes = [m for m in MODES if m == "none" or sb.detect(m) is not None]
        builders = {m: wheel_builder(m, tmp, venv) for m in modes}
        for m in modes:
            builders[m]()  # warms ccache and pip's caches; not counted
        wheel: dict[str, list[float]] = {m: [] for m in modes}
        for _ in range(args.wheel_reps):  # modes interleaved: the shared machine's load drifts
            for m in modes:
                wheel[m].append(builders[m]())
        run_session = session_runner(tmp)
        sessions = {m: [] for m in modes}
        for _ in range(args.session_reps):
            for m in modes:
                sessions[m].append(run_session(m))
        before = bench_start("none", args.reps, _fresh(tmp, "start-before"), keeper=False)
        print(f"{'before':8} start {median_ms(before):7.1f} ms", flush=True)
        for mode in MODES:
            if mode not in modes:
                rows.append((mode, None, None))
                continue
            start = bench_start(mode, args.reps, _fresh(tmp, f"start-{mode}"))
            rows.append((mode, start, wheel[mode]))
            print(f"{mode:8} start {median_ms(start):7.1f} ms   wheel {median_ms(wheel[mode]):7.0f} ms", flush=True)
    base_start = median_ms(before)
    base_wheel = median_ms(rows[0][2])
    table = ["| process | `true` (median ms) | overhead | wheel build (median ms) | overhead |",
             "| --- | --- | --- | --- | --- |",
             f"| unsandboxed, without the keeper (as before) | {base_start:.1f} | +0.0 ms | | |"]
    for mode, start, wheel in rows:
        name = NAMES[mode] if mode != "none" else "unsandboxed, under the keeper (every command now)"
        if start is None:
            table.append(f"| {name} | does not work here | | | |")
            continue
        s, w = median_ms(start), median_ms(wheel)
        table.append(f"| {name} | {s:.1f} | {s - base_start:+.1f} ms | {w:.0f} | {w - base_wheel:+.0f} ms "
                     f"({(w - base_wheel) / base_wheel * 100:+.1f}%) |")
    plain = statistics.median(t for t, _ in sessions["none"])
    stable = ["| session | wall time (median s) | tests | builds | overhead | per build or test |",
              "| --- | --- | --- | --- | --- | --- |"]
    for mode in MODES:
        if mode not in sessions:
            continue
        took = statistics.median(t for t, _ in sessions[mode])
        out = sessions[mode][0][1]
        count = out["tests"] + out["builds"]
        stable.append(f"| `run{' --sandbox' if mode != 'none' else ''}` ({NAMES[mode]}) | {took:.2f} | {out['tests']} | "
                      f"{out['builds']} | {took - plain:+.2f} s | {(took - plain) / count * 1000:+.0f} ms |")
    load = os.getloadavg()[0]
    body = "\n".join([
        f"`bench/sandbox_bench.py` ({time.strftime('%Y-%m-%d')}, {os.cpu_count()}-core shared CPU, load average "
        f"{load:.1f}, bwrap {sb.detect(sb.BWRAP).version if sb.detect(sb.BWRAP) else '-'}, as root): the recipe's "
        f"runner with and without the sandbox; `true` x{args.reps}, and a Triton-style wheel build "
        f"x{args.wheel_reps} (TritonRecipe.build_wheel: pip wheel --no-build-isolation of a C extension, gcc "
        "through a warm ccache, LLVM headers from TRITON_HOME, fresh tree each time). Every process runs under "
        "the keeper (core/keeper.py: a subreaper that kills what a command leaves behind, also when the tool "
        "is killed); a sandboxed one also drops every capability, sets no_new_privs, gets its limits (a cgroup "
        "where one can be made) and hides the host's Unix sockets.",
        "",
        *table,
        "",
        f"Whole sessions, `tritonbisect run --json` over a 32-commit history (the same build and test shell "
        f"commands per step), x{args.session_reps} each, modes interleaved; tests and builds as its --json "
        "reports them:",
        "",
        *stable,
        "",
        "The cost is a fixed start-up per process: the keeper's is a Python start (`python -I -S`, standard "
        "library only); a sandbox's adds namespaces, bind mounts, the private $HOME and /tmp made and removed "
        "(unshare: one `mount` per mount point in a shell script). A compat probe runs two sandboxed processes "
        "(wheel build, smoke test), against 30-60 min for a real Triton build. The machine is shared and was "
        "loaded: compare the rows of one run only.",
    ])
    print(body)
    if args.write:
        from results_md import write_section

        write_section("Build sandbox overhead", body)
    return 0


def _fresh(tmp: Path, name: str) -> Path:
    path = tmp / name
    if path.exists():
        shutil.rmtree(path)
    path.mkdir()
    return path


if __name__ == "__main__":
    sys.exit(main())
