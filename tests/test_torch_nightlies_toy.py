"""`tritonbisect torch --wheel-index` on the toy world.

The toy PyTorch is built as PyTorch builds its nightlies: PYTORCH_BUILD_VERSION gives a dated
version with no sha (`2.10.0.dev20250103+cpu`), the commit is only in `toytorch/version.py`
(`git_version`), and PYTORCH_EXTRA_INSTALL_REQUIREMENTS pins the Triton (`triton==...+git<sha8>`).
The nightlies are real wheels (pip wheel of the toy checkout at each nightly commit) on a local
PEP 503 index served by http.server, next to nightlies of the Triton commits they pin.
"""

from __future__ import annotations

import json
import math
import subprocess
import sys
from datetime import datetime, timezone
from pathlib import Path

import pytest

from bisectors_world import error_line, run_cli, run_json
from nightly_world import build_nightlies
from testing.toyworld.world import make_world
from wheel_index_world import LocalIndex, write_simple_index

pytestmark = pytest.mark.slow

EVERY = 5  # toy commits are 5 hours apart: a nightly every 25 hours, one per date


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True,
                          text=True).stdout.strip()


def build_torch_nightly(world, sha: str, tree: Path, out: Path, requires: str = "") -> Path:
    """pip wheel of the toy PyTorch at `sha`, versioned as a nightly of its commit date."""
    _git(tree, "checkout", "-q", "--detach", "--force", sha)
    day = datetime.fromisoformat(_git(world.torch, "log", "-1", "--format=%cI", sha)).astimezone(timezone.utc)
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tree.parent),
           "PYTORCH_BUILD_VERSION": f"2.10.0.dev{day:%Y%m%d}+cpu",
           "PYTORCH_EXTRA_INSTALL_REQUIREMENTS": requires}
    before = set(out.glob("*.whl"))
    subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation",
                    "-w", str(out), str(tree)], check=True, capture_output=True, env=env, cwd=tree)
    (wheel,) = set(out.glob("*.whl")) - before
    return wheel


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("torch-nightly")
    world = make_world(tmp / "world", llvm_commits=20, triton_commits=20, with_torch=True, torch_commits=40)
    t = world.truth
    order = t["torch_order"]
    good, bad = t["torch_good"], t["torch_bad"]
    lo, hi = order.index(good), order.index(bad)
    nightly = order[lo + 1:hi:EVERY]
    pins = t["torch_triton_pins"]
    triton_wheels = build_nightlies(world, sorted({pins[c] for c in nightly}), tmp / "builder", tmp / "triton-wheels")
    tree = tmp / "torch-tree"
    _git(world.torch, "worktree", "add", "-q", "--detach", str(tree), good)
    wheels = [build_torch_nightly(world, c, tree, tmp / "torch-wheels",
                                  requires=f"triton=={t['triton_version_prefix']}{pins[c][:8]}") for c in nightly]
    # a nightly dated long before the range: never downloaded to be read
    old = tmp / "old"
    old.mkdir()
    stale = build_torch_nightly(world, order[0], tree, old)
    stale = stale.rename(old / stale.name.replace(stale.name.split("-")[1], "2.9.0.dev20200101+cpu"))
    write_simple_index(tmp / "index", [*wheels, stale], package="toytorch")
    write_simple_index(tmp / "index", triton_wheels, package="triton")
    idx = LocalIndex(tmp / "index").start()
    yield world, idx, nightly, good, bad
    idx.stop()


def _argv(world, good, bad, home, *extra, triton=True):
    t = world.truth
    return ["torch", "--torch-dir", str(world.torch), "--good", good, "--bad", bad, "--test", t["torch_test"],
            *(["--triton-dir", str(world.triton), "--llvm-dir", str(world.llvm)] if triton else []),
            "--wheel-package", "toytorch", "--workdir", str(home), *extra]


def _journal(res):
    path = Path(res["session_dir"]) / "journal.jsonl"
    return [json.loads(ln) for ln in path.read_text().splitlines() if ln.strip()]


def test_nightlies_by_version_py_then_builds_inside_the_bracket(setup, tmp_path, capsys):
    world, idx, nightly, good, bad = setup
    t = world.truth
    order = t["torch_order"]
    code, res, err = run_json(_argv(world, good, bad, tmp_path / "home", "--wheel-index", idx.url), capsys)
    assert code == 0, err[-3000:]
    assert res["culprit"] == t["torch_regression"]
    assert [p["name"] for p in res["phases"]] == ["nightlies", "torch"]
    # each dated nightly inside the range was read once; the one from 2020 was not fetched
    assert f"read the commit of {len(nightly)} dated toytorch nightlies" in err
    assert res["wheels"]["nightlies"] == len(nightly)
    records = _journal(res)
    installs = [r for r in records if r["build"].get("published")]
    assert installs and {r["commit"] for r in installs} <= set(nightly)
    # a nightly whose pinned Triton (from --triton-dir) had to be compiled first is a build
    pinned_built = [r for r in installs if r["build"]["reason"].startswith("pinned Triton: ")]
    assert pinned_built and not any(r["build"]["cached"] for r in pinned_built)
    r = order.index(t["torch_regression"])
    lo = max(order.index(n) for n in nightly if order.index(n) < r)
    hi = min([order.index(n) for n in nightly if order.index(n) >= r] + [order.index(bad)])
    # the source phase re-checks the bracket's ends, which are installs again; all else is built
    assert all(r["phase"] == "nightlies" or r["commit"] in (order[lo], order[hi]) for r in installs)
    w = res["wheels"]
    assert w["bracket"]["good"] == order[lo] and w["bracket"]["bad"] == order[hi]
    assert w["bracket"]["bad_version"].startswith("2.10.0.dev") or order[hi] == bad
    torch_steps = {r["commit"] for r in records if r["phase"] == "torch"}
    assert all(lo <= order.index(c) <= hi for c in torch_steps)
    built = {r["commit"] for r in records if r["phase"] == "torch" and not r["build"].get("published")}
    assert built and len(built) <= math.ceil(math.log2(hi - lo + 1)) + 1
    assert all(lo < order.index(c) < hi for c in built)
    # --wheels off: every step a source build, more of them
    code, off, err = run_json(_argv(world, good, bad, tmp_path / "home-off", "--wheel-index", idx.url,
                                    "--wheels", "off"), capsys)
    assert code == 0 and off["culprit"] == t["torch_regression"], err[-2000:]
    assert off["installs"] == 0 and off["builds"] > res["source_builds"]


def test_wheels_only_takes_the_pinned_triton_from_the_index(setup, tmp_path, capsys):
    """Without --triton-dir a nightly step installs the Triton its METADATA pins, from the index."""
    world, idx, nightly, _, _ = setup
    t = world.truth
    order = t["torch_order"]
    r = order.index(t["torch_regression"])
    good, bad = nightly[0], nightly[-1]  # endpoints with a nightly are installs too
    assert order.index(good) < r <= order.index(bad)
    code, res, err = run_json(_argv(world, good, bad, tmp_path / "home", "--wheel-index", idx.url,
                                    "--wheels", "only", triton=False), capsys)
    assert code == 0, err[-3000:]
    assert [p["name"] for p in res["phases"]] == ["nightlies"]
    assert res["builds"] == 0 and res["installs"] >= 3
    first_bad = min([order.index(n) for n in nightly if order.index(n) >= r] + [order.index(bad)])
    assert res["culprit"] == order[first_bad]
    installs = [r for r in _journal(res) if r["build"].get("published")]
    assert installs and all("; triton==" in r["build"]["reason"] for r in installs), installs[0]["build"]["reason"]
    downloads = {p.name for p in (tmp_path / "home").rglob("*.whl")}
    assert any(name.startswith("triton-") for name in downloads)  # the pin, from the sha256 download cache
    assert "tritonbisect torch --good" in err


def test_errors_are_one_line(setup, tmp_path, capsys):
    world, idx, nightly, good, bad = setup
    order = world.truth["torch_order"]
    i = order.index(nightly[0])
    code, _, err = run_cli(_argv(world, order[i + 1], order[i + 3], tmp_path / "h1", "--wheel-index", idx.url,
                                 "--wheels", "only"), capsys)
    assert code == 2 and "--wheels only: no toytorch nightly" in error_line(err)
    code, _, err = run_cli(_argv(world, good, bad, tmp_path / "h2", "--wheels", "only"), capsys)
    assert code == 2 and "--wheels only needs --wheel-index" in error_line(err)
    code, _, err = run_cli(_argv(world, good, bad, tmp_path / "h3", "--wheel-index", "http://127.0.0.1:9/simple"),
                           capsys)
    assert code == 4 and "nothing was tested" in error_line(err)
