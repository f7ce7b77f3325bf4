"""Published wheels: list a package's files on PEP 503/691 indexes and in find-links.

Versions, wheel file names and platform tags are `packaging`'s (the rules pip itself
vendors). Which tags a wheel may carry is asked of the *target* interpreter (it runs
`packaging.tags.sys_tags()` with the tool's copy of `packaging` on its path), so its glibc,
ABI (abi3, free-threaded cp313t) and machine decide, not the tool's. Requests go through
builds/index_config.py: the user's cert, trusted hosts, proxy and credentials.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass
from html.parser import HTMLParser
from pathlib import Path

import packaging
from packaging.utils import InvalidWheelFilename, canonicalize_name, parse_wheel_filename
from packaging.version import InvalidVersion, Version

from tritonbisect.builds.index_config import open_url, redact, strip_auth

_TIMEOUT = 60.0


class WheelIndexError(Exception):
    """The index cannot be read (network, HTTP error, bad page): an `infra` failure."""


class BadVersion(ValueError):
    """Not a PEP 440 version."""


def version_key(version: str) -> Version:
    """The PEP 440 version (packaging's order; local labels such as +git<sha> compare as
    text, so nightlies of one release are ordered by commit ancestry where a checkout is
    given)."""
    try:
        return Version(version)
    except InvalidVersion:
        raise BadVersion(f"{version!r} is not a PEP 440 version") from None


def is_prerelease(version: str) -> bool:
    try:
        return Version(version).is_prerelease
    except InvalidVersion:
        return False


def normalize_name(name: str) -> str:
    return canonicalize_name(name)


@dataclass(frozen=True)
class WheelFile:
    """One file of the package on the index (its URL carries no credentials)."""

    filename: str
    url: str
    sha256: str | None  # from the index (#sha256= or PEP 691 hashes); None for --find-links
    version: str
    tags: tuple[str, ...]  # "cp311-cp311-manylinux_2_27_x86_64", ...
    yanked: bool = False

    def to_dict(self) -> dict:
        return {**asdict(self), "tags": list(self.tags)}

    @classmethod
    def from_dict(cls, data: dict) -> WheelFile:
        tags = tuple(t if isinstance(t, str) else "-".join(t) for t in data.get("tags") or ())
        return cls(data["filename"], data["url"], data.get("sha256"), data["version"], tags,
                   bool(data.get("yanked")))


def parse_wheel_name(filename: str) -> tuple[str, str, tuple[str, ...]] | None:
    """(normalized name, version, tags) of a wheel file name; None if it is not one."""
    try:
        name, version, _build, tags = parse_wheel_filename(filename)
    except (InvalidWheelFilename, InvalidVersion):
        return None
    return str(name), str(version), tuple(sorted(str(t) for t in tags))


@dataclass(frozen=True)
class Platform:
    """The tags the target interpreter accepts, most preferred first (packaging's sys_tags)."""

    tags: tuple[str, ...]
    interpreter: str  # "cp311"
    platform: str  # "manylinux_2_35_x86_64", the most specific platform tag

    @classmethod
    def from_facts(cls, facts: dict) -> Platform:
        return cls(tuple(facts["tags"]), facts["interpreter"], facts["platform"])

    def describe(self) -> str:
        return f"{self.interpreter} on {self.platform}"

    def rank(self, f: WheelFile) -> int | None:
        """The place of the wheel's best tag in the preference order; None: not installable."""
        ranks = self._ranks()
        got = [ranks[t] for t in f.tags if t in ranks]
        return min(got) if got else None

    def _ranks(self) -> dict[str, int]:
        cached = self.__dict__.get("_rank_cache")
        if cached is None:
            cached = {t: i for i, t in enumerate(self.tags)}
            object.__setattr__(self, "_rank_cache", cached)
        return cached


PLATFORM_PROBE = (
    "import json, sys\n"
    "sys.path.insert(0, sys.argv[1])\n"
    "from packaging import tags\n"
    "ts = [str(t) for t in tags.sys_tags()]\n"
    "print(json.dumps({'tags': ts, 'interpreter': tags.interpreter_name() + tags.interpreter_version(),\n"
    "  'platform': next(iter(tags.platform_tags()), 'any')}))\n"
)


def platform_of(python: str) -> Platform:
    """The wheel tags `python` accepts, asked of it in a subprocess running this tool's copy
    of `packaging` (the target may have none). WheelIndexError when it does not run."""
    lib = str(Path(packaging.__file__).resolve().parent.parent)
    try:
        proc = subprocess.run([python, "-I", "-c", PLATFORM_PROBE, lib], capture_output=True, text=True,
                              timeout=120, env={k: v for k, v in os.environ.items() if k != "PYTHONPATH"})
        return Platform.from_facts(json.loads(proc.stdout))
    except (OSError, ValueError, KeyError, subprocess.SubprocessError) as exc:
        raise WheelIndexError(f"cannot ask {python!r} which wheels it takes: {exc}") from None


def tag_supported(tag: str, plat: Platform) -> bool:
    return tag in plat._ranks()


def compatible(files: Iterable[WheelFile], plat: Platform) -> list[WheelFile]:
    return [f for f in files if not f.yanked and plat.rank(f) is not None]


def by_version(files: Iterable[WheelFile]) -> dict[str, list[WheelFile]]:
    out: dict[str, list[WheelFile]] = {}
    for f in files:
        out.setdefault(f.version, []).append(f)
    return out


def sorted_versions(versions: Iterable[str]) -> list[str]:
    good = {}
    for v in set(versions):
        try:
            good[v] = Version(v)
        except InvalidVersion:
            continue
    return sorted(good, key=good.__getitem__)


def nearest(version: str, versions: Sequence[str], n: int = 3) -> list[str]:
    """Up to 2n versions around `version` (the ones just below and just above it)."""
    ordered = sorted_versions(versions)
    try:
        key = Version(version)
    except InvalidVersion:
        return ordered[-n:]
    below = [v for v in ordered if Version(v) < key][-n:]
    above = [v for v in ordered if Version(v) > key][:n]
    return below + above


def unordered_locals(versions: Iterable[str]) -> list[str]:
    """The public versions that several of `versions` share, differing only in their local
    label (`3.7.0+gitaaaa`, `3.7.0+gitbbbb`): their PEP 440 order is the labels' text, not
    their dates."""
    publics: dict[str, set[str]] = {}
    for v in versions:
        try:
            pv = Version(v)
        except InvalidVersion:
            continue
        if pv.local:
            publics.setdefault(pv.public, set()).add(v)
    return sorted((p for p, vs in publics.items() if len(vs) > 1), key=Version)


# --- reading an index ------------------------------------------------------------------------


class _Links(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.links: list[tuple[str, dict[str, str | None]]] = []
        self._href: str | None = None
        self._attrs: dict[str, str | None] = {}
        self._text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "a":
            self._attrs = dict(attrs)
            self._href = self._attrs.get("href")
            self._text = []

    def handle_data(self, data: str) -> None:
        if self._href is not None:
            self._text.append(data)

    def handle_endtag(self, tag: str) -> None:
        if tag == "a" and self._href is not None:
            self._attrs["_text"] = "".join(self._text).strip()
            self.links.append((self._href, self._attrs))
            self._href = None


_ACCEPT = ("application/vnd.pypi.simple.v1+json, application/vnd.pypi.simple.v1+html;q=0.2, "
           "text/html;q=0.1")


def _fetch(url: str) -> tuple[bytes, str, str]:
    """(body, content type, final URL without credentials); content type "404" when the
    package is not there. A file: index is a directory of index.html pages, as for pip."""
    bare = strip_auth(url)
    if bare.startswith("file:"):
        path = Path(urllib.request.url2pathname(urllib.parse.urlsplit(bare).path))
        page = path / "index.html" if path.is_dir() else path
        if not page.is_file():
            return b"", "404", bare
        return page.read_bytes(), "text/html", page.as_uri()
    try:
        with open_url(url, headers={"Accept": _ACCEPT}, timeout=_TIMEOUT) as resp:
            return resp.read(), resp.headers.get("Content-Type", ""), strip_auth(resp.geturl())
    except urllib.error.HTTPError as exc:
        if exc.code == 404:
            return b"", "404", bare
        hint = "; give credentials in pip's configuration, ~/.netrc or keyring" if exc.code in (401, 403) else ""
        raise WheelIndexError(f"index {redact(url)}: HTTP {exc.code} {exc.reason}{hint}") from None
    except (urllib.error.URLError, OSError, ValueError) as exc:
        reason = getattr(exc, "reason", exc)
        raise WheelIndexError(f"index {redact(url)} is unreachable: {reason}") from None


def _entry(filename: str, url: str, sha256: str | None, package: str, yanked: bool) -> WheelFile | None:
    parsed = parse_wheel_name(filename)
    if parsed is None or parsed[0] != package:
        return None
    return WheelFile(filename, strip_auth(url), sha256, parsed[1], parsed[2], yanked)


def parse_project_page(body: bytes, content_type: str, base_url: str, package: str) -> list[WheelFile]:
    """The wheels of `package` on a PEP 691 JSON or PEP 503 HTML project page."""
    out: list[WheelFile] = []
    if "json" in content_type:
        try:
            data = json.loads(body)
        except ValueError as exc:
            raise WheelIndexError(f"index page {base_url} is not valid JSON: {exc}") from None
        for f in data.get("files") or []:
            url = urllib.parse.urljoin(base_url, f.get("url", ""))
            sha = (f.get("hashes") or {}).get("sha256")
            e = _entry(f.get("filename", ""), url, sha, package, bool(f.get("yanked")))
            if e:
                out.append(e)
        return out
    parser = _Links()
    parser.feed(body.decode("utf-8", "replace"))
    for href, attrs in parser.links:
        url = urllib.parse.urljoin(base_url, href)
        frag = urllib.parse.urldefrag(url)
        sha = None
        m = re.search(r"sha256=([0-9a-fA-F]{64})", frag.fragment)
        if m:
            sha = m.group(1).lower()
        filename = urllib.parse.unquote(frag.url.rsplit("/", 1)[-1])
        e = _entry(filename, frag.url, sha, package, "data-yanked" in attrs)
        if e:
            out.append(e)
    return out


def list_wheels(package: str, *, index_urls: Sequence[str] = (),
                find_links: Sequence[str | Path] = ()) -> list[WheelFile]:
    """Every wheel of `package` on the indexes (PEP 691 JSON or PEP 503 HTML) and in the
    find-links (directories, or pages of links). WheelIndexError when one cannot be read."""
    package = normalize_name(package)
    files: list[WheelFile] = []
    for base in index_urls:
        page = base.rstrip("/") + f"/{package}/"
        body, ctype, final = _fetch(page)
        if ctype == "404":
            continue  # the package is not on this index
        files += parse_project_page(body, ctype, final, package)
    for link in find_links:
        files += _find_links(str(link), package)
    return files


def _find_links(link: str, package: str) -> list[WheelFile]:
    if "://" not in link or link.startswith("file:"):
        d = Path(urllib.request.url2pathname(urllib.parse.urlsplit(link).path)) if link.startswith("file:") else Path(link)
        if not d.exists():
            raise WheelIndexError(f"find-links {d} does not exist")
        if d.is_dir():
            out = []
            for p in sorted(d.glob("*.whl")):
                e = _entry(p.name, p.resolve().as_uri(), None, package, False)
                if e:
                    out.append(e)
            return out
        return parse_project_page(d.read_bytes(), "text/html", d.resolve().as_uri(), package)
    body, ctype, final = _fetch(link)
    return [] if ctype == "404" else parse_project_page(body, ctype, final, package)
