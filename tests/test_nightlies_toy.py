"""`tritonbisect triton --wheel-index` on the toy world: the commits that have a nightly
(+git<sha8> wheels on a local PEP 503 index served by http.server) are tested first as
installs, then only the bracket they leave is built from source."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from bisectors_world import error_line, run_cli, run_json
from nightly_world import build_nightlies, serve_nightlies
from testing.toyworld.world import make_world
from wheel_index_world import LocalIndex

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("nightly")
    world = make_world(tmp / "world", llvm_commits=20, triton_commits=40)
    t = world.truth
    order = t["triton_order"]
    good, bad = t["triton_regression_range"]
    lo, hi = order.index(good), order.index(bad)
    nightly = [c for c in order[lo:hi + 1:4] if c not in t["triton_broken"]]
    wheels = build_nightlies(world, nightly, tmp / "builder", tmp / "wheels")
    assert len(wheels) == len(nightly)
    serve_nightlies(tmp / "index", wheels)
    idx = LocalIndex(tmp / "index").start()
    yield world, idx, nightly, good, bad
    idx.stop()


def _journal(res):
    path = Path(res["session_dir"]) / "journal.jsonl"
    return [json.loads(ln) for ln in path.read_text().splitlines() if ln.strip()]


def _argv(world, good, bad, home, *extra):
    return ["triton", "--triton-dir", str(world.triton), "--llvm-dir", str(world.llvm),
            "--good", good, "--bad", bad, "--test", world.truth["triton_test"],
            "--workdir", str(home), *extra]


def test_nightlies_first_then_builds_inside_the_bracket(setup, tmp_path, capsys):
    world, idx, nightly, good, bad = setup
    t = world.truth
    order = t["triton_order"]
    code, res, err = run_json(_argv(world, good, bad, tmp_path / "home", "--wheel-index", idx.url),
                              capsys)
    assert code == 0, err[-3000:]
    assert res["culprit"] == t["triton_regression"]
    assert [p["name"] for p in res["phases"]] == ["nightlies", "triton"]
    records = _journal(res)
    first = [r for r in records if r["phase"] == "nightlies"]
    assert first and all(r["commit"] in nightly or r["commit"] == bad for r in first)
    assert all(not r["build"]["performed"] or r["commit"] not in nightly for r in first)
    # the bracket: the nightlies around the regression
    r = order.index(t["triton_regression"])
    lo = max(c for c in (order.index(n) for n in nightly) if c < r)
    hi = min([c for c in (order.index(n) for n in nightly) if c >= r] + [order.index(bad)])
    built = {r["commit"] for r in records if r["build"]["performed"] and not r["build"]["cached"]}
    nightlies_installed = [r for r in records if r["commit"] in nightly]
    assert all("published wheel" in r["build"].get("reason", "") or r["build"]["cached"]
               for r in nightlies_installed)
    inside = hi - lo  # commits in (lo, hi]
    assert all(lo < order.index(c) <= hi for c in built if c != bad), built
    assert len(built - {good, bad}) <= math.ceil(math.log2(inside + 1)) + 1
    # the JSON and the report say which steps were installs and which were builds
    w = res["wheels"]
    assert w["mode"] == "auto" and w["installs"] == res["installs"] > 0
    assert w["source_builds"] == res["source_builds"] == res["builds"]
    assert {s["commit"] for s in w["steps"] if s["source"] == "install"} <= set(nightly)
    assert {s["commit"] for s in w["steps"] if s["source"] == "build"} == built
    assert w["bracket"]["good"] == order[lo] and w["bracket"]["bad"] == order[hi]
    assert w["bracket"]["bad_version"] == t["triton_version_prefix"] + order[hi][:8]
    code, out, _ = run_cli(["report", res["session"], "--workdir", str(tmp_path / "home")], capsys)
    assert code == 0 and "**Published wheels:** --wheels auto:" in out
    assert "| install |" in out
    # --wheels off builds the same range from source: more builds
    code, res_off, _ = run_json(_argv(world, good, bad, tmp_path / "home-off", "--wheel-index",
                                      idx.url, "--wheels", "off"), capsys)
    assert code == 0 and res_off["culprit"] == t["triton_regression"]
    assert res_off["builds"] > res["builds"]
    assert res_off["installs"] == 0 and res_off["wheels"]["mode"] == "off"
    # --wheels only stops at the bracket
    code, res_only, _ = run_json(_argv(world, good, bad, tmp_path / "home-only", "--wheel-index",
                                       idx.url, "--wheels", "only"), capsys)
    assert code == 0 and [p["name"] for p in res_only["phases"]] == ["nightlies"]
    assert res_only["culprit"] == order[hi] and res_only["builds"] <= 2
    code, out, err = run_cli(_argv(world, good, bad, tmp_path / "home-only", "--wheel-index",
                                   idx.url, "--wheels", "only"), capsys)
    assert code == 0 and f"first bad nightly: {order[hi]}" in out
    assert f"--good {order[lo][:12]} --bad {order[hi][:12]}" in err


def test_wheel_index_errors(setup, tmp_path, capsys):
    """One line and the documented exit code, before anything is built or tested."""
    world, idx, nightly, good, bad = setup
    order = world.truth["triton_order"]
    i = order.index(nightly[0])
    # no nightly strictly inside the range: --wheels only has nothing to install (exit 2)
    code, _, err = run_cli(_argv(world, order[i + 1], order[i + 3], tmp_path / "h1",
                                 "--wheel-index", idx.url, "--wheels", "only"), capsys)
    assert code == 2 and "--wheels only: no triton nightly" in error_line(err)
    code, _, err = run_cli(_argv(world, good, bad, tmp_path / "h2", "--wheels", "only"), capsys)
    assert code == 2 and "--wheels only needs --wheel-index" in error_line(err)
    # an index that cannot be read: exit 4 with the reason, nothing tested
    code, _, err = run_cli(_argv(world, good, bad, tmp_path / "h3", "--wheel-index",
                                 "http://127.0.0.1:9/simple"), capsys)
    assert code == 4 and "nothing was tested" in error_line(err)
    assert not (tmp_path / "h3" / "sessions").exists()


def test_index_going_away_mid_run_aborts_then_resume_builds_the_bracket(setup, tmp_path, capsys):
    """The good endpoint installs its nightly, then the index stops: the first nightly of the
    search is infra (retried once), the session aborts (exit 4); once the index is back,
    `resume` finishes both phases."""
    world, idx0, nightly, good, bad = setup
    t = world.truth
    idx = LocalIndex(idx0.root).start()
    marker = tmp_path / "killed"
    script = tmp_path / "kill_then_test.py"
    script.write_text(
        "import os, runpy, signal, sys\n"
        f"if not os.path.exists({str(marker)!r}):\n"
        f"    open({str(marker)!r}, 'w').close()\n"
        f"    os.kill({idx.proc.pid}, signal.SIGTERM)\n"
        "sys.argv = ['test/test_toy.py']\n"
        "runpy.run_path('test/test_toy.py', run_name='__main__')\n")
    home = tmp_path / "home"
    argv = _argv(world, good, bad, home, "--wheel-index", idx.url)
    argv[argv.index("--test") + 1] = f"python {script}"
    try:
        code, res, err = run_json(argv, capsys)
        assert code == 4, err[-3000:]
        assert res["status"] == "aborted" and res["phase"] == "nightlies"
        infra = [r for r in _journal(res) if r["kind"] == "infra"]
        assert infra and all(r["commit"] in nightly for r in infra)
    finally:
        idx.proc.wait(timeout=10)
        idx.proc = None
    idx.start()  # back, on the same address
    try:
        code, out, err = run_cli(["resume", res["session"], "--workdir", str(home), "--json"],
                                 capsys)
        assert code == 0, err[-3000:]
        done = json.loads([ln for ln in out.splitlines() if ln.startswith("{")][-1])
        assert done["culprit"] == t["triton_regression"]
        assert [p["name"] for p in done["phases"]] == ["nightlies", "triton"]
        assert done["installs"] > 0 and done["source_builds"] >= 1
    finally:
        idx.stop()
