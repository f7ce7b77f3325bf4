"""What a sandboxed build may still do, through the real CLI with bubblewrap and with
unshare: no capability (also as root: no remount, no unmount of the hidden $HOME, no entering
the host's network), no new privileges, a bounded number of processes, memory and file size;
an endless build ends with a verdict (--build-timeout); nothing outlives the tool, a `kill -9`
of it included (the sandbox's processes, its private $HOME and /tmp); and a test's `setsid`
daemon does not outlive an unsandboxed step either."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from engine_repo import env_for, journal, last_json, linear, tb
from tritonbisect.builds import sandbox as sb

TEST = "grep -q ok out/state"


@pytest.fixture(params=[sb.BWRAP, sb.UNSHARE])
def backend(request) -> str:
    if sb.detect(request.param) is None:
        pytest.skip(f"{request.param} does not work on this machine")
    return request.param


def _logs(workdir: Path) -> str:
    return "".join(p.read_text(errors="replace") for p in sorted(workdir.rglob("*.log")))


def _running(token: str) -> list[int]:
    """The processes whose command line holds `token`."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and int(entry.name) != os.getpid():
            try:
                if token.encode() in (entry / "cmdline").read_bytes():
                    found.append(int(entry.name))
            except OSError:
                continue
    return found


def daemon(token: str, marker: str = "/dev/null") -> str:
    """Shell that starts a daemon (its own session, its parent gone) named `token`, which
    touches `marker` first."""
    return f"(setsid bash -c 'touch {marker}; exec -a {token}-daemon sleep 1234' > /dev/null 2>&1 &)"


def _wait_gone(token: str, seconds: float = 15.0) -> list[int]:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        left = _running(token)
        if not left:
            return []
        time.sleep(0.2)
    return _running(token)


ATTEMPTS = """#!/bin/bash
mkdir -p out && cp state out/state
grep -E '^(CapEff|CapBnd|NoNewPrivs):' /proc/self/status | sed 's/^/STATUS /'
mount -o remount,rw / 2>/dev/null && echo "ESCAPED remount"
umount -l "$HOME" 2>/dev/null && echo "ESCAPED umount home"
umount -l /proc 2>/dev/null && echo "ESCAPED umount proc"
nsenter -t 1 -n true 2>/dev/null && echo "ESCAPED nsenter"
unshare -U true 2>/dev/null && echo "ESCAPED new user namespace with capabilities"
exit 0
"""


def test_no_capabilities_and_no_new_privileges(tmp_path, backend):
    repo, workdir = tmp_path / "repo", tmp_path / "workdir"
    shas = linear(repo, 6, culprit=3, files={"build.sh": ATTEMPTS})
    proc = tb("run", "--repo", str(repo), "--good", shas[0], "--bad", "main", "--build", "bash build.sh",
              "--test", TEST, "--sandbox", "--json", cwd=repo, home=workdir,
              env=env_for(workdir, TRITONBISECT_SANDBOX=backend), timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert last_json(proc.stdout)["culprit"] == shas[3]
    assert "no capabilities" in proc.stderr
    logs = _logs(workdir)
    assert "STATUS CapEff:\t0000000000000000" in logs and "STATUS CapBnd:\t0000000000000000" in logs
    assert "STATUS NoNewPrivs:\t1" in logs
    assert "ESCAPED" not in logs.replace('echo "ESCAPED', "")


LIMITS = """#!/bin/bash
mkdir -p out && cp state out/state
python3 - <<'PY'
import os, time
n = 0
try:
    while n < 500:
        if os.fork() == 0:
            time.sleep(30)
            os._exit(0)
        n += 1
except OSError as exc:
    print("LIMIT fork refused after", n, type(exc).__name__)
try:
    with open("big", "wb") as f:
        f.write(b"x" * (3 * 1024 * 1024))
    print("LIMIT wrote a 3 MiB file")
except OSError as exc:
    print("LIMIT file refused", exc.strerror)
PY
python3 -c 'b = bytearray(600 * 1024 * 1024); print("LIMIT allocated 600 MiB")' || echo "LIMIT memory refused"
rm -f big
exit 0
"""


def test_processes_memory_and_file_size_are_bounded(tmp_path, backend):
    repo, workdir = tmp_path / "repo", tmp_path / "workdir"
    shas = linear(repo, 4, culprit=2, files={"build.sh": LIMITS})
    env = env_for(workdir, TRITONBISECT_SANDBOX=backend,
                  TRITONBISECT_SANDBOX_LIMITS="processes=64,memory=300M,file_size=1M")
    proc = tb("run", "--repo", str(repo), "--good", shas[0], "--bad", "main", "--build", "bash build.sh",
              "--test", TEST, "--sandbox", "--json", cwd=repo, home=workdir, env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert "at most 64 processes" in proc.stderr
    logs = _logs(workdir)
    refused = [int(line.split()[4]) for line in logs.splitlines() if line.startswith("LIMIT fork refused after")]
    assert refused and max(refused) < 64, logs[-3000:]
    lines = logs.splitlines()
    assert "LIMIT file refused File too large" in lines and not any(ln.startswith("LIMIT wrote") for ln in lines)
    assert "LIMIT memory refused" in lines and not any(ln.startswith("LIMIT allocated") for ln in lines)


def test_a_bad_limit_is_one_line(tmp_path):
    repo, workdir = tmp_path / "repo", tmp_path / "workdir"
    shas = linear(repo, 4, culprit=2)
    proc = tb("run", "--repo", str(repo), "--good", shas[0], "--bad", "main", "--test", TEST, "--sandbox",
              cwd=repo, home=workdir, env=env_for(workdir, TRITONBISECT_SANDBOX_LIMITS="processes=lots"))
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.strip().splitlines()[-1].endswith(
        "TRITONBISECT_SANDBOX_LIMITS: processes='lots' is not a number")
    assert "Traceback" not in proc.stderr


@pytest.mark.parametrize("sandboxed", [False, True])
def test_an_endless_build_ends_with_a_verdict(tmp_path, sandboxed):
    """`run --build-timeout`: the builds of most commits never end (and start a daemon that
    would outlive them); those commits are skipped as ones that do not build, the culprit is
    still found, and nothing of the endless builds is left."""
    if sandboxed and sb.detect() is None:
        pytest.skip("no sandbox works on this machine")
    token = f"endless-{uuid.uuid4().hex[:8]}"
    repo, workdir = tmp_path / "repo", tmp_path / "workdir"
    # every commit but the endpoints, the culprit and its parent hangs
    build = ("mkdir -p out && cp state out/state; n=$(ls log | sed 's/^c//' | sort -n | tail -1); "
             f"case $n in 0|4|5|9) ;; *) {daemon(token)}; exec -a {token} sleep 100000;; esac")
    shas = linear(repo, 10, culprit=5)
    start = time.monotonic()
    proc = tb("run", "--repo", str(repo), "--good", shas[0], "--bad", "main", "--build", build, "--test", TEST,
              "--build-timeout", "2", "--json", *(["--sandbox"] if sandboxed else []), cwd=repo, home=workdir,
              env=env_for(workdir), timeout=280)
    assert proc.returncode == 0, proc.stderr
    assert time.monotonic() - start < 250
    out = last_json(proc.stdout)
    assert out["culprit"] == shas[5]
    skipped = [r for r in journal(workdir, out["session"]) if r["verdict"] == "skip"]
    assert skipped, journal(workdir, out["session"])
    for record in skipped:
        assert record["commit"] not in (shas[0], shas[4], shas[5], shas[9])
        assert "build did not finish within its 2 s (--build-timeout)" in record["reason"], record
    assert _wait_gone(token) == []


def _kill_mid_build(tmp_path: Path, extra: list[str], env: dict[str, str], token: str) -> Path:
    """Start a session whose first build starts a daemon and never ends, kill -9 the tool
    once the build runs; the workdir."""
    repo, workdir = tmp_path / "repo", tmp_path / "workdir"
    build = (f"mkdir -p out && cp state out/state; {daemon(token)}; touch out/started; "
             f"exec -a {token} sleep 100000")
    shas = linear(repo, 6, culprit=3)
    proc = subprocess.Popen([sys.executable, "-m", "tritonbisect.cli", "run", "--repo", str(repo), "--good", shas[0],
                             "--bad", "main", "--build", build, "--test", TEST, *extra], cwd=repo,
                            env={**env, "TRITONBISECT_HOME": str(workdir)}, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and not list(workdir.glob("worktrees/*/*/out/started")):
        time.sleep(0.1)
    assert list(workdir.glob("worktrees/*/*/out/started")), "the build never started"
    deadline = time.monotonic() + 30
    while not any(b"-daemon" in Path(f"/proc/{pid}/cmdline").read_bytes() for pid in _running(token)):
        assert time.monotonic() < deadline, "the build's daemon never started"
        time.sleep(0.1)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    return workdir


def test_kill_9_of_the_tool_ends_the_sandbox_and_removes_its_folders(tmp_path, backend):
    token = f"sandboxed-{uuid.uuid4().hex[:8]}"
    scratch = tmp_path / "tmpdir"  # the tool's temporary folder: the sandboxes' private $HOME and /tmp
    scratch.mkdir()
    env = env_for(tmp_path / "workdir", TRITONBISECT_SANDBOX=backend, TMPDIR=str(scratch))
    _kill_mid_build(tmp_path, ["--sandbox"], env, token)
    assert _wait_gone(token) == []
    deadline = time.monotonic() + 10
    while list(scratch.iterdir()) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert list(scratch.iterdir()) == []


def test_kill_9_of_the_tool_ends_an_unsandboxed_build_and_its_daemon(tmp_path):
    token = f"plain-{uuid.uuid4().hex[:8]}"
    _kill_mid_build(tmp_path, [], env_for(tmp_path / "workdir"), token)
    assert _wait_gone(token) == []


def test_a_tests_setsid_daemon_does_not_outlive_an_unsandboxed_step(tmp_path):
    token = f"daemon-{uuid.uuid4().hex[:8]}"
    repo, workdir = tmp_path / "repo", tmp_path / "workdir"
    shas = linear(repo, 6, culprit=3)
    marker = tmp_path / "daemon-started"
    test = f"{daemon(token, str(marker))}; (setsid setsid bash -c 'exec -a {token}-again sleep 1234' &); {TEST}"
    proc = tb("run", "--repo", str(repo), "--good", shas[0], "--bad", "main", "--build", "mkdir -p out; cp state out/",
              "--test", test, "--json", cwd=repo, home=workdir, env=env_for(workdir), timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert last_json(proc.stdout)["culprit"] == shas[3]
    assert marker.exists()  # the daemons did start
    assert _wait_gone(token, 5) == []
