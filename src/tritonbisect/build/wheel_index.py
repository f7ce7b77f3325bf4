"""Published wheels: list a package's files on a PEP 503/691 index or in a --find-links dir.

Pure parts (version order, wheel names, tag compatibility) are apart from the one function
that reads an index (`list_wheels`). No dependency on `packaging`: the tool's own
environment has only what pyproject lists, so the few PEP 440 / PEP 425 rules needed here
are written out.
"""

from __future__ import annotations

import json
import re
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass
from html.parser import HTMLParser
from pathlib import Path

DEFAULT_INDEX = "https://pypi.org/simple"
_TIMEOUT = 60.0
_PRE = {"a": 0, "b": 1, "rc": 2, "c": 2, "alpha": 0, "beta": 1, "pre": 2, "preview": 2}
_VERSION = re.compile(
    r"^v?(?P<release>\d+(?:\.\d+)*)"
    r"(?:[-_.]?(?P<pre>a|b|rc|c|alpha|beta|pre|preview)[-_.]?(?P<pren>\d*))?"
    r"(?:(?:[-_.]?(?:post|rev|r)[-_.]?(?P<post>\d*))|-(?P<post2>\d+))?"
    r"(?:[-_.]?dev[-_.]?(?P<dev>\d*))?"
    r"(?:\+(?P<local>[a-z0-9.]+))?$"
)


class WheelIndexError(Exception):
    """The index cannot be read (network, HTTP error, bad page): an `infra` failure."""


class BadVersion(ValueError):
    """Not a PEP 440 version."""


def version_key(version: str) -> tuple:
    """A sort key for PEP 440 versions (release, pre, post, dev; local labels last, as text:
    PEP 440 gives them no date order, so nightlies are ordered by commit ancestry instead)."""
    m = _VERSION.match(version.strip().lower())
    if not m:
        raise BadVersion(f"{version!r} is not a PEP 440 version")
    release = [int(x) for x in m["release"].split(".")]
    while len(release) > 1 and release[-1] == 0:
        release.pop()
    dev = m["dev"]
    if m["pre"]:
        pre: tuple = (_PRE[m["pre"]], int(m["pren"] or 0))
    elif dev is not None and m["post"] is None and m["post2"] is None:
        pre = (-1, 0)  # 1.0.dev1 sorts before 1.0a1
    else:
        pre = (3, 0)
    post_s = m["post"] if m["post"] is not None else m["post2"]
    post = -1 if post_s is None else int(post_s or 0)
    devk = (1, 0) if dev is None else (0, int(dev or 0))
    local = tuple((0, int(p), "") if p.isdigit() else (-1, 0, p)
                  for p in re.split(r"[._-]", m["local"] or "") if p)
    return (tuple(release), pre, post, devk, local)


def is_prerelease(version: str) -> bool:
    m = _VERSION.match(version.strip().lower())
    return bool(m and (m["pre"] or m["dev"] is not None))


@dataclass(frozen=True)
class WheelFile:
    """One file of the package on the index."""

    filename: str
    url: str
    sha256: str | None  # from the index (#sha256= or PEP 691 hashes); None for --find-links
    version: str
    tags: tuple[tuple[str, str, str], ...]  # (python, abi, platform) triples
    yanked: bool = False

    def to_dict(self) -> dict:
        return {**asdict(self), "tags": [list(t) for t in self.tags]}

    @classmethod
    def from_dict(cls, data: dict) -> WheelFile:
        return cls(data["filename"], data["url"], data.get("sha256"), data["version"],
                   tuple(tuple(t) for t in data.get("tags") or ()), bool(data.get("yanked")))


def parse_wheel_name(filename: str) -> tuple[str, str, tuple[tuple[str, str, str], ...]] | None:
    """(normalized name, version, tag triples) of a PEP 427 file name; None if not a wheel."""
    if not filename.endswith(".whl"):
        return None
    parts = filename[:-4].split("-")
    if len(parts) not in (5, 6):
        return None
    name, version = parts[0], parts[1]
    py, abi, plat = parts[-3], parts[-2], parts[-1]
    tags = tuple((p, a, pl) for p in py.split(".") for a in abi.split(".") for pl in plat.split("."))
    return normalize_name(name), version.replace("_", "-"), tags


def normalize_name(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


@dataclass(frozen=True)
class Platform:
    """What the target interpreter accepts: cp311, linux_x86_64, glibc (2, 35)."""

    impl: str  # "cp"
    major: int
    minor: int
    machine: str  # x86_64
    system: str  # linux, macosx, win
    glibc: tuple[int, int] | None

    @classmethod
    def from_facts(cls, facts: dict) -> Platform:
        glibc = facts.get("glibc")
        return cls(facts["impl"], int(facts["major"]), int(facts["minor"]), facts["machine"],
                   facts["system"], tuple(glibc) if glibc else None)  # type: ignore[arg-type]

    def describe(self) -> str:
        return f"{self.impl}{self.major}{self.minor} on {self.system}_{self.machine}"


PLATFORM_PROBE = (
    "import json, platform, sys, sysconfig\n"
    "libc, ver = platform.libc_ver()\n"
    "g = [int(x) for x in ver.split('.')[:2]] if libc == 'glibc' and ver else None\n"
    "impl = {'cpython': 'cp', 'pypy': 'pp'}.get(sys.implementation.name, sys.implementation.name)\n"
    "p = sysconfig.get_platform()\n"
    "print(json.dumps({'impl': impl, 'major': sys.version_info[0], 'minor': sys.version_info[1],\n"
    "  'machine': platform.machine(), 'system': p.split('-')[0], 'glibc': g}))\n"
)

_MANYLINUX_LEGACY = {"manylinux1": (2, 5), "manylinux2010": (2, 12), "manylinux2014": (2, 17)}


def platform_of(python: str) -> Platform:
    """The wheel tags `python` accepts (its interpreter, ABI, glibc, machine), asked of it in a
    subprocess. WheelIndexError when it does not run."""
    import subprocess

    try:
        proc = subprocess.run([python, "-c", PLATFORM_PROBE], capture_output=True, text=True, timeout=120)
        return Platform.from_facts(json.loads(proc.stdout))
    except (OSError, ValueError, subprocess.SubprocessError) as exc:
        raise WheelIndexError(f"cannot ask {python!r} which wheels it takes: {exc}") from None


def tag_supported(tag: tuple[str, str, str], plat: Platform) -> bool:
    py, abi, pl = tag
    cp = f"{plat.impl}{plat.major}{plat.minor}"
    py_ok = py in (cp, f"py{plat.major}", f"py{plat.major}{plat.minor}") or (
        py.startswith(f"{plat.impl}{plat.major}") and abi == "abi3"
        and py[len(plat.impl):].isdigit() and int(py[len(plat.impl) + 1:] or 0) <= plat.minor)
    abi_ok = abi in ("none", "abi3", cp) or (abi.startswith(cp) and len(abi) == len(cp) + 1)
    return py_ok and abi_ok and _platform_ok(pl, plat)


def _platform_ok(pl: str, plat: Platform) -> bool:
    if pl == "any":
        return True
    if plat.system == "linux":
        if pl == f"linux_{plat.machine}":
            return True
        m = re.fullmatch(r"(manylinux1|manylinux2010|manylinux2014)_(\w+)", pl)
        if m:
            need = _MANYLINUX_LEGACY[m[1]]
            return m[2] == plat.machine and plat.glibc is not None and plat.glibc >= need
        m = re.fullmatch(r"manylinux_(\d+)_(\d+)_(\w+)", pl)
        if m:
            return (m[3] == plat.machine and plat.glibc is not None
                    and plat.glibc >= (int(m[1]), int(m[2])))
        return False
    if plat.system.startswith("macosx"):
        return pl.startswith("macosx_") and (pl.endswith(plat.machine) or pl.endswith("universal2"))
    return pl.startswith(plat.system)


def compatible(files: Iterable[WheelFile], plat: Platform) -> list[WheelFile]:
    return [f for f in files if not f.yanked and any(tag_supported(t, plat) for t in f.tags)]


def by_version(files: Iterable[WheelFile]) -> dict[str, list[WheelFile]]:
    out: dict[str, list[WheelFile]] = {}
    for f in files:
        out.setdefault(f.version, []).append(f)
    return out


def sorted_versions(versions: Iterable[str]) -> list[str]:
    good = []
    for v in set(versions):
        try:
            version_key(v)
        except BadVersion:
            continue
        good.append(v)
    return sorted(good, key=version_key)


def nearest(version: str, versions: Sequence[str], n: int = 3) -> list[str]:
    """Up to 2n versions around `version` (the ones just below and just above it)."""
    ordered = sorted_versions(versions)
    try:
        key = version_key(version)
    except BadVersion:
        return ordered[-n:]
    below = [v for v in ordered if version_key(v) < key][-n:]
    above = [v for v in ordered if version_key(v) > key][:n]
    return below + above


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


def _fetch(url: str) -> tuple[bytes, str, str]:
    req = urllib.request.Request(url, headers={
        "Accept": "application/vnd.pypi.simple.v1+json, application/vnd.pypi.simple.v1+html;q=0.2, "
                  "text/html;q=0.1",
        "User-Agent": "tritonbisect",
    })
    try:
        with urllib.request.urlopen(req, timeout=_TIMEOUT) as resp:
            return resp.read(), resp.headers.get("Content-Type", ""), resp.geturl()
    except urllib.error.HTTPError as exc:
        if exc.code == 404:
            return b"", "404", url
        raise WheelIndexError(f"index {url}: HTTP {exc.code} {exc.reason}") from None
    except (urllib.error.URLError, OSError, ValueError) as exc:
        reason = getattr(exc, "reason", exc)
        raise WheelIndexError(f"index {url} is unreachable: {reason}") from None


def _entry(filename: str, url: str, sha256: str | None, package: str, yanked: bool) -> WheelFile | None:
    parsed = parse_wheel_name(filename)
    if parsed is None or parsed[0] != package:
        return None
    return WheelFile(filename, url, sha256, parsed[1], parsed[2], yanked)


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


def list_wheels(package: str, *, index_urls: Sequence[str] = (), find_links: Path | None = None,
                default_index: bool = True) -> list[WheelFile]:
    """Every wheel of `package` on the indexes (PEP 691 JSON or PEP 503 HTML) and in the
    find-links directory. WheelIndexError when an index cannot be read."""
    package = normalize_name(package)
    urls = list(index_urls) or ([DEFAULT_INDEX] if default_index and find_links is None else [])
    files: list[WheelFile] = []
    for base in urls:
        page = base.rstrip("/") + f"/{package}/"
        body, ctype, final = _fetch(page)
        if ctype == "404":
            continue  # the package is not on this index
        files += parse_project_page(body, ctype, final, package)
    if find_links is not None:
        d = Path(find_links)
        if not d.is_dir():
            raise WheelIndexError(f"--find-links {d} is not a directory")
        for p in sorted(d.glob("*.whl")):
            e = _entry(p.name, p.resolve().as_uri(), None, package, False)
            if e:
                files.append(e)
    return files
