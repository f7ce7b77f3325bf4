"""Cache entries as one byte string: how an artifact leaves one node's cache (a tar of the
entry, as kept) and enters another's (`ArtifactCache.put`, so it appears whole or not at all,
and its files are checked against the sender's recorded digests before it counts)."""

from __future__ import annotations

import io
import json
import shutil
import tarfile
from collections.abc import Iterable

from tritonbisect.builds.cache import META, ArtifactCache

# fields put() writes itself; the rest of an entry's meta is the builder's
_PUT_FIELDS = ("key", "artifact", "files", "size", "created")


def pack(cache: ArtifactCache, keys: Iterable[str]) -> bytes:
    """A tar of the (verified) entries under `keys` that the cache has."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        for key in keys:
            artifact = cache.get(key)
            if artifact is None:
                continue
            edir = artifact.parent
            tar.add(edir / META, arcname=f"{key}/{META}")
            tar.add(artifact, arcname=f"{key}/a/{artifact.name}")
    return buf.getvalue()


def keys_of_commit(cache: ArtifactCache, commit: str) -> list[str]:
    return [e.key for e in cache.entries() if e.commit and commit.startswith(e.commit)]


class TransferError(RuntimeError):
    pass


def unpack(cache: ArtifactCache, data: bytes) -> list[str]:
    """Put every entry of a `pack` into the cache; their keys. An entry whose files do not
    match the digests its sender recorded raises TransferError (and is not kept)."""
    if not data:
        return []
    stage = cache.staging_dir(prefix="import-")
    keys: list[str] = []
    try:
        with tarfile.open(fileobj=io.BytesIO(data), mode="r") as tar:
            tar.extractall(stage, filter="data")
        for edir in sorted(p for p in stage.iterdir() if p.is_dir()):
            key = edir.name
            meta = json.loads((edir / META).read_text(encoding="utf-8"))
            artifact = edir / "a" / meta["artifact"]
            own = {k: v for k, v in meta.items() if k not in _PUT_FIELDS}
            stored = cache.put(key, artifact, own, move=True)
            got = json.loads((stored.parent / META).read_text(encoding="utf-8"))
            if got.get("files") != meta.get("files"):
                cache.remove(key)
                raise TransferError(f"cache entry {key[:12]} arrived changed")
            keys.append(key)
    finally:
        shutil.rmtree(stage, ignore_errors=True)
    return keys


def entry_blob(cache: ArtifactCache, key: str) -> bytes | None:
    """`pack` of one entry, or None when the cache does not have it."""
    if cache.get(key) is None:
        return None
    return pack(cache, [key])
