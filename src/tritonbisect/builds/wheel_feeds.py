"""Named feeds of published Triton wheels: an index and the distributions it holds.

How each names its builds (what orders them):
- pypi: `triton` releases (PEP 440 order).
- triton-nightly: Triton's own nightly index: `triton` with `+git<sha8>` local versions
  (one per commit; PEP 440 orders those labels as text, so a checkout orders them), and
  the older `triton-nightly` with dated `.devYYYYMMDDhhmmss` versions.
- pytorch-nightly: PyTorch's nightly index: `triton`, `triton-rocm`, `triton-xpu` now,
  `pytorch-triton`, `pytorch-triton-rocm`, `pytorch-triton-xpu` before, with `+git<sha8>`
  (or a bare `+<sha10>`) naming the Triton commit.
A feed of dated `.devYYYYMMDD` builds elsewhere (a company's nightly index) is given with
--index-url: its version order is its date order.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from packaging.version import InvalidVersion, Version

from tritonbisect.builds.wheel_index import WheelFile


@dataclass(frozen=True)
class Feed:
    name: str
    index_url: str
    packages: tuple[str, ...]  # the distributions to look for, the current name first
    naming: str


FEEDS: dict[str, Feed] = {f.name: f for f in (
    Feed("pypi", "https://pypi.org/simple", ("triton",), "releases"),
    Feed("triton-nightly", "https://aiinfra.pkgs.visualstudio.com/PublicPackages/_packaging/Triton-Nightly/pypi/simple",
         ("triton", "triton-nightly"), "+git<sha8> (triton), .devYYYYMMDD (triton-nightly)"),
    Feed("pytorch-nightly", "https://download.pytorch.org/whl/nightly",
         ("triton", "triton-rocm", "triton-xpu", "pytorch-triton", "pytorch-triton-rocm", "pytorch-triton-xpu"),
         "+git<sha8> (triton*), +<sha10> (older pytorch-triton*)"),
)}


def feed_named(name: str) -> Feed:
    """The feed, or KeyError naming the known ones."""
    if name not in FEEDS:
        raise KeyError(f"--feed {name}: unknown; one of {', '.join(FEEDS)} (or give --index-url URL)")
    return FEEDS[name]


@dataclass
class Found:
    package: str
    files: list[WheelFile]

    def summary(self) -> str:
        versions = sorted({f.version for f in self.files}, key=_key)
        if not versions:
            return f"{self.package}: none"
        span = versions[0] if len(versions) == 1 else f"{versions[0]} … {versions[-1]}"
        return f"{self.package}: {len(versions)} versions ({span})"


def _key(v: str) -> tuple[int, Version | str]:
    try:
        return (1, Version(v))
    except InvalidVersion:
        return (0, v)


def survey(feed: Feed, lister: Callable[[str], list[WheelFile]],
           packages: Sequence[str] | None = None) -> list[Found]:
    """What the feed holds for each of its distributions (those missing come back empty)."""
    return [Found(package, lister(package)) for package in packages or feed.packages]


def pick(found: Sequence[Found], good: str, bad: str) -> Found | None:
    """The first distribution holding both endpoints, else the first holding any wheel."""
    for f in found:
        have = {w.version for w in f.files}
        if good in have and bad in have:
            return f
    return next((f for f in found if f.files), None)
