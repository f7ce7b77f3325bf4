"""Downloads of published wheels, kept in the artifact cache keyed by their sha256.

<cache>/downloads/<sha256>/<filename>. The index's sha256 is the key and the check: a file
whose digest differs (a corrupt or truncated download, a file changed on disk) is never
installed; it is fetched again once, then the step is `infra`. A --find-links file has no
digest from an index: its own digest is taken first, so a copy kept
already is used (not counted as a download), else it is copied in. Requests carry the
user's cert, proxy and the credentials for the host (builds/index_config.py).
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import tempfile
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass
from pathlib import Path

from tritonbisect.builds.cache import file_sha256
from tritonbisect.builds.index_config import open_url, redact

_TIMEOUT = 120.0


class FetchError(Exception):
    """The wheel could not be had: network, HTTP error, digest mismatch (infra)."""


@dataclass
class Fetched:
    path: Path
    sha256: str
    downloaded: bool  # False: taken from the cache
    nbytes: int  # bytes transferred (0 from the cache)


def download_dir(cache_root: Path) -> Path:
    return Path(cache_root) / "downloads"


def fetch_wheel(url: str, filename: str, sha256: str | None, cache_root: Path, *,
                attempts: int = 2) -> Fetched:
    """The wheel at `url`, from the cache when a copy with the right digest is there."""
    root = download_dir(cache_root)
    if not sha256 and url.startswith("file:"):
        # a --find-links file has no digest from an index: its own says whether the copy kept is it
        with contextlib.suppress(OSError):
            sha256 = file_sha256(Path(urllib.request.url2pathname(urllib.parse.urlparse(url).path)))
    if sha256:
        target = root / sha256 / filename
        if target.is_file():
            if file_sha256(target) == sha256:
                with contextlib.suppress(OSError):
                    os.utime(target.parent)  # its last use, for `cache gc`
                return Fetched(target, sha256, False, 0)
            target.unlink()  # changed on disk since: fetch it again
    last = ""
    for _ in range(max(1, attempts)):
        tmp = _transfer(url, root)
        try:
            digest = file_sha256(tmp)
            if sha256 and digest != sha256:
                last = (f"{filename}: sha256 mismatch (the index says {sha256[:16]}…, "
                        f"the download is {digest[:16]}…): corrupt download")
                continue
            nbytes = tmp.stat().st_size
            target = root / digest / filename
            target.parent.mkdir(parents=True, exist_ok=True)
            os.replace(tmp, target)
            return Fetched(target, digest, True, nbytes)
        finally:
            tmp.unlink(missing_ok=True)
    raise FetchError(last)


def _transfer(url: str, root: Path) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    fd, name = tempfile.mkstemp(prefix=".part-", dir=root)
    tmp = Path(name)
    try:
        with os.fdopen(fd, "wb") as out:
            if url.startswith("file:"):
                src = Path(urllib.request.url2pathname(urllib.parse.urlparse(url).path))
                with open(src, "rb") as f:
                    shutil.copyfileobj(f, out, 1 << 20)
            else:
                with open_url(url, timeout=_TIMEOUT) as resp:
                    shutil.copyfileobj(resp, out, 1 << 20)
    except urllib.error.HTTPError as exc:
        tmp.unlink(missing_ok=True)
        raise FetchError(f"download of {redact(url)}: HTTP {exc.code} {exc.reason}") from None
    except (urllib.error.URLError, OSError, ValueError) as exc:
        tmp.unlink(missing_ok=True)
        raise FetchError(f"download of {redact(url)} failed: {getattr(exc, 'reason', exc)}") from None
    return tmp


# --- what the downloads hold (`tritonbisect cache list|gc`) ------------------------------------

_DIGEST = re.compile(r"^[0-9a-f]{64}$")


@dataclass(frozen=True)
class DownloadedWheel:
    sha256: str
    filename: str
    size: int
    last_used: float  # the folder's mtime: set when the wheel is downloaded or taken again


def downloaded_wheels(cache_root: Path) -> list[DownloadedWheel]:
    """Every wheel kept under <cache>/downloads (a folder per sha256)."""
    root = download_dir(cache_root)
    out = []
    try:
        folders = sorted(root.iterdir())
    except OSError:
        return []
    for folder in folders:
        if not _DIGEST.match(folder.name) or folder.is_symlink() or not folder.is_dir():
            continue
        files = [f for f in folder.iterdir() if f.is_file() and not f.is_symlink() and not f.name.startswith(".")]
        if not files:
            continue
        try:
            last = folder.stat().st_mtime
        except OSError:
            last = 0.0
        out.append(DownloadedWheel(folder.name, files[0].name, sum(f.stat().st_size for f in files), last))
    return out


def remove_download(cache_root: Path, sha256: str) -> bool:
    """Remove one downloaded wheel; renamed away first, so that no one finds half of it."""
    if not _DIGEST.match(sha256):
        raise ValueError(f"not a sha256: {sha256!r}")
    root = download_dir(cache_root)
    folder = root / sha256
    if not folder.is_dir() or folder.is_symlink():
        return False
    trash = root / f".trash-{sha256[:12]}-{os.getpid()}"
    try:
        os.replace(folder, trash)
    except OSError:
        return False
    shutil.rmtree(trash, ignore_errors=True)
    return True
