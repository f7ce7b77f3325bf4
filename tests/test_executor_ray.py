"""`--executor ray` end to end on real local Ray clusters.

One two-node cluster for the module (`ray.cluster_utils.Cluster`: a head node offering the
custom resource "builder", a second node offering "tester"), started and stopped here; its
processes are ended by the Cluster's own handles, never by name. `tritonbisect` runs as a
subprocess that joins it with --ray-address HOST:PORT. The driver-kill test starts a private
cluster of its own (--ray-address local) and checks that it went away with the driver.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import tempfile
import time
from pathlib import Path

import pytest

from engine_repo import BUILD, journal, last_json, linear, popen_tb, tb
from waiting import wait_until

ray_cluster_utils = pytest.importorskip("ray.cluster_utils")


@pytest.fixture(scope="module")
def cluster():
    temp = tempfile.mkdtemp(prefix="tbt-", dir="/tmp")  # short: Ray's sockets live under it
    # Cluster.add_node writes Ray's "current cluster" file into the default temp dir whatever
    # temp_dir says, and fails on a fresh machine where that dir does not exist yet.
    from ray._private.utils import get_ray_address_file

    os.makedirs(os.path.dirname(get_ray_address_file(None)), exist_ok=True)
    c = ray_cluster_utils.Cluster(
        initialize_head=True,
        head_node_args={"num_cpus": 8, "resources": {"builder": 8}, "include_dashboard": False,
                        "temp_dir": temp},
    )
    try:
        tester = c.add_node(num_cpus=8, resources={"tester": 8})
        c.wait_for_nodes()
        c.builder_id = c.head_node.node_id
        c.tester_id = tester.node_id
        yield c
    finally:
        c.shutdown()
        _end_processes_using(Path(temp))  # a node agent that outlived its raylet, say
        shutil.rmtree(temp, ignore_errors=True)


def _end_processes_using(folder: Path) -> list[int]:
    """Kill (by pid) what still uses a cluster folder this module made: only its processes."""
    from tritonbisect.executors.ray_cluster import processes_using

    pids = processes_using(folder)
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    return pids


def _node_of(name: str | None) -> str:
    """The node-id prefix in a journal's node name ("host/abc123")."""
    assert name, "the step has no node"
    return name.rsplit("/", 1)[-1]


def _ray_run(repo: Path, home: Path, address: str, good: str, *extra: str, test: str,
             build: str = BUILD, jobs: int = 2) -> list[str]:
    return ["run", "--repo", str(repo), "--good", good, "--bad", "main", "--build", build,
            "--test", test, "--executor", "ray", "--ray-address", address, "--jobs", str(jobs),
            "--json", *extra]



# The Ray worker running a test, in the test's shell: the parent of its parent (every command
# runs under the keeper, core/keeper.py, which a worker's death ends; the keeper's own death
# is not the worker's)
_WORKER = "$(read -r _ _ _ ppid _ < /proc/$PPID/stat && echo $ppid)"


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a zombie is as good as dead
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def _n_records(home: Path, session: str) -> int:
    path = home / "sessions" / session / "journal.jsonl"
    return path.read_text().count("\n") if path.exists() else 0


def _no_scratch_left(home: Path) -> None:
    scratch = home / "ray-steps"
    assert not scratch.exists() or not any(scratch.rglob("*.log")), list(scratch.rglob("*"))


# --- the search on a cluster ----------------------------------------------------------------------


def test_jobs_4_on_clustered_unbuildable_commits_finds_the_culprit(cluster, tmp_path):
    repo, home = tmp_path / "repo", tmp_path / "home"
    broken = [*range(14, 22), 25, 26, 27]  # two clusters that do not build, around the culprit
    shas = linear(repo, 40, culprit=24, broken=broken)
    proc = tb(*_ray_run(repo, home, cluster.address, shas[0], test="grep -q ok out/state", jobs=4),
              cwd=repo, home=home, timeout=240)
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = last_json(proc.stdout)
    assert out["culprit"] == shas[24] and out["confidence"] == "high"
    recs = journal(home, out["session"])
    assert {_node_of(r.get("node")) for r in recs} <= {cluster.builder_id[:6], cluster.tester_id[:6]}
    assert any(r["kind"] == "build_failed" for r in recs)
    for rec in recs:  # every log was copied into the session, where status/report read it
        assert Path(rec["dir"]).parent == Path(out["session_dir"]) / "steps"
        for test in rec["tests"]:
            assert Path(test["log"]).is_file() and test["log"].startswith(rec["dir"])
    assert " on " in proc.stderr  # the step lines name the node
    _no_scratch_left(home)
    status = tb("status", out["session"], cwd=repo, home=home)
    assert status.returncode == 0 and "culprit" in status.stdout


def test_build_on_the_builder_node_test_on_the_tester_node(cluster, tmp_path):
    repo, home = tmp_path / "repo", tmp_path / "home"
    shas = linear(repo, 16, culprit=11, broken=list(range(3, 9)))
    build = BUILD + "; echo built on $(hostname) pid $$ > out/built-by"
    test = "cat out/built-by; grep -q ok out/state"
    proc = tb(*_ray_run(repo, home, cluster.address, shas[0], "--artifact", "out",
                        "--build-resources", '{"builder": 1}', "--test-resources", "tester=1",
                        test=test, build=build),
              cwd=repo, home=home, timeout=240)
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = last_json(proc.stdout)
    assert out["culprit"] == shas[11]
    recs = journal(home, out["session"])
    tested = [r for r in recs if r["tests"]]
    assert tested
    for rec in tested:
        assert _node_of(rec["build"]["node"]) == cluster.builder_id[:6]
        assert _node_of(rec["node"]) == cluster.tester_id[:6]
        # the tester installed the builder's output from the cache: it did not build
        assert rec["build"]["install"]["node"] == rec["node"]
        assert "taken from the cache" in rec["build"]["install"]["reason"]
        log = Path(rec["tests"][-1]["log"]).read_text()
        assert "built on" in log  # the artifact the builder made is what the test read
    unbuildable = [r for r in recs if r["kind"] == "build_failed"]
    assert unbuildable and all(_node_of(r["node"]) == cluster.builder_id[:6] for r in unbuildable)
    assert "built on" in proc.stderr and "tested on" in proc.stderr
    assert "sent the repository" not in proc.stderr  # the nodes see the driver's repository
    assert out["builds"] == len({r["commit"] for r in recs if r["build"].get("performed")})


def test_unplaceable_resources_are_one_clear_error(cluster, tmp_path):
    repo, home = tmp_path / "repo", tmp_path / "home"
    shas = linear(repo, 4, culprit=2)
    proc = tb(*_ray_run(repo, home, cluster.address, shas[0], "--test-resources", '{"GPU": 1}',
                        test="true"), cwd=repo, home=home, timeout=120)
    assert proc.returncode == 2
    line = [x for x in proc.stderr.splitlines() if "error:" in x]
    assert line and "no node of the Ray cluster" in line[0] and "{GPU: 1}" in line[0]
    unreachable = tb(*_ray_run(repo, home, "127.0.0.1:1", shas[0], test="true"),
                     cwd=repo, home=home, timeout=120)
    assert unreachable.returncode == 2 and "cannot reach the Ray cluster at 127.0.0.1:1" in unreachable.stderr


# --- failures and interruptions ---------------------------------------------------------------------


def test_worker_killed_mid_step_is_retried_on_another_worker(cluster, tmp_path):
    repo, home = tmp_path / "repo", tmp_path / "home"
    shas = linear(repo, 20, culprit=13)
    mark, pids = tmp_path / "killed-once", tmp_path / "pids"
    # the first test of the bad endpoint reports its worker and waits to be killed
    test = (f"if [ \"$TRITONBISECT_COMMIT\" = {shas[-1]} ] && [ ! -e {mark} ]; then "
            f"touch {mark}; echo {_WORKER} $$ > {pids}; sleep 60; fi; grep -q ok out/state")
    proc = popen_tb(*_ray_run(repo, home, cluster.address, shas[0], test=test), cwd=repo, home=home)
    try:
        wait_until(lambda: pids.exists() and len(pids.read_text().split()) == 2, what="the step")
        worker, shell = map(int, pids.read_text().split())
        assert Path(f"/proc/{worker}/cmdline").read_bytes().startswith(b"ray::")
        os.kill(worker, signal.SIGKILL)  # the Ray worker process running the step
        out_text, err = proc.communicate(timeout=240)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, err[-3000:]
    out = last_json(out_text)
    assert out["culprit"] == shas[13]
    rec = next(r for r in journal(home, out["session"]) if r["commit"] == shas[-1] and r["role"] == "endpoint")
    assert rec["verdict"] == "bad" and rec["kind"] == "fail"
    (first,) = rec["attempts"]
    assert first["kind"] == "infra" and "was lost mid-step" in first["reason"]
    wait_until(lambda: not _alive(shell), timeout=10, what="the orphaned test's end")


def test_ctrl_c_cancels_remote_steps_and_resume_finishes(cluster, tmp_path):
    repo, home = tmp_path / "repo", tmp_path / "home"
    shas = linear(repo, 30, culprit=19)
    slow, pids, runs = tmp_path / "slow", tmp_path / "pids", tmp_path / "runs"
    slow.touch()
    # Every test after the third sleeps for a minute: counting runs, rather than flipping a switch
    # once three steps are journaled, leaves no window in which a fast search ends first.
    # (the log's first line is the command itself: the output "slow 42" is not in it)
    test = (f"echo . >> {runs}; "
            f"if [ -e {slow} ] && [ $(wc -l < {runs}) -gt 3 ]; then "
            f"echo slow $((6*7)); echo $$ >> {pids}; sleep 60; fi; "
            "grep -q ok out/state")
    proc = popen_tb(*_ray_run(repo, home, cluster.address, shas[0], test=test), cwd=repo, home=home)
    try:
        wait_until(lambda: (home / "sessions").is_dir() and any((home / "sessions").iterdir()))
        sdir = next((home / "sessions").iterdir())
        # the running step's log reaches the session while it runs (it sleeps for a minute)
        wait_until(lambda: any("slow 42" in p.read_text() for p in sdir.glob("steps/*/test-*.log")),
                  what="a streamed log line")
        proc.send_signal(signal.SIGINT)
        _out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, err[-3000:]
    assert f"tritonbisect resume {sdir.name}" in err
    running = [int(p) for p in pids.read_text().split()]
    assert running
    wait_until(lambda: not any(_alive(p) for p in running), timeout=10, what="killed remote tests")
    done_before = journal(home, sdir.name)
    slow.unlink()
    res = tb("resume", sdir.name, "--json", cwd=repo, home=home, timeout=240)
    assert res.returncode == 0, res.stderr[-3000:]
    assert last_json(res.stdout)["culprit"] == shas[19]
    after = journal(home, sdir.name)
    assert after[: len(done_before)] == done_before
    searched = [r["commit"] for r in after if r["role"] == "search"]
    assert len(searched) == len(set(searched)), "a finished step was run again"
    _no_scratch_left(home)


def test_kill_9_of_the_driver_then_resume_on_a_new_private_cluster(tmp_path):
    from tritonbisect.executors.ray_cluster import processes_using

    repo, home = tmp_path / "repo", tmp_path / "home"
    shas = linear(repo, 24, culprit=7)
    marker = tmp_path / "tested"
    test = f"echo $TRITONBISECT_COMMIT >> {marker}; sleep 0.5; grep -q ok out/state"
    proc = popen_tb(*_ray_run(repo, home, "local", shas[0], test=test), cwd=repo, home=home)
    folders: list[Path] = []
    try:
        wait_until(lambda: (home / "sessions").is_dir() and any((home / "sessions").iterdir()))
        sdir = next((home / "sessions").iterdir())
        wait_until(lambda: _n_records(home, sdir.name) >= 3, what="three steps")
        # the private cluster's folder is named after its driver
        folders = list(Path("/tmp").glob(f"tbray-{proc.pid}-*"))
        assert len(folders) == 1
        os.kill(proc.pid, signal.SIGKILL)
        proc.communicate(timeout=30)
        done_before = journal(home, sdir.name)
        tested_before = marker.read_text().split()
        res = tb("resume", "--json", cwd=repo, home=home, timeout=240)
        # resume started a new private cluster, and ended what the dead one had left
        leftovers = processes_using(folders[0])
    finally:
        if proc.poll() is None:
            proc.kill()
        for folder in folders:
            _end_processes_using(folder)
            shutil.rmtree(folder, ignore_errors=True)
    assert leftovers == [] and not folders[0].exists()
    assert res.returncode == 0, res.stderr[-3000:]
    assert last_json(res.stdout)["culprit"] == shas[7]
    after = journal(home, sdir.name)
    assert after[: len(done_before)] == done_before
    finished = {r["commit"] for r in done_before if r["role"] in ("endpoint", "search")}
    confirm = {r["commit"] for r in after if r["role"] == "confirm"}
    rerun = [c for c in marker.read_text().split()[len(tested_before):] if c in finished - confirm]
    assert rerun == [], "a finished step ran again"
    session = json.loads((sdir / "session.json").read_text())
    assert session["settings"]["executor"]["kind"] == "ray" and session["settings"]["executor"]["ray_address"] == "local"


def test_a_step_whose_verdict_no_longer_matters_is_stopped_on_its_node(cluster, tmp_path):
    repo, home = tmp_path / "repo", tmp_path / "home"
    shas = linear(repo, 30, culprit=5)
    slow_list, pids = tmp_path / "slow-commits", tmp_path / "pids"
    slow_list.write_text("\n".join(shas[12:29]) + "\n")  # above the culprit, endpoints aside
    waiting_list = tmp_path / "waiting-commits"
    waiting_list.write_text("\n".join(shas[1:12]) + "\n")
    # The verdict that makes a slow step moot waits (up to 10 s) until that step's test has
    # started, so the cancellation always has a running remote process to stop.
    test = (f"if grep -qx $TRITONBISECT_COMMIT {slow_list}; then echo $$ >> {pids}; sleep 60; fi; "
            f"if grep -qx $TRITONBISECT_COMMIT {waiting_list}; then "
            f"for _ in $(seq 100); do [ -s {pids} ] && break; sleep 0.1; done; fi; "
            "grep -q ok out/state")
    started = time.monotonic()
    proc = tb(*_ray_run(repo, home, cluster.address, shas[0], test=test), cwd=repo, home=home,
              timeout=240)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert last_json(proc.stdout)["culprit"] == shas[5]
    assert "its verdict no longer matters" in proc.stderr
    assert time.monotonic() - started < 50  # nobody waited for a minute-long test
    assert pids.exists(), proc.stderr
    stopped = [int(p) for p in pids.read_text().split()]
    assert stopped and not any(_alive(p) for p in stopped)


def test_a_worker_lost_twice_aborts_with_the_reason(cluster, tmp_path):
    repo, home = tmp_path / "repo", tmp_path / "home"
    shas = linear(repo, 12, culprit=6)
    # every run of this commit's test kills the worker running it
    test = f"if [ \"$TRITONBISECT_COMMIT\" = {shas[-1]} ]; then kill -9 {_WORKER}; sleep 5; fi; grep -q ok out/state"
    proc = tb(*_ray_run(repo, home, cluster.address, shas[0], test=test), cwd=repo, home=home,
              timeout=240)
    assert proc.returncode == 4, proc.stderr[-3000:]
    out = last_json(proc.stdout)
    assert out["status"] == "aborted"
    assert "infrastructure failure, twice" in out["reason"] and "was lost mid-step" in out["reason"]
    rec = next(r for r in journal(home, out["session"]) if r["commit"] == shas[-1])
    assert rec["kind"] == "infra" and rec["verdict"] == "abort" and len(rec["attempts"]) == 1
