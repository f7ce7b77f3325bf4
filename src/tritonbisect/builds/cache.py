"""Content-addressed artifact store: a commit built once is never built again.

Layout under the cache root (default `<workdir>/cache`):

    entries/<key>/<artifact>        the wheel file, or the LLVM install prefix directory
    entries/<key>/meta.json         sha256 and size of every artifact file, size, created,
                                    commit, recipe, config, ...
    entries/<key>/.last_used        its mtime is the last use (LRU for gc)
    failures/<key>.json             a recorded failed build: kind, reason, log (a copy, below)
    failures/<key>.log
    tmp/                            staging, on the same filesystem so os.replace is atomic
    .lock                           fcntl lock: two sessions may share one cache

An entry appears whole or not at all: it is assembled in tmp/ and renamed into entries/
under the lock. `get` re-hashes the artifact; a corrupt entry is removed (with a warning)
and reported as a miss, so the caller simply rebuilds.
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import hashlib
import json
import logging
import os
import shutil
import tempfile
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tritonbisect.core.lock import locked

log = logging.getLogger("tritonbisect.builds.cache")

META = "meta.json"
LAST_USED = ".last_used"
_TMP_MAX_AGE = 24 * 3600  # staging leftovers of crashed processes older than this are removed


@dataclass(frozen=True)
class CacheEntry:
    key: str
    path: Path  # the artifact (file or directory)
    size: int  # bytes
    created: str  # ISO 8601
    last_used: float  # epoch seconds
    commit: str
    recipe: str
    meta: Mapping[str, Any] = field(default_factory=dict, compare=False)


@dataclass(frozen=True)
class FailureRecord:
    key: str
    kind: str  # an outcome Kind value: "build_failed" (infra failures are not recorded)
    reason: str
    log: Path | None  # the copy of the build log kept with the record
    created: str
    commit: str = ""
    recipe: str = ""


def sandbox_mark(sandboxed: bool) -> dict[str, bool]:
    """What a sandboxed build adds to its artifact's key: its entries are never handed to a
    build or a test that runs with the user's rights (whatever a hostile commit left in a
    checkout or a cache could be in them), only to other sandboxed ones."""
    return {"sandboxed": True} if sandboxed else {}


def _now_iso() -> str:
    return _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")


def file_sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def _walk_files(root: Path) -> Iterator[Path]:
    """Regular files and symlinks under root (a file yields itself), sorted."""
    if root.is_symlink() or root.is_file():
        yield root
        return
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames.sort()
        base = Path(dirpath)
        for name in sorted(filenames):
            yield base / name
        for name in dirnames:  # symlinks to directories are not descended into by os.walk
            p = base / name
            if p.is_symlink():
                yield p


def _manifest(artifact: Path) -> tuple[dict[str, dict[str, Any]], int]:
    """{relative path: {"sha256", "size"} or {"link"}} for every file of the artifact."""
    files: dict[str, dict[str, Any]] = {}
    total = 0
    for p in _walk_files(artifact):
        rel = "." if p == artifact else p.relative_to(artifact).as_posix()
        if p.is_symlink():
            files[rel] = {"link": os.readlink(p)}
            continue
        size = p.stat().st_size
        files[rel] = {"sha256": file_sha256(p), "size": size}
        total += size
    return files, total


def _rmtree(path: Path) -> None:
    if path.is_symlink() or path.is_file():
        path.unlink(missing_ok=True)
    elif path.exists():
        shutil.rmtree(path, ignore_errors=True)


def parse_size(text: str) -> int:
    """'20G', '500M', '1.5T', '1024' -> bytes (binary units)."""
    s = text.strip().upper().removesuffix("B").removesuffix("I")
    units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}
    mult = 1
    if s and s[-1] in units:
        mult = units[s[-1]]
        s = s[:-1]
    try:
        value = float(s)
    except ValueError:
        raise ValueError(f"not a size: {text!r} (use e.g. 20G, 500M)") from None
    if value < 0:
        raise ValueError(f"not a size: {text!r}")
    return int(value * mult)


def human_size(n: int) -> str:
    size = float(n)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if size < 1024 or unit == "TiB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{n} B"  # pragma: no cover


class ArtifactCache:
    """See the module docstring. Safe for concurrent use by several processes."""

    def __init__(self, root: Path) -> None:
        self.root = Path(root)
        self.entries_dir = self.root / "entries"
        self.failures_dir = self.root / "failures"
        self.tmp_dir = self.root / "tmp"
        for d in (self.entries_dir, self.failures_dir, self.tmp_dir):
            d.mkdir(parents=True, exist_ok=True)
        self._lock_path = self.root / ".lock"

    # --- keys ----------------------------------------------------------------------------

    @staticmethod
    def key(
        repo_id: str,
        commit: str,
        recipe: str,
        config: Mapping,
        python_abi: str,
        toolchain: str,
    ) -> str:
        """sha256 hex of a canonical JSON of everything that determines the artifact."""
        payload = {
            "v": 1,
            "repo": repo_id,
            "commit": commit,
            "recipe": recipe,
            "config": config,
            "python_abi": python_abi,
            "toolchain": toolchain,
        }
        text = json.dumps(payload, sort_keys=True, separators=(",", ":"), default=str)
        return hashlib.sha256(text.encode()).hexdigest()

    # --- locking and staging -----------------------------------------------------------------

    def lock(self, shared: bool = False) -> contextlib.AbstractContextManager[None]:
        return locked(self._lock_path, shared=shared)

    def staging_dir(self, prefix: str = "stage-") -> Path:
        """A fresh directory on the cache's filesystem (for builds put with move=True)."""
        return Path(tempfile.mkdtemp(prefix=prefix, dir=self.tmp_dir))

    # --- entries ---------------------------------------------------------------------------

    def _entry_dir(self, key: str) -> Path:
        if not key or "/" in key or key.startswith("."):
            raise ValueError(f"bad cache key {key!r}")
        return self.entries_dir / key

    def _read_meta(self, edir: Path) -> dict[str, Any] | None:
        try:
            meta = json.loads((edir / META).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        return meta if isinstance(meta, dict) else None

    def get(self, key: str) -> Path | None:
        """The artifact stored under key, verified by checksum; None on a miss.

        A corrupt entry (missing/changed file, unreadable meta) is removed, a warning is
        logged, and None is returned so that the caller rebuilds.
        """
        edir = self._entry_dir(key)
        if not edir.exists():
            return None
        with self.lock(shared=True):
            meta = self._read_meta(edir)
            problem = self._verify(edir, meta)
        if problem is not None:
            with self.lock():
                # someone may have replaced it meanwhile: re-check before removing
                meta = self._read_meta(edir)
                problem = self._verify(edir, meta) if edir.exists() else None
                if problem is not None:
                    log.warning(
                        "tritonbisect: cache entry %s is corrupt (%s); removed, will rebuild",
                        key[:12],
                        problem,
                    )
                    self._remove_dir(edir)
            if problem is not None or not edir.exists():
                return None
            meta = self._read_meta(edir)
        assert meta is not None
        self._touch(edir)
        return edir / meta["artifact"]

    def _verify(self, edir: Path, meta: Mapping[str, Any] | None) -> str | None:
        """None when the entry is intact, else what is wrong with it."""
        if meta is None:
            return "meta.json missing or unreadable"
        artifact = meta.get("artifact")
        files = meta.get("files")
        if not isinstance(artifact, str) or not isinstance(files, dict):
            return "meta.json incomplete"
        apath = edir / artifact
        if not (apath.exists() or apath.is_symlink()):
            return f"artifact {artifact} missing"
        for rel, info in files.items():
            p = apath if rel == "." else apath / rel
            if "link" in info:
                if not p.is_symlink() or os.readlink(p) != info["link"]:
                    return f"link {rel} changed"
                continue
            try:
                if p.stat().st_size != info["size"]:
                    return f"size of {rel} changed"
                if file_sha256(p) != info["sha256"]:
                    return f"checksum of {rel} does not match"
            except OSError:
                return f"file {rel} missing"
        return None

    def put(self, key: str, src: Path, meta: Mapping[str, Any], *, move: bool = False) -> Path:
        """Store `src` (a file or a directory) under key, atomically; returns the stored path.

        With move=True, src is moved (cheap when it is on the cache's filesystem, e.g. made
        with `staging_dir()`), else copied. When the key is already present and intact, the
        existing entry wins and src is left alone (or removed when move=True).
        """
        src = Path(src)
        if not (src.exists() or src.is_symlink()):
            raise FileNotFoundError(src)
        edir = self._entry_dir(key)
        stage = self.staging_dir(prefix=f"put-{key[:12]}-")
        try:
            target = stage / src.name
            if move:
                shutil.move(str(src), str(target))
            elif src.is_dir() and not src.is_symlink():
                shutil.copytree(src, target, symlinks=True)
            else:
                shutil.copy2(src, target, follow_symlinks=False)
            files, size = _manifest(target)
            full_meta = {
                **dict(meta),
                "key": key,
                "artifact": src.name,
                "files": files,
                "size": size,
                "created": _now_iso(),
            }
            full_meta.setdefault("commit", "")
            full_meta.setdefault("recipe", "")
            tmp_meta = stage / (META + ".tmp")
            tmp_meta.write_text(json.dumps(full_meta, indent=1, sort_keys=True), encoding="utf-8")
            with open(tmp_meta, "rb+") as f:
                os.fsync(f.fileno())
            os.replace(tmp_meta, stage / META)
            (stage / LAST_USED).touch()
            with self.lock():
                if edir.exists():
                    existing = self._read_meta(edir)
                    if self._verify(edir, existing) is None:
                        assert existing is not None
                        return edir / existing["artifact"]
                    self._remove_dir(edir)
                os.replace(stage, edir)
                stage = None  # type: ignore[assignment]
                # a success supersedes any failure recorded under the same key
                self._forget_failure_locked(key)
            return edir / src.name
        finally:
            if stage is not None:
                _rmtree(stage)

    def recorded_sha256(self, artifact: Path) -> str | None:
        """The sha256 meta.json records for a file artifact returned by get/put (verified
        by that call), so a caller needing its digest does not hash it again; None when
        `artifact` is not a file entry of this cache."""
        artifact = Path(artifact)
        if artifact.parent.parent != self.entries_dir:
            return None
        meta = self._read_meta(artifact.parent) or {}
        info = (meta.get("files") or {}).get(".") if meta.get("artifact") == artifact.name else None
        return info.get("sha256") if isinstance(info, dict) else None

    def _touch(self, edir: Path) -> None:
        with contextlib.suppress(OSError):
            os.utime(edir / LAST_USED)

    def _remove_dir(self, edir: Path) -> None:
        """Rename away first (atomic disappearance), then delete."""
        trash = self.tmp_dir / f"trash-{edir.name[:12]}-{os.getpid()}-{time.monotonic_ns()}"
        try:
            os.replace(edir, trash)
        except OSError:
            _rmtree(edir)
            return
        _rmtree(trash)

    def entries(self) -> list[CacheEntry]:
        out: list[CacheEntry] = []
        for edir in sorted(self.entries_dir.iterdir()):
            meta = self._read_meta(edir)
            if meta is None or not isinstance(meta.get("artifact"), str):
                continue
            try:
                last = (edir / LAST_USED).stat().st_mtime
            except OSError:
                last = 0.0
            out.append(
                CacheEntry(
                    key=edir.name,
                    path=edir / meta["artifact"],
                    size=int(meta.get("size", 0)),
                    created=str(meta.get("created", "")),
                    last_used=last,
                    commit=str(meta.get("commit", "")),
                    recipe=str(meta.get("recipe", "")),
                    meta=meta,
                )
            )
        return out

    def remove(self, key: str) -> bool:
        edir = self._entry_dir(key)
        with self.lock():
            if not edir.exists():
                return False
            self._remove_dir(edir)
            return True

    def remove_commit(self, commit: str) -> list[str]:
        """Remove every entry built from a commit (full sha or a prefix of at least 4)."""
        commit = commit.lower()
        if len(commit) < 4:
            raise ValueError("give at least 4 hex digits of the commit")
        removed = []
        for e in self.entries():
            if e.commit.lower().startswith(commit) and self.remove(e.key):
                removed.append(e.key)
        return removed

    def total_size(self) -> int:
        return sum(e.size for e in self.entries())

    def gc(self, max_bytes: int) -> list[str]:
        """Remove least recently used entries until the total is at most max_bytes."""
        self._clean_tmp()
        entries = sorted(self.entries(), key=lambda e: (e.last_used, e.created))
        total = sum(e.size for e in entries)
        removed: list[str] = []
        for e in entries:
            if total <= max_bytes:
                break
            if self.remove(e.key):
                removed.append(e.key)
                total -= e.size
        return removed

    def _clean_tmp(self) -> None:
        now = time.time()
        for p in self.tmp_dir.iterdir():
            try:
                if now - p.lstat().st_mtime > _TMP_MAX_AGE:
                    _rmtree(p)
            except OSError:
                continue

    # --- failure records -------------------------------------------------------------------

    def _failure_path(self, key: str) -> Path:
        self._entry_dir(key)  # validates the key
        return self.failures_dir / f"{key}.json"

    def failure(self, key: str) -> FailureRecord | None:
        path = self._failure_path(key)
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        if not isinstance(data, dict):
            return None
        log_path = data.get("log")
        return FailureRecord(
            key=key,
            kind=str(data.get("kind", "build_failed")),
            reason=str(data.get("reason", "")),
            log=Path(log_path) if log_path else None,
            created=str(data.get("created", "")),
            commit=str(data.get("commit", "")),
            recipe=str(data.get("recipe", "")),
        )

    def record_failure(
        self,
        key: str,
        kind: str,
        reason: str,
        log: Path | None,
        *,
        commit: str = "",
        recipe: str = "",
        meta: Mapping[str, Any] | None = None,
    ) -> None:
        """Record a failed build (with a copy of its log) so that it is not rebuilt."""
        path = self._failure_path(key)
        kept_log: Path | None = None
        if log is not None and Path(log).is_file():
            kept_log = self.failures_dir / f"{key}.log"
            tmp_log = self.failures_dir / f".{key}.log.{os.getpid()}"
            shutil.copyfile(log, tmp_log)
            os.replace(tmp_log, kept_log)
        data = {
            **(dict(meta) if meta else {}),
            "key": key,
            "kind": str(getattr(kind, "value", kind)),
            "reason": reason,
            "log": str(kept_log) if kept_log else None,
            "original_log": str(log) if log else None,
            "created": _now_iso(),
            "commit": commit,
            "recipe": recipe,
        }
        tmp = self.failures_dir / f".{key}.json.{os.getpid()}"
        tmp.write_text(json.dumps(data, indent=1, sort_keys=True), encoding="utf-8")
        with self.lock():
            os.replace(tmp, path)

    def forget_failure(self, key: str) -> None:
        with self.lock():
            self._forget_failure_locked(key)

    def _forget_failure_locked(self, key: str) -> None:
        self._failure_path(key).unlink(missing_ok=True)
        (self.failures_dir / f"{key}.log").unlink(missing_ok=True)

    def failures(self) -> list[FailureRecord]:
        out = []
        for p in sorted(self.failures_dir.glob("*.json")):
            rec = self.failure(p.stem)
            if rec is not None:
                out.append(rec)
        return out

    def forget_failures(self, commit: str | None = None) -> list[str]:
        """Forget every recorded failure (or those of one commit prefix); returns their keys."""
        gone = []
        for rec in self.failures():
            if commit is None or rec.commit.lower().startswith(commit.lower()):
                self.forget_failure(rec.key)
                gone.append(rec.key)
        return gone
