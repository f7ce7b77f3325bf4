"""A local package index for tests: small real Triton wheels behind `python -m http.server`.

`write_wheel` writes a valid wheel (zip with METADATA, WHEEL, RECORD and their sha256s) of a
toy `triton` whose `triton.add` is right before `BAD_FROM` and off by one from it on.
`LocalIndex` lays the wheels out as a PEP 503 simple index (links with #sha256=) and serves
the directory on 127.0.0.1 from a real subprocess that a test can stop and start again.
"""

from __future__ import annotations

import base64
import hashlib
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
import zipfile
from pathlib import Path

VERSIONS = ["3.0.0", "3.1.0", "3.2.0", "3.3.0", "3.4.0", "3.5.0rc1", "3.5.0", "3.6.0"]
BAD_FROM = "3.4.0"
WINDOWS_ONLY = "3.7.0"  # published, but no wheel for this platform
TEST_SCRIPT = """\
import sys
import triton
sys.exit(0 if triton.add(2, 2) == 4 else 1)
"""


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()


def write_wheel(out: Path, version: str, *, bad: bool, plat: str = "any", dist: str = "triton") -> Path:
    """A real wheel of a toy Triton at `version` (pip installs it like any other)."""
    py = "py3" if plat == "any" else "cp311"
    abi = "none" if plat == "any" else "cp311"
    name = f"{dist.replace('-', '_')}-{version}-{py}-{abi}-{plat}.whl"
    info = f"{dist.replace('-', '_')}-{version}.dist-info"
    files = {
        "triton/__init__.py": (
            f"__version__ = {version!r}\n\n\ndef add(a, b):\n"
            f"    return a + b{' + 1' if bad else ''}\n"
        ).encode(),
        f"{info}/METADATA": f"Metadata-Version: 2.1\nName: {dist}\nVersion: {version}\n".encode(),
        f"{info}/WHEEL": (f"Wheel-Version: 1.0\nGenerator: tritonbisect-tests\nRoot-Is-Purelib: "
                          f"true\nTag: {py}-{abi}-{plat}\n").encode(),
    }
    record = "".join(f"{p},sha256={_b64(d)},{len(d)}\n" for p, d in files.items())
    record += f"{info}/RECORD,,\n"
    out.mkdir(parents=True, exist_ok=True)
    path = out / name
    with zipfile.ZipFile(path, "w") as zf:
        for p, d in files.items():
            zi = zipfile.ZipInfo(p, date_time=(2025, 1, 1, 0, 0, 0))
            zf.writestr(zi, d)
        zf.writestr(zipfile.ZipInfo(f"{info}/RECORD", date_time=(2025, 1, 1, 0, 0, 0)), record)
    return path


def write_wheels(out: Path) -> list[Path]:
    from tritonbisect.builds.wheel_index import version_key

    wheels = [write_wheel(out, v, bad=version_key(v) >= version_key(BAD_FROM)) for v in VERSIONS]
    wheels.append(write_wheel(out, WINDOWS_ONLY, bad=True, plat="win_amd64"))
    return wheels


def sha256(path: Path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def write_simple_index(root: Path, wheels: list[Path], *, package: str = "triton",
                       digests: dict[str, str] | None = None) -> None:
    """root/simple/<package>/index.html linking root/files/<wheel>#sha256=<digest>."""
    files = root / "files"
    files.mkdir(parents=True, exist_ok=True)
    links = []
    for w in wheels:
        shutil.copy2(w, files / w.name)
        digest = (digests or {}).get(w.name) or sha256(w)
        links.append(f'<a href="../../files/{w.name}#sha256={digest}">{w.name}</a><br/>')
    page = root / "simple" / package
    page.mkdir(parents=True, exist_ok=True)
    (page / "index.html").write_text(
        "<!DOCTYPE html><html><body>\n" + "\n".join(links) + "\n</body></html>\n")
    (root / "simple" / "index.html").write_text(f'<a href="{package}/">{package}</a>\n')


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class LocalIndex:
    """`python -m http.server` on 127.0.0.1 serving `root`; `url` is its /simple."""

    def __init__(self, root: Path) -> None:
        self.root = Path(root)
        self.port = _free_port()
        self.proc: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/simple"

    def start(self) -> LocalIndex:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "http.server", str(self.port), "--bind", "127.0.0.1",
             "--directory", str(self.root)],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            try:
                urllib.request.urlopen(self.url + "/", timeout=2).read()
                return self
            except OSError:
                time.sleep(0.05)
        self.stop()
        raise RuntimeError("the local index did not start")

    def stop(self) -> None:
        if self.proc is not None:
            self.proc.terminate()
            self.proc.wait(timeout=10)
            self.proc = None
