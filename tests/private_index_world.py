"""A private package index for tests: `pypiserver` on 127.0.0.1 behind basic authentication
(an htpasswd file written with passlib), holding real `triton` wheels from the package index
and toy nightlies.

The real wheels are downloaded once with `pip download` (through this machine's pip
configuration) into $TRITONBISECT_TEST_CACHE/wheels (default ~/.cache/tritonbisect-tests),
under a file lock; `pytest.skip` when the package index cannot be reached.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from real_triton import test_cache_dir
from wheel_index_world import _free_port

USER = "bisector"
PASSWORD = "pr1vate-S3cret-4b7e"  # what no file the tool writes may contain


def real_triton_wheels(versions: tuple[str, ...]) -> list[Path]:
    """The cp311 manylinux wheels of these triton releases, from the cache or downloaded."""
    root = test_cache_dir() / "wheels"
    root.mkdir(parents=True, exist_ok=True)
    out = []
    with open(test_cache_dir() / ".lock-wheels", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        for v in versions:
            have = sorted(root.glob(f"triton-{v}-*.whl"))
            if not have:
                proc = subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps", "-d", str(root),
                                       f"triton=={v}"], capture_output=True, text=True)
                if proc.returncode != 0:
                    pytest.skip(f"cannot download triton=={v}: {proc.stderr.strip()[-300:]}")
                have = sorted(root.glob(f"triton-{v}-*.whl"))
            out.append(have[0])
    return out


class PrivateIndex:
    """`pypi-server run` on 127.0.0.1 serving `packages`; list and download need USER:PASSWORD."""

    def __init__(self, root: Path, wheels: list[Path], *, fallback_url: str | None = None) -> None:
        from passlib.apache import HtpasswdFile

        self.root = Path(root)
        self.packages = self.root / "packages"
        self.packages.mkdir(parents=True, exist_ok=True)
        for w in wheels:
            target = self.packages / w.name
            if not target.exists():
                try:
                    os.link(w, target)  # the cached 250 MB wheels are not copied
                except OSError:
                    shutil.copy2(w, target)
        ht = HtpasswdFile(str(self.root / "htpasswd"), new=True)
        ht.set_password(USER, PASSWORD)
        ht.save()
        self.port = _free_port()
        self.proc: subprocess.Popen | None = None
        # pypiserver sends a request for a package it lacks to pypi.org unless told otherwise
        self.fallback = ["--fallback-url", fallback_url] if fallback_url else ["--disable-fallback"]

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/simple"

    def url_with_credentials(self) -> str:
        return f"http://{USER}:{PASSWORD}@127.0.0.1:{self.port}/simple"

    def start(self) -> PrivateIndex:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "pypiserver", "run", "-p", str(self.port), "-i", "127.0.0.1",
             "-P", str(self.root / "htpasswd"), "-a", "download,list,update", *self.fallback, str(self.packages)],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                urllib.request.urlopen(self.url + "/", timeout=2).read()
            except urllib.error.HTTPError as exc:
                if exc.code == 401:  # up, and asking for the password
                    return self
            except OSError:
                time.sleep(0.1)
        self.stop()
        raise RuntimeError("pypiserver did not start")

    def stop(self) -> None:
        if self.proc is not None:
            self.proc.terminate()
            self.proc.wait(timeout=10)
            self.proc = None


def files_containing(root: Path, secret: str) -> list[Path]:
    """Every file under root whose bytes contain `secret`."""
    needle = secret.encode()
    hits = []
    for p in Path(root).rglob("*"):
        if p.is_file() and not p.is_symlink():
            with open(p, "rb") as f:
                if needle in f.read():
                    hits.append(p)
    return hits


class HeaderRecorder:
    """An HTTP server on 127.0.0.1 (in a thread) that answers 404 and keeps every request's
    path and Authorization header."""

    def __init__(self) -> None:
        import http.server
        import threading

        seen: list[tuple[str, str | None]] = []

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802
                seen.append((self.path, self.headers.get("Authorization")))
                self.send_response(404)
                self.end_headers()

            def log_message(self, *args) -> None:
                pass

        self.seen = seen
        self.server = http.server.HTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()
