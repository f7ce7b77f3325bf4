"""The sandbox (builds/sandbox.py + proc.SandboxedRunner) on this machine's real bubblewrap and
unshare: what a sandboxed command can and cannot do, and the environment it gets.

Each test runs once per sandbox that works here; none is skipped silently (a sandbox that
does not work is reported as a skip with the reason).
"""

from __future__ import annotations

import os
import socket
import sys
import time
from pathlib import Path

import pytest

from port_listener import Listener
from tritonbisect.builds import sandbox as sb
from tritonbisect.builds.build_process import SandboxedRunner, run_logged
from tritonbisect.core.gitrun import pin_worktree

SECRET = "ghp_FAKE-sandbox-test-token-0123456789"


@pytest.fixture(params=[sb.BWRAP, sb.UNSHARE])
def box(request) -> sb.Sandbox:
    found = sb.detect(request.param)
    if found is None:
        pytest.skip(f"{request.param} does not work on this machine")
    return found


@pytest.fixture
def listener():
    srv = Listener()
    yield srv
    srv.close()


@pytest.fixture
def home(tmp_path, monkeypatch) -> Path:
    """A user home with a secret in it, as $HOME for the test."""
    h = tmp_path / "home"
    h.mkdir()
    (h / ".netrc").write_text("machine example.com login me password NETRC-SECRET\n")
    monkeypatch.setenv("HOME", str(h))
    return h


def run(box, script: str, tmp_path: Path, *, writable=(), network=False, env=None, timeout=None):
    work = tmp_path / "work"
    work.mkdir(exist_ok=True)
    runner = SandboxedRunner(run_logged, box, writable=[work, *writable], network=network)
    log = tmp_path / "out.log"
    res = runner(script, cwd=work, env={**os.environ, **(env or {})}, log=log, timeout=timeout)
    return res, log.read_text()


def test_writes_land_only_in_writable_folders(box, tmp_path, home):
    outside = tmp_path / "outside"
    outside.mkdir()
    res, out = run(box, f"""
        echo in > {tmp_path}/work/inside.txt && echo wrote-inside
        echo x > {outside}/escaped.txt || echo outside-refused
        echo x > $HOME/in-home.txt && echo home-is-writable
        echo x > /usr/tritonbisect-test || echo usr-refused
        echo x > /tmp/t && echo tmp-is-writable
        """, tmp_path)
    assert res.returncode == 0, out
    assert "wrote-inside" in out and (tmp_path / "work" / "inside.txt").read_text() == "in\n"
    assert "outside-refused" in out and not (outside / "escaped.txt").exists()
    assert "usr-refused" in out and not Path("/usr/tritonbisect-test").exists()
    # $HOME and /tmp are private: writable inside, nothing reaches the real ones
    assert "home-is-writable" in out and "tmp-is-writable" in out
    assert not (home / "in-home.txt").exists()
    assert f"# sandbox: {box.kind}" in out


def test_home_is_empty_and_secrets_stay_out(box, tmp_path, home):
    res, out = run(box, """
        echo "HOME=$HOME"; ls -A "$HOME" | grep -v '^$' | sed 's/^/home-entry: /'
        cat "$HOME/.netrc" || echo netrc-hidden
        echo "token=${GITHUB_TOKEN:-unset} aws=${AWS_SECRET_ACCESS_KEY:-unset} cc=$CC triton=$TRITON_HOME"
        """, tmp_path, env={"GITHUB_TOKEN": SECRET, "AWS_SECRET_ACCESS_KEY": SECRET, "CC": "gcc",
                            "TRITON_HOME": "/opt/th", "TRITON_UPLOAD_TOKEN": SECRET})
    assert res.returncode == 0, out
    assert f"HOME={home}" in out
    assert "home-entry: .netrc" not in out and "NETRC-SECRET" not in out and "netrc-hidden" in out
    assert SECRET not in out
    assert "token=unset aws=unset cc=gcc triton=/opt/th" in out


def test_no_network_even_to_localhost(box, tmp_path, listener):
    res, out = run(box, f"""python3 -c '
import socket
try:
    socket.create_connection(("127.0.0.1", {listener.port}), timeout=3)
    print("CONNECTED")
except OSError as e:
    print("REFUSED", e)
'""", tmp_path)
    assert res.returncode == 0, out
    lines = out.splitlines()
    assert any(line.startswith("REFUSED ") for line in lines) and "CONNECTED" not in lines
    assert listener.count == 0


def test_network_when_asked(box, tmp_path, listener):
    res, out = run(box, f"""python3 -c '
import socket; socket.create_connection(("127.0.0.1", {listener.port}), timeout=3); print("CONN" + "ECTED")'""",
                   tmp_path, network=True)
    assert res.returncode == 0, out
    assert "CONNECTED" in out.splitlines()
    deadline = time.monotonic() + 5
    while listener.count == 0 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert listener.count == 1


def test_folders_under_home_are_bound_back(box, tmp_path, home):
    """A tree, a tool and a cache under the (hidden) $HOME: the tree and the cache writable,
    the tool readable; the rest of $HOME stays hidden."""
    tree = home / "src" / "proj"
    tree.mkdir(parents=True)
    tool = home / "tools" / "bin"
    tool.mkdir(parents=True)
    (tool / "hello").write_text("#!/bin/sh\necho hello-from-home-tool\n")
    (tool / "hello").chmod(0o755)
    cache = home / ".cache" / "ccache"
    runner = SandboxedRunner(run_logged, box, writable=[tree, cache])
    log = tmp_path / "log"
    env = {**os.environ, "PATH": f"{tool}:{os.environ['PATH']}"}
    res = runner(f"hello; touch {tree}/built {cache}/hit && echo ok; touch {tool}/x || echo tool-ro;"
                 " cat ~/.netrc || echo netrc-hidden", cwd=tree, env=env, log=log)
    out = log.read_text()
    assert res.returncode == 0, out
    assert "hello-from-home-tool" in out and "ok" in out and "tool-ro" in out and "netrc-hidden" in out
    assert (tree / "built").exists() and (cache / "hit").exists() and not (tool / "x").exists()



def test_a_venv_whose_python_links_into_a_hidden_folder(box, tmp_path, home):
    """A target venv under the private /tmp whose python links to an installation under the
    hidden $HOME (a venv made by uv, or from another venv), with neither on PATH: its python
    still runs inside (a dangling link would make `python` some other interpreter, or none)."""
    base = home / "pythons" / "3.x"
    (base / "bin").mkdir(parents=True)
    (base / "lib").mkdir()
    (base / "bin" / "python3").symlink_to(Path(sys.executable).resolve())
    venv = tmp_path / "venv"
    (venv / "bin").mkdir(parents=True)
    (venv / "pyvenv.cfg").write_text(f"home = {base / 'bin'}\ninclude-system-site-packages = false\n")
    (venv / "bin" / "python").symlink_to(base / "bin" / "python3")
    env = {**os.environ, "PATH": f"{venv / 'bin'}:/usr/bin:/bin", "VIRTUAL_ENV": str(venv)}
    res, out = run(box, "python -c 'print(6 * 7)'", tmp_path, env=env)
    assert res.returncode == 0 and "42" in out, out

def test_timeout_kills_everything_it_started(box, tmp_path):
    marker = tmp_path / "work" / "still-alive"
    res, out = run(box, f"(setsid sh -c 'sleep 3; touch {marker}' &) ; sleep 30", tmp_path, timeout=1.0)
    assert res.timed_out
    time.sleep(4)
    assert not marker.exists(), "a process of the sandbox outlived its timeout"


def test_git_works_in_a_worktree_whose_repository_is_hidden(box, tmp_path, home):
    import subprocess

    repo = home / "repo"
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    subprocess.run(["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q",
                    "--allow-empty", "-m", "c1"], check=True)
    wt = tmp_path / "wt"
    subprocess.run(["git", "-C", str(repo), "worktree", "add", "-q", "--detach", str(wt)], check=True)
    # the tool knows the worktree's git folder from the repository (never from its `.git`)
    assert pin_worktree(repo / ".git", wt) is not None
    runner = SandboxedRunner(run_logged, box, writable=[wt])
    log = tmp_path / "log"
    res = runner(["git", "log", "--format=%s"], cwd=wt, env=dict(os.environ), log=log)
    assert res.returncode == 0, log.read_text()
    assert "c1" in log.read_text()


def test_allowed_env_keeps_build_variables_only():
    env = {"PATH": "/bin", "CC": "gcc", "LLVM_SYSPATH": "/l", "TRITON_HOME": "/t", "CCACHE_DIR": "/c",
           "GITHUB_TOKEN": "x", "ANTHROPIC_API_KEY": "x", "SSH_AUTH_SOCK": "/s", "TRITON_API_TOKEN": "x",
           "HTTPS_PROXY": "http://u:p@h", "MY_VAR": "1"}
    assert sb.allowed_env(env) == {"PATH": "/bin", "CC": "gcc", "LLVM_SYSPATH": "/l", "TRITON_HOME": "/t",
                                   "CCACHE_DIR": "/c"}
    assert sb.allowed_env(env, keep=["MY_VAR"])["MY_VAR"] == "1"


def test_forced_choice_none_and_bad_choice(monkeypatch):
    monkeypatch.setenv(sb.CHOICE_ENV, "none")
    assert sb.detect() is None
    with pytest.raises(sb.SandboxUnavailable, match="no sandbox works on this machine"):
        sb.require()
    monkeypatch.setenv(sb.CHOICE_ENV, "docker")
    with pytest.raises(sb.SandboxUnavailable, match="expected auto, bwrap, unshare or none"):
        sb.detect()


FAKE_CLAUDE = """#!{python}
import json, os, socket
from urllib.parse import urlsplit
seen = []
try:
    open({outside!r}, "w").write("x")
    seen.append("outside: written")
except OSError as exc:
    seen.append("outside: " + type(exc).__name__)
seen.append("netrc: " + str(os.path.exists(os.path.expanduser("~/.netrc"))))
seen.append("github: " + os.environ.get("GITHUB_TOKEN", "<none>"))
seen.append("api key: " + ("set" if os.environ.get("ANTHROPIC_API_KEY") else "<none>"))
api = urlsplit(os.environ["ANTHROPIC_BASE_URL"])
for name, where in (("api", (api.hostname, api.port)), ("other port", ("127.0.0.1", {other})),
                    ("other host", ("example.com", 80))):
    try:
        socket.create_connection(where, timeout=3).close()
        seen.append(name + ": reachable")
    except OSError as exc:
        seen.append(name + ": " + type(exc).__name__)
open("seen.txt", "w").write("\\n".join(seen) + "\\n")
print(json.dumps({{"type": "result", "is_error": False, "result": "done", "usage": {{}}}}))
"""


def test_claude_cli_runs_in_the_sandbox_and_reaches_only_its_api(box, tmp_path, home, listener, monkeypatch):
    """The CLI writes only its worktree, sees no secret but its API key, and its only network
    is its API's host and port (the gate); another port or host is not reachable."""
    import sys

    from tritonbisect.compat_builder.claude_cli import ClaudeCliAgent
    from tritonbisect.compat_builder.prompts import FixPrompt

    other = Listener()
    try:
        bindir = tmp_path / "bin"
        bindir.mkdir()
        outside = tmp_path / "outside.txt"
        exe = bindir / "claude"
        exe.write_text(FAKE_CLAUDE.format(python=sys.executable, outside=str(outside), other=other.port))
        exe.chmod(0o755)
        monkeypatch.setenv("PATH", f"{bindir}{os.pathsep}{os.environ['PATH']}")
        monkeypatch.setenv("GITHUB_TOKEN", SECRET)
        monkeypatch.setenv("ANTHROPIC_BASE_URL", f"http://127.0.0.1:{listener.port}")
        wt = tmp_path / "wt"
        wt.mkdir()
        agent = ClaudeCliAgent(timeout=60, api_key="sk-ant-fake", sandbox=box)
        result = agent.run(wt, FixPrompt("s", "a", "e"), transcript=tmp_path / "t.json")
        assert result.summary == "done", (tmp_path / "t.log").read_text() if (tmp_path / "t.log").exists() else ""
        seen = (wt / "seen.txt").read_text().splitlines()
        assert seen[1:5] == ["netrc: False", "github: <none>", "api key: set", "api: reachable"]
        assert seen[5] != "other port: reachable" and seen[6] != "other host: reachable"
        # (its write under /tmp, if any, went to its private /tmp)
        assert not outside.exists()
        deadline = time.monotonic() + 5
        while listener.count == 0 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert listener.count == 1 and other.count == 0
    finally:
        other.close()


REAL_KERNEL = """
import torch, triton, triton.language as tl
@triton.jit
def add(x, y, o, n, B: tl.constexpr):
    i = tl.program_id(0) * B + tl.arange(0, B)
    m = i < n
    tl.store(o + i, tl.load(x + i, mask=m) + tl.load(y + i, mask=m), mask=m)
x = torch.arange(100.); y = torch.ones(100); o = torch.empty(100)
add[(4,)](x, y, o, 100, B=32)
assert torch.equal(o, x + 1)
print("triton", triton.__version__, "ran in the sandbox")
"""


def test_the_installed_triton_and_torch_run_a_kernel_inside(box, tmp_path):
    """A smoke test as compat-builder runs it: the real triton and torch wheels of this
    Python (which may live under the hidden $HOME) run an interpreted kernel inside."""
    import importlib.util
    import sys

    if importlib.util.find_spec("triton") is None or importlib.util.find_spec("torch") is None:
        pytest.skip("triton and torch are not installed in this Python")
    work = tmp_path / "work"
    work.mkdir()
    (work / "k.py").write_text(REAL_KERNEL)
    runner = SandboxedRunner(run_logged, box, writable=[work])
    log = tmp_path / "log"
    env = {**os.environ, "TRITON_INTERPRET": "1", "TRITON_CACHE_DIR": str(work / "triton-cache")}
    res = runner([sys.executable, "k.py"], cwd=work, env=env, log=log, timeout=300)
    assert res.returncode == 0, log.read_text()
    assert "ran in the sandbox" in log.read_text()


def _wheel(path: Path, names: list[str]) -> Path:
    import zipfile

    with zipfile.ZipFile(path, "w") as zf:
        for name in names:
            zf.writestr(name, "import os\n")
    return path


def test_a_sandboxed_builds_wheel_with_a_startup_hook_is_not_installed(tmp_path):
    from tritonbisect.builds.install_check import startup_hooks
    from tritonbisect.builds.recipes import StepContext
    from tritonbisect.domains.triton.recipe import TritonRecipe

    clean = _wheel(tmp_path / "triton-1.0-cp311-cp311-linux_x86_64.whl",
                   ["triton/__init__.py", "triton/_C/x.pth.txt", "triton-1.0.dist-info/RECORD"])
    hooked = _wheel(tmp_path / "triton-1.1-cp311-cp311-linux_x86_64.whl",
                    ["triton/__init__.py", "zz-evil.pth", "triton-1.1.data/purelib/sitecustomize.py",
                     "triton-1.1.dist-info/RECORD"])
    assert startup_hooks(clean) == []
    assert startup_hooks(hooked) == ["zz-evil.pth", "triton-1.1.data/purelib/sitecustomize.py"]
    recipe = TritonRecipe({"test": {"command": "true"}})
    ctx = StepContext(worktree=tmp_path, log_dir=tmp_path / "logs", worker=0, sandbox=True)
    ok, why = recipe.install(None, hooked, "c" * 40, ctx)  # refused before the env is touched
    assert not ok and "would run code at every python start-up (zz-evil.pth" in why


def test_sandboxed_build_requirements_come_as_wheels_only(tmp_path):
    """A requirement that only exists as source is refused: building it would run its code
    outside the sandbox."""
    from tritonbisect.builds.env import TargetEnv

    src = tmp_path / "evilpkg"
    src.mkdir()
    marker = tmp_path / "ran"
    (src / "setup.py").write_text(f"open({str(marker)!r}, 'w').write('x')\n"
                                  "from setuptools import setup\nsetup(name='evilpkg', version='1')\n")
    env = TargetEnv.ensure(tmp_path / "venv")
    for req in (f"evilpkg @ file://{src}", str(src)):
        ok, why = env.ensure_packages([req], log=tmp_path / "pip.log", binary_only=True)
        assert not ok and "names a URL or path" in why
        assert not marker.exists()
    # (without the check pip builds it and runs its setup.py: --only-binary does not cover a
    # direct reference)


def test_unix_sockets_of_the_host_are_out_of_reach(box, tmp_path):
    """A daemon's Unix socket (Docker's lives in /run) can be connected to on a read-only
    mount: /run is private, and $HOME//tmp too, where agents keep theirs."""
    run_dir = Path("/run")
    if not os.access(run_dir, os.W_OK):
        pytest.skip("/run is not writable here")
    path = run_dir / f"tritonbisect-test-{os.getpid()}.sock"
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(path))
    server.listen(4)
    try:
        res, out = run(box, f"""python3 -c '
import socket
s = socket.socket(socket.AF_UNIX)
try:
    s.connect("{path}"); print("CONNECTED")
except OSError as e:
    print("REFUSED", type(e).__name__)
'""", tmp_path)
        assert res.returncode == 0, out
        assert "CONNECTED" not in out.splitlines() and any(ln.startswith("REFUSED") for ln in out.splitlines())
    finally:
        server.close()
        path.unlink()


def test_sockets_outside_the_private_folders_are_covered(box, tmp_path):
    """A daemon's socket in a folder the sandbox can see (Ray's raylet and plasma store when
    Ray's temp folder is on another disk; here a folder shown read-only inside) cannot be
    connected to; the folder's other files stay readable, and a socket in the sandbox's own
    writable folder (the claude CLI's gate) stays reachable."""
    shown = tmp_path / "ray-temp" / "session_1" / "sockets"
    shown.mkdir(parents=True)
    (shown.parent / "ports.json").write_text('{"raylet": 1}\n')
    work = tmp_path / "work"
    work.mkdir()
    servers = []
    for path in (shown / "raylet", shown / "plasma_store", work / "gate.sock"):
        server = socket.socket(socket.AF_UNIX)
        server.bind(str(path))
        server.listen(4)
        servers.append(server)
    try:
        runner = SandboxedRunner(run_logged, box, writable=[work], readable=[shown.parent.parent])
        log = tmp_path / "log"
        script = f"""
import socket
for path in ("{shown}/raylet", "{shown}/plasma_store", "{work}/gate.sock"):
    s = socket.socket(socket.AF_UNIX)
    try:
        s.connect(path)
        print("CONNECTED", path)
    except OSError as exc:
        print("REFUSED", path, type(exc).__name__)
print("READ", open("{shown.parent}/ports.json").read().strip())
"""
        res = runner([sys.executable, "-c", script], cwd=work, env=dict(os.environ), log=log)
        out = log.read_text()
        assert res.returncode == 0, out
        assert f"REFUSED {shown}/raylet" in out and f"REFUSED {shown}/plasma_store" in out
        assert f"CONNECTED {work}/gate.sock" in out
        assert 'READ {"raylet": 1}' in out
    finally:
        for server in servers:
            server.close()
