#!/usr/bin/env python3
"""What the shared downloads and the build budget save, on the toy world's eras.

    python bench/eras_bench.py            # prints the figures (markdown) and a JSON line
    python bench/eras_bench.py --steps 8

Downloads: two workers build Triton at commits on both sides of an LLVM bump, alternating
(w0 old pin, w1 new pin, w0 new, w1 old, ...), each build's prebuilt LLVM "downloaded" by
the toy setup.py from a mirror served on 127.0.0.1 (its GETs are counted) with the old rule (a different URL deletes
TRITON_HOME/.triton/llvm first). Compared:
  one-home      one TRITON_HOME for every worker (what the tool did)
  shared-store  a TRITON_HOME per worker linked into <workdir>/downloads (builds/downloads.py)
Counted: downloads (the mirror server's GET requests), bytes fetched, builds whose LLVM was
deleted by another worker's build while it could still be in use.

Build budget: two toy LLVM builds at once, ninja's default -j (CPUs + 2 each) against the
CPUs divided between them (default_max_jobs), wall time of the pair.
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import platform
import shutil
import subprocess
import sys
import tarfile
import tempfile
import threading
import time
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # testing/: the toy worlds
from testing.toyworld import make_world
from tritonbisect.builds.cache import ArtifactCache
from tritonbisect.builds.downloads import store_dir
from tritonbisect.builds.llvm_build import LLVMConfig, build_llvm
from tritonbisect.core.outcome import Kind
from tritonbisect.domains.triton.recipe import TritonConfig, build_triton_wheel, default_max_jobs


def _worktree(repo: Path, root: Path, sha: str, name: str) -> Path:
    path = root / "worktrees" / repo.name / name
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        subprocess.run(["git", "-C", str(repo), "worktree", "add", "-q", "--detach", str(path), sha],
                       check=True, capture_output=True)
    subprocess.run(["git", "-C", str(path), "checkout", "-q", "--detach", "--force", sha], check=True,
                   capture_output=True)
    return path


def _mirror(world, root: Path) -> Path:
    t = world.truth
    mirror = root / "mirror"
    mirror.mkdir()
    cache = ArtifactCache(root / "llvm-cache")
    for llvm, build in ((t["old_llvm"], None), (t["new_llvm"], 2)):
        tree = _worktree(world.llvm, root, llvm, "llvm")
        res = build_llvm(tree, llvm, cache=cache, config=LLVMConfig(), build_dir=root / "llvm-build",
                         log=root / "llvm.log", repo_id="toy-llvm")
        if res.kind is not Kind.PASS:
            raise SystemExit(f"toy LLVM build failed: {res.reason}")
        name = f"llvm-{llvm[:8]}-toy-{platform.machine()}" + (f"-{build}" if build else "")
        with tarfile.open(mirror / f"{name}.tar.gz", "w:gz") as tar:
            for child in res.prefix.iterdir():
                tar.add(child, arcname=child.name)
    return mirror


def _real_llvms(llvm_root: Path, store: Path | None) -> set[Path]:
    """Unpacked LLVMs (real folders, not links) a build may be using: in the home, in the store."""
    roots = [llvm_root] + ([store / "llvm"] if store is not None else [])
    return {p for r in roots if r.is_dir() for p in r.iterdir() if p.is_dir() and not p.is_symlink()}


class _Counting(SimpleHTTPRequestHandler):
    def do_GET(self):  # noqa: N802 - the http.server name
        self.server.hits.append(self.path)  # type: ignore[attr-defined]
        super().do_GET()

    def log_message(self, *args):
        pass


def downloads(world, root: Path, mirror: Path, steps: int, mode: str) -> dict:
    t = world.truth
    sides = [t["good_triton"], t["bad_triton_llvm"]]  # llvm-hash.txt era / llvm-info.json build 2
    work = root / mode
    store = store_dir(work) if mode == "shared-store" else None
    deleted = 0
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(_Counting, directory=str(mirror)))
    httpd.hits = []  # type: ignore[attr-defined]
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{httpd.server_address[1]}"
    start = time.monotonic()
    for i in range(steps):
        worker = i % 2
        sha = sides[(i + i // 2) % 2]  # w0 old, w1 new, w0 new, w1 old, ...
        home = work / "triton-home" / (f"w{worker}" if store else "")
        llvm_root = home / ".triton" / "llvm"
        before = _real_llvms(llvm_root, store)
        tree = _worktree(world.triton, work, sha, f"w{worker}")
        res = build_triton_wheel(
            tree, sha, cache=ArtifactCache(work / f"cache-{i}"), config=TritonConfig(),
            log=work / f"step-{i}.log", repo_id="toy-triton", triton_home=home, python=sys.executable,
            base_env={"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "TRITON_TOY_LLVM_MIRROR": url},
            downloads=store, workers=2,
        )
        if res.kind is not Kind.PASS:
            raise SystemExit(f"{mode} step {i}: {res.reason}\n{res.log.read_text()[-2000:]}")
        deleted += len(before - _real_llvms(llvm_root, store))
    httpd.shutdown()
    hits = httpd.hits  # type: ignore[attr-defined]
    nbytes = sum((mirror / h.lstrip("/")).stat().st_size for h in hits)
    return {"mode": mode, "steps": steps, "downloads": len(hits), "kib": round(nbytes / 1024),
            "llvm_deleted_by_a_build": deleted, "seconds": round(time.monotonic() - start, 1)}


def budget(world, root: Path) -> list[dict]:
    t = world.truth
    out = []
    cpus = os.cpu_count() or 1
    for label, jobs in (("ninja default (CPUs+2 each)", None), ("CPUs divided", default_max_jobs(2))):
        trees = [_worktree(world.llvm, root, t["old_llvm"], f"budget-{label[:5]}-{i}") for i in range(2)]
        results: list = [None, None]

        def one(i: int, trees=trees, results=results, label=label, jobs=jobs) -> None:
            cache = ArtifactCache(root / f"budget-cache-{label[:5]}-{i}")
            results[i] = build_llvm(trees[i], t["old_llvm"], cache=cache, config=LLVMConfig(ccache=False),
                                    build_dir=root / f"budget-build-{label[:5]}-{i}",
                                    log=root / f"budget-{label[:5]}-{i}.log", repo_id=f"toy-llvm-{i}", jobs=jobs)

        start = time.monotonic()
        threads = [threading.Thread(target=one, args=(i,)) for i in range(2)]
        for th in threads:
            th.start()
        for th in threads:
            th.join()
        if any(r is None or r.kind is not Kind.PASS for r in results):
            raise SystemExit(f"budget build failed: {results}")
        out.append({"jobs": label, "per_build_j": jobs or cpus + 2, "pair_seconds": round(time.monotonic() - start, 1)})
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--steps", type=int, default=8)
    args = ap.parse_args()
    root = Path(tempfile.mkdtemp(prefix="eras-bench-"))
    try:
        world = make_world(root / "world", llvm_commits=20, triton_commits=36, eras=True)
        mirror = _mirror(world, root)
        rows = [downloads(world, root, mirror, args.steps, m) for m in ("one-home", "shared-store")]
        jobs = budget(world, root)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    print("| layout | steps | downloads | KiB fetched | LLVMs deleted by another build | s |")
    print("| --- | --- | --- | --- | --- | --- |")
    for r in rows:
        print(f"| {r['mode']} | {r['steps']} | {r['downloads']} | {r['kib']} | {r['llvm_deleted_by_a_build']} | {r['seconds']} |")
    print()
    print("| two LLVM builds at once | -j per build | wall s |")
    print("| --- | --- | --- |")
    for j in jobs:
        print(f"| {j['jobs']} | {j['per_build_j']} | {j['pair_seconds']} |")
    print(json.dumps({"downloads": rows, "budget": jobs, "cpus": os.cpu_count()}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
