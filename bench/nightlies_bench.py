"""`tritonbisect triton --wheel-index` on the toy world: `--wheels off` versus `auto`.

A toy Triton history whose good..bad range holds N commits (default 600) and one behaviour
regression; a nightly wheel (version 3.6.0+git<sha8>) of every EVERY-th commit of the range
(default 20), endpoints included, built once with the real toy build and served as a PEP 503
index by `python -m http.server` on 127.0.0.1. Both modes then bisect the same range from a
fresh workdir each (no shared artifact cache): `off` builds every step from source; `auto`
installs the nightlies first and builds only inside the bracket they leave, at most
ceil(log2(EVERY + 1)) + 1 source builds.

    python bench/nightlies_bench.py [--workdir DIR] [--n 600] [--every 20] [--out DIR] [--no-results]

The world and the nightly wheels are kept under --workdir between runs. Writes the figures
(source builds, installs, test runs, wall time) to the "triton --wheel-index: nightlies
first" section of bench/RESULTS.md and, with --out, to DIR/nightlies.json.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(REPO / "src"))
sys.path.insert(0, str(REPO / "tests"))
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # testing/: the toy worlds

from nightly_world import build_nightlies  # noqa: E402
from results_md import write_section  # noqa: E402
from testing.toyworld.world import make_world  # noqa: E402
from wheel_index_world import LocalIndex, write_simple_index  # noqa: E402

TITLE = "triton --wheel-index: nightlies first"


def world_and_range(root: Path, n: int, every: int):
    """A toy world whose Triton history has a range of n commits around the regression; the
    regression sits a third of the way in, in the middle of a gap between two nightlies."""
    triton_commits = math.ceil(n * 1.85) + 10 + 5 * every
    world_dir = root / "world"
    if (world_dir / "truth.json").exists():
        from testing.toyworld.world import ToyWorld

        truth = json.loads((world_dir / "truth.json").read_text())
        world = ToyWorld(root=world_dir, llvm=world_dir / "llvm-project",
                         triton=world_dir / "triton", torch=None, truth=truth)
    else:
        world = make_world(world_dir, llvm_commits=20, triton_commits=triton_commits)
        (world_dir / "truth.json").write_text(world.truth_json())
    order = world.truth["triton_order"]
    tr = order.index(world.truth["triton_regression"])
    g = tr - every * ((n // 3) // every) - every // 2
    if g < 1 or g + n >= order.index(world.truth["triton_regression_fix"]):
        raise SystemExit(f"no range of {n} commits around the regression in this world")
    return world, order[g], order[g + n], [order[i] for i in range(g, g + n + 1, every)]


def nightlies(root: Path, world, commits: list[str]) -> tuple[list[Path], float]:
    out = root / "wheels"
    done = root / "wheels.done"
    if done.exists():
        return sorted(out.glob("*.whl")), float(done.read_text())
    broken = set(world.truth["triton_broken"])
    start = time.monotonic()
    wheels = build_nightlies(world, [c for c in commits if c not in broken], root / "builder", out)
    seconds = time.monotonic() - start
    done.write_text(f"{seconds:.1f}")
    return wheels, seconds


def bisect(world, good: str, bad: str, index_url: str, mode: str, home: Path) -> dict:
    env = {**os.environ, "PYTHONPATH": str(REPO / "src")}
    argv = [sys.executable, "-m", "tritonbisect.cli", "triton", "--triton-dir", str(world.triton),
            "--llvm-dir", str(world.llvm), "--good", good, "--bad", bad,
            "--test", world.truth["triton_test"], "--wheel-index", index_url, "--wheels", mode,
            "--workdir", str(home), "--json"]
    start = time.monotonic()
    proc = subprocess.run(argv, capture_output=True, text=True, env=env)
    wall = time.monotonic() - start
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("{")]
    if not lines:
        raise SystemExit(f"--wheels {mode}: no result (exit {proc.returncode}):\n{proc.stderr[-3000:]}")
    res = json.loads(lines[-1])
    return {"mode": mode, "exit": proc.returncode, "wall_s": round(wall, 1),
            "culprit": res["culprit"], "source_builds": res["source_builds"],
            "installs": res["installs"], "tests": res["tests"],
            "phases": [p["name"] for p in res["phases"]],
            "bracket": res["wheels"].get("bracket")}


def _hours(run: dict) -> str:
    return f"{run['source_builds'] * 0.75:g}"


def section(fig: dict) -> str:
    n, every = fig["n"], fig["every"]
    bound = math.ceil(math.log2(every + 1)) + 1
    rows = ["| `--wheels` | source builds | installs | test runs | wall time | culprit |",
            "|---|---|---|---|---|---|"]
    for r in fig["runs"]:
        ok = "right" if r["culprit"] == fig["regression"] else f"WRONG {r['culprit']}"
        rows.append(f"| {r['mode']} | {r['source_builds']} | {r['installs']} | {r['tests']} "
                    f"| {r['wall_s']} s | {ok} |")
    auto = next(r for r in fig["runs"] if r["mode"] == "auto")
    off = next(r for r in fig["runs"] if r["mode"] == "off")
    b = auto["bracket"] or {}
    return "\n".join([
        f"`tritonbisect triton --wheel-index URL --wheels off|auto` on the toy world: a range "
        f"of N = {n} Triton commits with one regression (and one commit that does not build), "
        f"a nightly wheel (`3.6.0+git<sha8>`) of every {every}th commit of the range, "
        f"endpoints included ({fig['nightlies']} wheels, built beforehand in "
        f"{fig['nightly_build_s']} s and not counted), served by `python -m http.server` on "
        "127.0.0.1. Each mode starts from an empty workdir (its own toy LLVM build, no shared "
        "artifact cache); 2-core machine shared with other jobs.",
        "",
        *rows,
        "",
        f"`auto` installs the nightlies first (the endpoints too: they have wheels), which "
        f"leave the bracket {b.get('good', '')[:12]} ({b.get('good_version')}) .. "
        f"{b.get('bad', '')[:12]} ({b.get('bad_version')}) of {b.get('commits')} commits, "
        f"then builds from source only inside it: {auto['source_builds']} source builds "
        f"against the bound ceil(log2({every} + 1)) + 1 = {bound}; `off` builds the two "
        f"endpoints and the search's steps, about ceil(log2({n} + 1)) = "
        f"{math.ceil(math.log2(n + 1))} (the confirmation re-tests cached builds). "
        "Toy builds take seconds, so the wall times here are mostly tests and installs; at "
        f"45 min per real Triton build the source builds alone would cost {_hours(off)} h "
        f"with `off` and {_hours(auto)} h with `auto`.",
        "",
        f"Reproduce: `python bench/nightlies_bench.py --n {n} --every {every}`.",
    ])


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--workdir", type=Path)
    ap.add_argument("--n", type=int, default=600)
    ap.add_argument("--every", type=int, default=20)
    ap.add_argument("--out", type=Path)
    ap.add_argument("--no-results", action="store_true", help="do not write bench/RESULTS.md")
    args = ap.parse_args(argv)
    root = (args.workdir or Path(tempfile.mkdtemp(prefix="tb-nightlies-"))).resolve()
    root.mkdir(parents=True, exist_ok=True)
    world, good, bad, commits = world_and_range(root, args.n, args.every)
    wheels, build_s = nightlies(root, world, commits)
    print(f"{len(wheels)} nightlies ({build_s:.0f} s to build)", file=sys.stderr)
    write_simple_index(root / "index", wheels)
    idx = LocalIndex(root / "index").start()
    runs = []
    try:
        stamp = time.strftime("%H%M%S")
        for mode in ("off", "auto"):
            run = bisect(world, good, bad, idx.url, mode, root / f"home-{mode}-{stamp}")
            print(json.dumps(run), file=sys.stderr)
            runs.append(run)
    finally:
        idx.stop()
    fig = {"n": args.n, "every": args.every, "nightlies": len(wheels),
           "nightly_build_s": round(build_s), "regression": world.truth["triton_regression"],
           "runs": runs}
    if args.out:
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / "nightlies.json").write_text(json.dumps(fig, indent=2))
    if not args.no_results:
        write_section(TITLE, section(fig))
    print(section(fig))
    bad_runs = [r for r in runs if r["exit"] != 0 or r["culprit"] != fig["regression"]]
    return 1 if bad_runs else 0


if __name__ == "__main__":
    sys.exit(main())
