"""`--executor ray` with no filesystem shared between the driver and the nodes.

The driver runs in a mount namespace of its own (`unshare -m`) where a private tmpfs holds
the repository and the workdir; the Ray nodes (a two-node `ray.cluster_utils.Cluster` with
Ray's token authentication on, started here, outside that namespace) see only an empty
folder at that path. Commands run inside the namespace through `nsenter`, joined to a
holder process this module starts and ends by pid.
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from engine_repo import BUILD, env_for
from s3_server import SECRET, moto_server

ray_cluster_utils = pytest.importorskip("ray.cluster_utils")

TOKEN = "tbtok" + "e" * 27 + "0123456789abcdef"  # what Ray's token auth is given here
TESTS = Path(__file__).resolve().parent


@pytest.fixture(scope="module")
def cluster():
    temp = tempfile.mkdtemp(prefix="tbn-", dir="/tmp")
    from ray._private.utils import get_ray_address_file

    os.makedirs(os.path.dirname(get_ray_address_file(None)), exist_ok=True)
    saved = {k: os.environ.get(k) for k in ("RAY_AUTH_MODE", "RAY_AUTH_TOKEN", "AWS_ENDPOINT_URL",
                                            "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY",
                                            "AWS_DEFAULT_REGION")}
    stack = contextlib.ExitStack()
    try:  # Ray caches the auth mode in-process: made to read the environment again
        from ray._private.authentication_test_utils import reset_auth_token_state
    except ImportError:
        pytest.skip("this Ray has no token authentication (RAY_AUTH_MODE=token)")
    os.environ.update(RAY_AUTH_MODE="token", RAY_AUTH_TOKEN=TOKEN)
    reset_auth_token_state()
    c = None
    try:
        s3 = None
        if importlib.util.find_spec("boto3") and importlib.util.find_spec("moto"):
            # the nodes' credentials for the bucket: their environment, as on a real cluster
            s3 = stack.enter_context(moto_server("tbnofs"))
            os.environ.update(s3[0])
        c = ray_cluster_utils.Cluster(
            initialize_head=True,
            head_node_args={"num_cpus": 4, "resources": {"builder": 4}, "include_dashboard": False,
                            "temp_dir": temp},
        )
        tester = c.add_node(num_cpus=4, resources={"tester": 4})
        c.wait_for_nodes()
        c.builder_id, c.tester_id, c.temp = c.head_node.node_id, tester.node_id, Path(temp)
        c.s3 = s3
        yield c
    finally:
        if c is not None:
            c.shutdown()
        from tritonbisect.executors.ray_cluster import processes_using

        for pid in processes_using(Path(temp)):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        shutil.rmtree(temp, ignore_errors=True)
        stack.close()
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
        reset_auth_token_state()


@pytest.fixture
def private(tmp_path):
    """(holder pid, the private folder): a mount namespace whose tmpfs only the driver sees."""
    if shutil.which("unshare") is None or shutil.which("nsenter") is None:
        pytest.skip("unshare/nsenter (util-linux) are not installed")
    folder = tmp_path / "private"
    folder.mkdir()
    holder = subprocess.Popen(
        ["unshare", "-m", "--propagation", "private", "sh", "-c",
         f"mount -t tmpfs tbprivate {folder} && echo ready && exec sleep 900"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    line = holder.stdout.readline() if holder.stdout else ""
    if line.strip() != "ready":
        holder.kill()
        err = holder.stderr.read() if holder.stderr else ""
        pytest.skip(f"cannot mount a private tmpfs in a new mount namespace here: {err.strip()}")
    try:
        yield holder.pid, folder
    finally:
        holder.kill()
        holder.wait(timeout=30)


def _ns(pid: int, *cmd: str, env: dict | None = None, timeout: float = 60,
        popen: bool = False):
    args = ["nsenter", "-t", str(pid), "-m", "--", *cmd]
    if popen:
        return subprocess.Popen(args, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                text=True, cwd="/")
    return subprocess.run(args, env=env, capture_output=True, text=True, timeout=timeout, cwd="/")


def _make_repo(pid: int, repo: Path, n: int, culprit: int, broken: list[int]) -> list[str]:
    code = ("import json, sys; from pathlib import Path; sys.path.insert(0, sys.argv[1]); "
            "from engine_repo import linear; "
            "print(json.dumps(linear(Path(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), "
            "broken=json.loads(sys.argv[5]))))")
    proc = _ns(pid, sys.executable, "-c", code, str(TESTS), str(repo), str(n), str(culprit),
               json.dumps(broken))
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def _journal(pid: int, home: Path, session: str) -> list[dict]:
    proc = _ns(pid, "cat", str(home / "sessions" / session / "journal.jsonl"))
    return [json.loads(x) for x in proc.stdout.splitlines() if x.strip()]


def _env(home: Path) -> dict:
    return {**env_for(home), "RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN": TOKEN}


def _run_args(repo: Path, address: str, good: str, *extra: str, test: str) -> list[str]:
    return [sys.executable, "-m", "tritonbisect.cli", "run", "--repo", str(repo), "--good", good,
            "--bad", "main", "--build", BUILD + "; echo built on $(hostname) > out/built-by",
            "--artifact", "out", "--test", test, "--executor", "ray", "--ray-address", address,
            "--build-resources", "builder=1", "--test-resources", "tester=1", "--json", *extra]


def _holding(pid: int, folder: Path, text: str) -> list[str]:
    """Files under `folder` (inside the namespace) that contain `text`."""
    proc = _ns(pid, "grep", "-rlF", text, str(folder))
    return proc.stdout.split()


def test_driver_alone_with_its_files_builds_on_one_node_tests_on_another(cluster, private):
    pid, folder = private
    repo, home = folder / "repo", folder / "home"
    shas = _make_repo(pid, repo, 16, 11, list(range(3, 7)))
    assert not any(folder.iterdir())  # the nodes (and this process) see an empty folder
    test = "cat out/built-by; env; grep -q ok out/state"  # env: the token must not show
    proc = _ns(pid, *_run_args(repo, cluster.address, shas[0], test=test), env=_env(home),
               timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out["culprit"] == shas[11]
    assert "sent the repository to" in proc.stderr  # a git bundle, through the object store
    assert proc.stderr.count("sent the repository to") <= 2  # once per node (two here)
    recs = _journal(pid, home, out["session"])
    tested = [r for r in recs if r["tests"]]
    assert tested
    for rec in tested:
        assert rec["build"]["node"].endswith(cluster.builder_id[:6])
        assert rec["node"].endswith(cluster.tester_id[:6])
        assert "taken from the cache" in rec["build"]["install"]["reason"]
        log = _ns(pid, "cat", rec["tests"][-1]["log"]).stdout
        assert "built on" in log and "PATH=" in log  # the builder's artifact; the env printed
    # the token: not in the journal, the logs, the report, anywhere the driver wrote
    report = _ns(pid, sys.executable, "-m", "tritonbisect.cli", "report", out["session"],
                 env=_env(home))
    assert report.returncode == 0, report.stderr
    assert TOKEN not in report.stdout + proc.stdout + proc.stderr
    assert _holding(pid, folder, TOKEN) == []
    node_dir = cluster.temp / "tritonbisect"
    assert node_dir.is_dir()  # the nodes kept their clone and worktrees in their own folder
    leaks = subprocess.run(["grep", "-rlF", TOKEN, str(node_dir)], capture_output=True, text=True)
    assert leaks.stdout.split() == []


def test_kill_9_of_the_driver_then_resume_with_the_repository_from_a_url(cluster, private, tmp_path):
    pid, folder = private
    repo, home = folder / "repo", folder / "home"
    shas = _make_repo(pid, repo, 24, 7, [])
    remote = tmp_path / "remote.git"  # where the nodes fetch from (the driver's copy is private)
    assert _ns(pid, "git", "clone", "-q", "--bare", str(repo), str(remote)).returncode == 0
    test = "sleep 0.5; grep -q ok out/state"
    args = _run_args(repo, cluster.address, shas[0], "--repo-url", str(remote), test=test)
    proc = _ns(pid, *args, env=_env(home), popen=True)
    try:
        deadline = time.monotonic() + 180
        session = ""
        while time.monotonic() < deadline:
            ls = _ns(pid, "ls", str(home / "sessions")).stdout.split()
            session = ls[0] if ls else ""
            if session and len(_journal(pid, home, session)) >= 3:
                break
            time.sleep(0.3)
        assert session, "no session started"
        os.kill(proc.pid, signal.SIGKILL)  # nsenter execs the driver: this is its pid
        _out, err = proc.communicate(timeout=30)
        before = _journal(pid, home, session)
        assert len(before) >= 3 and "sent the repository" not in err
        res = _ns(pid, sys.executable, "-m", "tritonbisect.cli", "resume", "--json",
                  env=_env(home), timeout=300)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert res.returncode == 0, res.stderr[-3000:]
    assert json.loads(res.stdout.strip().splitlines()[-1])["culprit"] == shas[7]
    assert "sent the" not in res.stderr  # every commit came from the URL
    after = _journal(pid, home, session)
    assert after[: len(before)] == before
    done = {(r["commit"], r["role"]) for r in before}
    again = [r for r in after[len(before):] if (r["commit"], r["role"]) in done
             and r["role"] in ("endpoint", "search")]
    assert again == [], "a finished step ran again"
    assert _holding(pid, folder, TOKEN) == []


def test_nodes_and_sessions_share_builds_through_an_s3_bucket(cluster, private):
    if cluster.s3 is None:
        pytest.skip("boto3 and moto[server] are needed (pip install -e '.[test]')")
    s3env, client = cluster.s3
    pid, folder = private
    repo = folder / "repo"
    shas = _make_repo(pid, repo, 20, 13, [])
    url = "s3://tbnofs/shared"
    outs = []
    for n, good in enumerate((shas[0], shas[2])):
        home = folder / f"home{n}"
        args = _run_args(repo, cluster.address, good, "--cache-url", url, test="grep -q ok out/state")
        proc = _ns(pid, *args, env={**_env(home), **s3env}, timeout=300)
        assert proc.returncode == 0, proc.stderr[-3000:]
        out = json.loads(proc.stdout.strip().splitlines()[-1])
        assert out["culprit"] == shas[13]
        outs.append((out, _journal(pid, home, out["session"])))
        # new nodes, as far as the cache goes: only the bucket holds the builds
        shutil.rmtree(cluster.temp / "tritonbisect" / "work" / "cache-s3", ignore_errors=True)
    (first, recs1), (second, recs2) = outs
    assert first["builds"] > 0
    built = {r["commit"] for r in recs1 if r["build"].get("performed")}
    again = [r for r in recs2 if r["commit"] in built]
    assert len(again) >= 2 and not [r for r in again if r["build"].get("performed")]
    for rec in again:  # the tester took the builder's wheel from the bucket
        assert rec["build"]["cached"]
    keys = [o["Key"] for o in client.list_objects_v2(Bucket="tbnofs")["Contents"]]
    assert keys and all(k.startswith("shared/entries/") for k in keys)
    assert _holding(pid, folder, SECRET) == [] and _holding(pid, folder, TOKEN) == []
