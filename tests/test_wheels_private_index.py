"""`tritonbisect wheels` against a private index (pypiserver with basic authentication on
127.0.0.1) whose password is given only through pip's configuration (a pip.conf named by
PIP_CONFIG_FILE), through a .netrc or through keyring: it finds and installs the real `triton` releases and
toy dated nightlies there, and no file the tool writes, nor what it prints, holds the
password. Each run is a real `tritonbisect` process."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from private_index_world import (
    PASSWORD,
    USER,
    HeaderRecorder,
    PrivateIndex,
    files_containing,
    real_triton_wheels,
)
from real_triton import make_linked_venv
from wheel_index_world import TEST_SCRIPT, write_wheel

pytestmark = pytest.mark.slow
REAL = ("3.3.1", "3.4.0", "3.5.1")  # tl.max over a NaN: NaN up to 3.4.0, not from 3.5.0 on
NIGHTLIES = ("3.7.0.dev20250101", "3.7.0.dev20250102", "3.7.0.dev20250103", "3.7.0.dev20250104")
MAX_NAN = Path(__file__).resolve().parents[1] / "bench" / "wheels_real" / "max_nan.py"


@pytest.fixture(scope="module")
def index(tmp_path_factory):
    toys = tmp_path_factory.mktemp("toy-nightlies")
    wheels = [write_wheel(toys, v, bad=v >= NIGHTLIES[2]) for v in NIGHTLIES]
    idx = PrivateIndex(tmp_path_factory.mktemp("private-index"), [*real_triton_wheels(REAL), *wheels]).start()
    yield idx
    idx.stop()


def _run(argv: list[str], env: dict[str, str], cwd: Path) -> tuple[int, dict | None, str, str]:
    proc = subprocess.run([sys.executable, "-m", "tritonbisect.cli", *argv, "--json"], capture_output=True,
                          text=True, env=env, cwd=cwd, timeout=1800)
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("{")]
    return proc.returncode, json.loads(lines[-1]) if lines else None, proc.stdout, proc.stderr


def _no_password_anywhere(*texts_and_dirs) -> None:
    for item in texts_and_dirs:
        if isinstance(item, Path):
            assert files_containing(item, PASSWORD) == [], f"the password is written under {item}"
        else:
            assert PASSWORD not in item


def test_credentials_from_pip_conf_real_releases(index, tmp_path):
    conf = tmp_path / "pip.conf"
    conf.write_text(f"[global]\nindex-url = {index.url_with_credentials()}\n")
    venv = tmp_path / "venv"
    make_linked_venv(venv)  # sees the torch of the Python running the tests
    home = tmp_path / "home"
    env = {**os.environ, "PIP_CONFIG_FILE": str(conf), "TRITON_INTERPRET": "1"}
    code, res, out, err = _run(
        ["wheels", "--good", REAL[0], "--bad", REAL[-1], "--venv", str(venv), "--test", f"python {MAX_NAN}",
         "--env", "TRITON_INTERPRET=1", "--timeout", "600", "--workdir", str(home)], env, tmp_path)
    assert code == 0, err[-3000:]
    assert (res["last_good"], res["first_bad"]) == ("3.4.0", "3.5.1")
    assert f"index http://{USER}:****@127.0.0.1:{index.port}/simple (pip config of" in err
    assert res["downloads"] >= 2
    _no_password_anywhere(out, err, home, venv)


def test_credentials_from_netrc_toy_nightlies_and_without_them(index, tmp_path):
    here = tmp_path / "user"
    here.mkdir()
    (here / "t.py").write_text(TEST_SCRIPT)
    netrc = tmp_path / "netrc"
    netrc.write_text(f"machine 127.0.0.1\nlogin {USER}\npassword {PASSWORD}\n")
    netrc.chmod(0o600)
    home = tmp_path / "home"
    argv = ["wheels", "--good", NIGHTLIES[0], "--bad", NIGHTLIES[-1], "--pre", "--index-url", index.url,
            "--test", "python t.py", "--workdir", str(home)]
    code, res, out, err = _run(argv, {**os.environ, "NETRC": str(netrc)}, here)
    assert code == 0, err[-3000:]
    assert (res["last_good"], res["first_bad"]) == (NIGHTLIES[1], NIGHTLIES[2])
    assert f"index {index.url} (--index-url)" in err
    _no_password_anywhere(out, err, home)
    # the password in the --index-url itself: used, shown as ****, stored nowhere (not even
    # in the session's record of the command line)
    home2 = tmp_path / "home2"
    argv2 = [*argv[:argv.index("--index-url") + 1], index.url_with_credentials(),
             *argv[argv.index("--index-url") + 2:-1], str(home2)]
    code, res, out, err = _run(argv2, {**os.environ, "NETRC": str(tmp_path / "none")}, here)
    assert code == 0, err[-3000:]
    assert f"index http://{USER}:****@127.0.0.1:{index.port}/simple (--index-url)" in err
    session = json.loads((Path(res["session_dir"]) / "session.json").read_text())
    assert f"http://{USER}:****@127.0.0.1:{index.port}/simple" in session["argv"]
    _no_password_anywhere(out, err, home2)
    # no credentials at all: one line saying so, exit 4, nothing tested
    code, res, out, err = _run(argv, {**os.environ, "NETRC": str(tmp_path / "none")}, here)
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert code == 4 and len(lines) == 1, err
    assert "HTTP 401" in lines[0] and ".netrc" in lines[0] and "nothing was tested" in lines[0]


# A keyring backend as keyrings.alt's plain-text one: the credentials in a JSON file. keyring
# loads it by name (PYTHON_KEYRING_BACKEND), as it would load a desktop keychain's backend.
FILE_KEYRING = """
import json
import os

from keyring.backend import KeyringBackend
from keyring.credentials import SimpleCredential


class FileKeyring(KeyringBackend):
    priority = 1

    def _entries(self):
        with open(os.environ["TEST_KEYRING_FILE"]) as f:
            return json.load(f)

    def get_password(self, service, username):
        entry = self._entries().get(service)
        return entry["password"] if entry and username in (None, entry["username"]) else None

    def get_credential(self, service, username):
        entry = self._entries().get(service)
        if not entry or username not in (None, entry["username"]):
            return None
        return SimpleCredential(entry["username"], entry["password"])

    def set_password(self, service, username, password):
        raise NotImplementedError

    def delete_password(self, service, username):
        raise NotImplementedError
"""


def test_credentials_from_keyring(index, tmp_path):
    pytest.importorskip("keyring")
    here = tmp_path / "user"
    here.mkdir()
    (here / "t.py").write_text(TEST_SCRIPT)
    backend = tmp_path / "backend"
    backend.mkdir()
    (backend / "file_keyring.py").write_text(FILE_KEYRING)
    store = tmp_path / "keyring.json"
    store.write_text(json.dumps({"127.0.0.1": {"username": USER, "password": PASSWORD}}))
    env = {**os.environ, "NETRC": str(tmp_path / "none"), "TEST_KEYRING_FILE": str(store),
           "PYTHON_KEYRING_BACKEND": "file_keyring.FileKeyring",
           "PYTHONPATH": os.pathsep.join(p for p in (str(backend), os.environ.get("PYTHONPATH")) if p)}
    home = tmp_path / "home"
    argv = ["wheels", "--good", NIGHTLIES[0], "--bad", NIGHTLIES[-1], "--pre", "--index-url", index.url,
            "--test", "python t.py", "--workdir", str(home)]
    code, res, out, err = _run(argv, env, here)
    assert code == 0, err[-3000:]
    assert (res["last_good"], res["first_bad"]) == (NIGHTLIES[1], NIGHTLIES[2])
    _no_password_anywhere(out, err, home)
    # the keyring holds nothing for this host: the same run is refused in one line
    store.write_text(json.dumps({"elsewhere.example": {"username": USER, "password": PASSWORD}}))
    code, res, out, err = _run([*argv[:-1], str(tmp_path / "home2")], env, here)
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert code == 4 and len(lines) == 1 and "HTTP 401" in lines[0], err


def test_feed_survey_lists_what_the_index_holds(index, monkeypatch, tmp_path):
    """The survey behind --feed, over the private index (found by its .netrc)."""
    from tritonbisect.builds import index_config
    from tritonbisect.builds.wheel_feeds import Feed, pick, survey
    from tritonbisect.builds.wheel_index import list_wheels

    netrc = tmp_path / "netrc"
    netrc.write_text(f"machine 127.0.0.1 login {USER} password {PASSWORD}\n")
    monkeypatch.setenv("NETRC", str(netrc))
    index_config.activate(index_config.IndexConfig(index_url=index.url, source="test"))
    feed = Feed("private", index.url, ("pytorch-triton", "triton"), "test")
    found = survey(feed, lambda p: list_wheels(p, index_urls=[index.url]))
    assert [f.summary() for f in found] == [  # pypiserver's fallback to pypi.org is off
        "pytorch-triton: none", f"triton: 7 versions ({REAL[0]} … {NIGHTLIES[-1]})"]
    assert pick(found, "3.4.0", "3.5.1").package == "triton"


def test_credentials_do_not_follow_a_redirect_to_another_host(tmp_path, monkeypatch):
    """pypiserver sends a package it lacks to its fallback index: the request that follows
    the redirect to another host carries no Authorization header (the first one did)."""
    from tritonbisect.builds import index_config
    from tritonbisect.builds.wheel_index import list_wheels

    other = HeaderRecorder()  # "localhost": another host than 127.0.0.1 for the credentials
    idx = PrivateIndex(tmp_path / "idx", [], fallback_url=f"http://localhost:{other.port}/simple/").start()
    try:
        index_config.activate(index_config.IndexConfig(index_url=idx.url_with_credentials(), source="test"))
        assert list_wheels("not-here", index_urls=[idx.url]) == []
    finally:
        idx.stop()
        other.stop()
    assert other.seen and other.seen[0][0].startswith("/simple/not-here")
    assert [auth for _, auth in other.seen] == [None] * len(other.seen)
