"""Where built artifacts live: the store interface recipes use, and how `--cache-dir` opens one.

Recipes never construct a store themselves; they call `open_cache(location, workdir=...)` with
the location the session was given (`--cache-dir`, saved in session.json and passed to every
step in `StepContext.cache_dir`). Today a location is a directory: the workdir's own
`cache/` by default, or a shared one (NFS or similar) so that a wheel built on one node of a
Ray cluster is installed on another. `ArtifactCache` (cache.py) is that directory store: its
entries appear whole or not at all (staged in its own `tmp/`, then one `rename`), and its
`flock` lock serialises writers; both hold across hosts on a shared filesystem whose client
maps `flock` onto byte-range locks (Linux NFS does since 2.6.12, NFSv4 servers honour them).

An object store is a registered scheme (`register_store(scheme, factory)`); `s3://` is built
in (s3store.py, `--cache-url`): its `get` downloads an entry into a node-local folder and
returns that path, its `put` uploads a staged artifact with the same whole-or-nothing rule
(upload under a temporary name, then copy to the key), and failure records are small objects
beside the entries. Nothing in the recipes changes: they only see `ArtifactStore`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, Protocol

from tritonbisect.builds.cache import ArtifactCache, FailureRecord


class ArtifactStore(Protocol):
    """What recipes need from a cache (ArtifactCache implements it)."""

    root: Path  # local folder for staging and for the store's own bookkeeping

    @staticmethod
    def key(repo_id: str, commit: str, recipe: str, config: Mapping, python_abi: str,
            toolchain: str) -> str:
        """The entry key of an artifact (a sha256 of everything that determines it)."""

    def get(self, key: str) -> Path | None:
        """A local path to the verified artifact stored under key; None on a miss."""

    def put(self, key: str, src: Path, meta: Mapping[str, Any], *, move: bool = False) -> Path:
        """Store `src` (file or folder) under key, whole or not at all; the stored path."""

    def staging_dir(self, prefix: str = "stage-") -> Path:
        """A fresh local folder to build into (cheap to `put(..., move=True)` from)."""

    def recorded_sha256(self, artifact: Path) -> str | None:
        """The digest recorded for a file artifact `get`/`put` returned."""

    def failure(self, key: str) -> FailureRecord | None:
        """The recorded failed build under key, if any."""

    def record_failure(self, key: str, kind: str, reason: str, log: Path | None, *,
                       commit: str = "", recipe: str = "",
                       meta: Mapping[str, Any] | None = None) -> None:
        """Record a failed build (with a copy of its log) so that it is not rebuilt."""

    def forget_failures(self, commit: str | None = None) -> list[str]:
        """Forget the recorded failures (of one commit prefix); their keys."""


StoreFactory = Callable[[str, Path], ArtifactStore]
_STORES: dict[str, StoreFactory] = {}


def register_store(scheme: str, factory: StoreFactory) -> None:
    """Serve locations `<scheme>://...` with `factory(location, workdir)`."""
    _STORES[scheme.lower()] = factory


def _factory(scheme: str) -> StoreFactory | None:
    scheme = scheme.lower()
    if scheme == "s3" and scheme not in _STORES:  # imported only when asked for (boto3)
        from tritonbisect.builds.s3store import open_s3

        register_store("s3", open_s3)
    return _STORES.get(scheme)


def default_location(workdir: Path) -> Path:
    return Path(workdir) / "cache"


def open_cache(location: str | Path | None, *, workdir: Path) -> ArtifactStore:
    """The artifact store at `location` (a directory, or a registered `scheme://` URL);
    `<workdir>/cache` when None. An unknown scheme raises InputError."""
    if location is None or str(location) == "":
        return ArtifactCache(default_location(workdir))
    text = str(location)
    scheme, sep, rest = text.partition("://")
    if sep and "/" not in scheme:
        if scheme.lower() == "file":
            return ArtifactCache(Path(rest))
        factory = _factory(scheme)
        if factory is None:
            from tritonbisect.core.errors import InputError

            raise InputError(
                f"--cache-dir {text}: no artifact store for {scheme}:// here; use a directory "
                "(one shared by every node, e.g. on NFS, for a Ray cluster)"
            )
        return factory(text, Path(workdir))
    return ArtifactCache(Path(text).expanduser())


def check_location(location: str | None) -> str | None:
    """Validate a --cache-dir value before a session is created; returns it normalised
    (an absolute path for a directory, the URL as given for a registered scheme)."""
    if not location:
        return None
    scheme, sep, _rest = location.partition("://")
    from tritonbisect.core.errors import InputError

    if sep and "/" not in scheme and scheme.lower() != "file":
        if _factory(scheme) is None:
            raise InputError(
                f"--cache-dir {location}: no artifact store for {scheme}:// here; use a "
                "directory (one shared by every node, e.g. on NFS, for a Ray cluster)"
            )
        if scheme.lower() == "s3":
            import importlib.util

            from tritonbisect.builds.s3store import INSTALL_HINT, parse_url

            parse_url(location)
            if importlib.util.find_spec("boto3") is None:
                raise InputError(INSTALL_HINT)
        return location
    path = Path(location.split("://", 1)[1] if sep else location).expanduser().resolve()
    if path.exists() and not path.is_dir():
        raise InputError(f"--cache-dir {location}: not a directory")
    return str(path)
