"""builds/index_config.py: pip's (and uv's) configuration as the real pip and a real uv venv
give it, explicit options over it, credentials from URLs and .netrc, redaction."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tritonbisect.builds import index_config as ic


@pytest.fixture
def clean_pip_env(monkeypatch):
    """No PIP_* variables of the machine's own (its find-links, cert) in the way."""
    for k in list(os.environ):
        if k.startswith(("PIP_", "UV_")):
            monkeypatch.delenv(k)


def _pip_conf(tmp_path: Path, text: str) -> Path:
    conf = tmp_path / "pip.conf"
    conf.write_text(text)
    return conf


def test_pip_config_file_and_variables_in_pips_order(tmp_path, monkeypatch, clean_pip_env):
    conf = _pip_conf(tmp_path, (
        "[global]\nindex-url = https://alice:p%40ss@mirror.example/simple\n"
        "extra-index-url = https://one.example/simple\n  https://two.example/simple\n"
        "trusted-host = one.example\nproxy = http://proxy.example:3128\ncert = /etc/ssl/certs/ca-certificates.crt\n"
        "[install]\nfind-links = /srv/wheels\n"))
    monkeypatch.setenv("PIP_CONFIG_FILE", str(conf))
    monkeypatch.setenv("PIP_EXTRA_INDEX_URL", "https://three.example/simple")  # a variable beats the file
    cfg = ic.read_config(sys.executable)
    assert cfg.index_url == "https://alice:p%40ss@mirror.example/simple"
    assert cfg.extra_index_urls == ("https://three.example/simple",)
    assert cfg.find_links == ("/srv/wheels",) and cfg.trusted_hosts == ("one.example",)
    assert cfg.proxy == "http://proxy.example:3128" and cfg.cert.endswith("ca-certificates.crt")
    assert cfg.source.startswith("pip config of ")
    shown = "\n".join(cfg.describe())
    assert "https://alice:****@mirror.example/simple" in shown and "p%40ss" not in shown and "p@ss" not in shown
    assert "find-links /srv/wheels (pip config of" in shown and "/srv/wheels (pip config of " + sys.executable + "), not on disk: skipped" in shown
    # explicit options win over the configured indexes and find-links; the rest stays
    cfg = ic.read_config(sys.executable, index_urls=["https://x.example/simple"], find_links=["/w"])
    assert cfg.index_urls == ["https://x.example/simple"] and cfg.find_links == ("/w",)
    assert cfg.origins["https://x.example/simple"] == "--index-url" and cfg.proxy
    monkeypatch.setenv("PIP_NO_INDEX", "1")
    assert ic.read_config(sys.executable).index_urls == []


def test_no_configuration_is_pypi(monkeypatch, clean_pip_env):
    monkeypatch.setenv("PIP_CONFIG_FILE", os.devnull)  # pip reads no file at all
    cfg = ic.read_config(sys.executable)
    assert cfg.index_urls == [ic.PYPI] and cfg.find_links == ()


@pytest.mark.skipif(shutil.which("uv") is None, reason="uv is not installed")
def test_a_uv_venv_reads_uvs_configuration(tmp_path, monkeypatch, clean_pip_env):
    venv = tmp_path / "uvenv"
    subprocess.run(["uv", "venv", "-q", "--python", sys.executable, str(venv)], check=True)
    python = str(venv / "bin" / "python")
    assert ic.uv_managed(python) and not ic.uv_managed(sys.executable)
    toml = tmp_path / "uv.toml"
    toml.write_text('find-links = ["/srv/wheels"]\nallow-insecure-host = ["corp.example"]\n'
                    '[[index]]\nurl = "https://corp.example/simple"\ndefault = true\n'
                    '[[index]]\nurl = "https://extra.example/simple"\n')
    monkeypatch.setenv("UV_CONFIG_FILE", str(toml))
    monkeypatch.setenv("PIP_CONFIG_FILE", str(_pip_conf(tmp_path, "[global]\nindex-url = https://pip.example/simple\n")))
    cfg = ic.read_config(python)
    assert cfg.index_urls == ["https://corp.example/simple", "https://extra.example/simple"]
    assert cfg.find_links == ("/srv/wheels",) and cfg.trusted_hosts == ("corp.example",)
    assert cfg.source == f"uv: {toml}"
    assert ic.read_config(sys.executable).index_urls == ["https://pip.example/simple"]  # not uv's venv: pip's
    monkeypatch.setenv("UV_INDEX_URL", "https://env.example/simple")
    assert ic.read_config(python).index_url == "https://env.example/simple"
    # a uv.toml uv cannot parse is said, not skipped silently
    monkeypatch.delenv("UV_INDEX_URL")
    toml.write_text("find-links = [\n")
    cfg = ic.read_config(python)
    assert cfg.problems and f"uv cannot read {toml}" in cfg.problems[0] and cfg.index_urls == ["https://pip.example/simple"]


def test_redaction_and_credentials_lookup(tmp_path, monkeypatch):
    assert ic.redact("https://bob:s3cret@h.example:8443/simple") == "https://bob:****@h.example:8443/simple"
    assert ic.redact("https://t0ken@h.example/simple") == "https://****@h.example/simple"  # a token alone
    assert ic.strip_auth("https://bob:s3cret@h.example:8443/simple") == "https://h.example:8443/simple"
    assert ic.redact("https://h.example/simple") == "https://h.example/simple"
    creds = ic.Credentials()
    creds.remember(["https://bob:s%3Acret@h.example/simple"])
    assert creds.lookup("https://h.example/files/x.whl") == ("bob", "s:cret")  # same host, any path
    netrc = tmp_path / "netrc"
    netrc.write_text("machine other.example login carol password n3trc\n")
    monkeypatch.setenv("NETRC", str(netrc))
    assert creds.lookup("https://other.example/simple/triton/") == ("carol", "n3trc")
    assert creds.lookup("https://third.example/simple/") is None


def test_trusted_host_skips_verification():
    cfg = ic.IndexConfig(trusted_hosts=("self-signed.example",))
    import ssl

    assert ic._ssl_context(cfg, "self-signed.example").verify_mode == ssl.CERT_NONE
    assert ic._ssl_context(cfg, "pypi.org").verify_mode == ssl.CERT_REQUIRED


@pytest.mark.skipif(not Path("/opt/pypi/simple/triton/index.html").is_file(),
                    reason="not the machine whose pip reads file:///opt/pypi/simple")
def test_this_machines_own_configuration_finds_triton():
    """This machine reaches packages through its pip configuration: an extra index on disk
    (file:///opt/pypi/simple) and find-links. Read as pip reads it, it lists real triton wheels."""
    from tritonbisect.builds.wheel_index import list_wheels

    cfg = ic.activate(ic.read_config(sys.executable))
    assert "file:///opt/pypi/simple" in cfg.extra_index_urls
    files = list_wheels("triton", index_urls=[u for u in cfg.index_urls if u.startswith("file:")],
                        find_links=cfg.find_links)
    assert {"3.6.0", "3.8.0"} <= {f.version for f in files}
    assert all(f.sha256 and f.url.startswith("file:///opt/pypi/") for f in files)
