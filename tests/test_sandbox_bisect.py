"""`--sandbox` on a bisector: `tritonbisect run` over commits whose build script is hostile."""

from __future__ import annotations

import socket
import threading
from pathlib import Path

import pytest

from engine_repo import env_for, last_json, linear, tb
from tritonbisect.builds.sandbox import detect

TOKEN = "ghp_FAKE-bisect-sandbox-token-0123456789"


@pytest.fixture
def listener():
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(64)
    sock.settimeout(0.2)
    accepted = []
    stop = threading.Event()

    def serve():
        while not stop.is_set():
            try:
                conn, _ = sock.accept()
            except OSError:
                continue
            accepted.append(1)
            conn.close()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield sock.getsockname()[1], accepted
    stop.set()
    thread.join()
    sock.close()


def hostile_build(outside: Path, port: int) -> str:
    return f"""#!/bin/bash
mkdir -p out && echo built > out/artifact
echo pwned > {outside}/escaped.txt 2>/dev/null && echo ESCAPED
echo "token=${{GITHUB_TOKEN:-none}}" > out/token.txt
python3 -c 'import socket; socket.create_connection(("127.0.0.1", {port}), timeout=2)' 2>/dev/null && echo CONNECTED
exit 0
"""


@pytest.mark.skipif(detect() is None, reason="no sandbox works on this machine")
def test_run_sandbox_finds_the_culprit_and_contains_the_build(tmp_path, listener):
    port, accepted = listener
    outside = tmp_path / "outside"
    outside.mkdir()
    repo, home = tmp_path / "repo", tmp_path / "home"
    shas = linear(repo, 12, culprit=7, files={"build.sh": hostile_build(outside, port)})
    env = env_for(home, GITHUB_TOKEN=TOKEN)
    proc = tb("run", "--repo", str(repo), "--good", shas[0], "--bad", "main", "--build", "bash build.sh",
              "--test", '[ "$(cat state)" = ok ] && [ "$(cat out/token.txt)" = token=none ]', "--sandbox",
              "--json", cwd=repo, home=home, env=env)
    assert proc.returncode == 0, proc.stderr
    assert last_json(proc.stdout)["culprit"] == shas[7]
    assert "tritonbisect: sandbox: " in proc.stderr
    assert list(outside.iterdir()) == []
    assert accepted == []
    logs = "".join(p.read_text() for p in home.rglob("build.log"))
    assert "# sandbox: " in logs and "ESCAPED" not in logs and "CONNECTED" not in logs


def test_run_sandbox_refused_where_none_works(tmp_path):
    repo, home = tmp_path / "repo", tmp_path / "home"
    shas = linear(repo, 4, culprit=2)
    proc = tb("run", "--repo", str(repo), "--good", shas[0], "--bad", "main", "--test", "true", "--sandbox",
              cwd=repo, home=home, env=env_for(home, TRITONBISECT_SANDBOX="none"))
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines()[-1].endswith(
        "install bubblewrap (apt-get install bubblewrap) where user namespaces are allowed, or run as root "
        "for unshare")
    assert "Traceback" not in proc.stderr
    assert not (home / "sessions").exists() or not any((home / "sessions").iterdir())


@pytest.mark.skipif(detect() is None, reason="no sandbox works on this machine")
def test_step_sandbox_for_git_bisect_run(tmp_path, listener):
    """`tritonbisect step --sandbox` in the user's checkout: the verdict as usual, nothing escapes;
    where no sandbox works it aborts the bisection (128) in one line."""
    import subprocess

    port, accepted = listener
    outside = tmp_path / "outside"
    outside.mkdir()
    repo, home = tmp_path / "repo", tmp_path / "home"
    shas = linear(repo, 4, culprit=2, files={"build.sh": hostile_build(outside, port)})
    env = env_for(home, GITHUB_TOKEN=TOKEN)
    for sha, code in ((shas[0], 0), (shas[3], 1)):
        subprocess.run(["git", "-C", str(repo), "checkout", "-q", "--detach", sha], check=True)
        proc = tb("step", "--build", "bash build.sh", "--test",
                  '[ "$(cat state)" = ok ] && [ "$(cat out/token.txt)" = token=none ]', "--sandbox",
                  cwd=repo, home=home, env=env)
        assert proc.returncode == code, proc.stderr
        assert "tritonbisect step: sandbox: " in proc.stderr
    assert list(outside.iterdir()) == [] and accepted == []
    proc = tb("step", "--test", "true", "--sandbox", cwd=repo, home=home,
              env=env_for(home, TRITONBISECT_SANDBOX="none"))
    assert proc.returncode == 128
    assert "no sandbox works on this machine" in proc.stderr and "(exit 128: abort)" in proc.stderr
