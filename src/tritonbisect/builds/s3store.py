"""An artifact cache in an S3-compatible object store (`--cache-url s3://BUCKET/PREFIX`).

It outlives sessions and nodes: any node, any later session (or a second driver at the same
time) finds what was built. The endpoint and credentials are boto3's usual ones
(`AWS_ENDPOINT_URL` for MinIO, Ceph, R2 and the like; `AWS_ACCESS_KEY_ID`, profiles, instance
roles); nothing of them is kept in the session, which only records the URL.

Objects under PREFIX:

    entries/<key>.tar       one cache entry as `cache_transfer.pack` makes it (artifact + meta)
    failures/<key>.json     a failed build (its record; the log beside it as <key>.log)
    tmp/<random>            uploads in progress

Content addressing is the directory cache's (`ArtifactCache.key`), and so is "stage, then
publish": an entry is uploaded under tmp/ and only then copied to its key, so a reader sees
a whole entry or none, and two drivers publishing the same key at once leave one whole
entry. Reads go through a node-local directory cache (`local`), which verifies every file
against the digests the builder recorded.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from tritonbisect.builds.cache import ArtifactCache, FailureRecord
from tritonbisect.builds.cache_transfer import TransferError, entry_blob, unpack
from tritonbisect.core.errors import InputError

INSTALL_HINT = "--cache-url s3://... needs boto3, which is not installed here: pip install 'tritonbisect[s3]'"


def parse_url(url: str) -> tuple[str, str]:
    """s3://bucket/some/prefix -> ("bucket", "some/prefix/")."""
    rest = url.split("://", 1)[1]
    bucket, _sep, prefix = rest.partition("/")
    if not bucket:
        raise InputError(f"--cache-url {url}: no bucket; give s3://BUCKET/PREFIX")
    prefix = prefix.strip("/")
    return bucket, (prefix + "/") if prefix else ""


class S3Store:
    """The ArtifactStore of an S3 location (see the module docstring)."""

    @staticmethod
    def key(repo_id: str, commit: str, recipe: str, config: Mapping, python_abi: str,
            toolchain: str) -> str:
        return ArtifactCache.key(repo_id, commit, recipe, config, python_abi, toolchain)

    def __init__(self, url: str, workdir: Path, client: Any = None) -> None:
        import hashlib

        self.url = url
        self.bucket, self.prefix = parse_url(url)
        if client is None:
            try:
                import boto3
            except ImportError:
                raise InputError(INSTALL_HINT) from None
            client = boto3.client("s3")
        self.s3 = client
        local = Path(workdir) / "cache-s3" / hashlib.sha256(url.encode()).hexdigest()[:16]
        self.local = ArtifactCache(local)
        self.root = self.local.root

    # --- objects ------------------------------------------------------------------------

    def _read(self, name: str) -> bytes | None:
        from botocore.exceptions import ClientError

        try:
            return bytes(self.s3.get_object(Bucket=self.bucket, Key=self.prefix + name)["Body"].read())
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code") in ("NoSuchKey", "404", "NotFound"):
                return None
            raise

    def _exists(self, name: str) -> bool:
        from botocore.exceptions import ClientError

        try:
            self.s3.head_object(Bucket=self.bucket, Key=self.prefix + name)
        except ClientError:
            return False
        return True

    def _publish(self, name: str, data: bytes) -> None:
        """Upload under tmp/, then copy to `name`: readers never see a part of it."""
        staged = f"{self.prefix}tmp/{uuid.uuid4().hex}"
        self.s3.put_object(Bucket=self.bucket, Key=staged, Body=data)
        try:
            self.s3.copy_object(Bucket=self.bucket, Key=self.prefix + name,
                                CopySource={"Bucket": self.bucket, "Key": staged})
        finally:
            self.s3.delete_object(Bucket=self.bucket, Key=staged)

    # --- the ArtifactStore interface ------------------------------------------------------

    def get(self, key: str) -> Path | None:
        hit = self.local.get(key)
        if hit is not None:
            return hit
        data = self._read(f"entries/{key}.tar")
        if data is None:
            return None
        try:
            unpack(self.local, data)
        except (TransferError, OSError, ValueError, KeyError):
            return None  # a damaged object is a miss: the step rebuilds and publishes again
        return self.local.get(key)

    def put(self, key: str, src: Path, meta: Mapping[str, Any], *, move: bool = False) -> Path:
        stored = self.local.put(key, src, meta, move=move)
        if not self._exists(f"entries/{key}.tar"):
            blob = entry_blob(self.local, key)
            if blob is not None:
                self._publish(f"entries/{key}.tar", blob)
        return stored

    def staging_dir(self, prefix: str = "stage-") -> Path:
        return self.local.staging_dir(prefix)

    def recorded_sha256(self, artifact: Path) -> str | None:
        return self.local.recorded_sha256(artifact)

    def failure(self, key: str) -> FailureRecord | None:
        found = self.local.failure(key)
        if found is not None:
            return found
        data = self._read(f"failures/{key}.json")
        if data is None:
            return None
        rec = json.loads(data)
        log = self._read(f"failures/{key}.log")
        log_path = None
        if log is not None:
            log_path = self.local.staging_dir("failure-") / "build.log"
            log_path.write_bytes(log)
        self.local.record_failure(key, rec.get("kind", "build_failed"), rec.get("reason", ""),
                                  log_path, commit=rec.get("commit", ""),
                                  recipe=rec.get("recipe", ""))
        return self.local.failure(key)

    def record_failure(self, key: str, kind: str, reason: str, log: Path | None, *,
                       commit: str = "", recipe: str = "",
                       meta: Mapping[str, Any] | None = None) -> None:
        self.local.record_failure(key, kind, reason, log, commit=commit, recipe=recipe, meta=meta)
        if log is not None and Path(log).is_file():
            self._publish(f"failures/{key}.log", Path(log).read_bytes())
        record = {"kind": kind, "reason": reason, "commit": commit, "recipe": recipe}
        self._publish(f"failures/{key}.json", json.dumps(record, sort_keys=True).encode())

    def forget_failures(self, commit: str | None = None) -> list[str]:
        forgotten = set(self.local.forget_failures(commit))
        paginator = self.s3.get_paginator("list_objects_v2")
        for page in paginator.paginate(Bucket=self.bucket, Prefix=self.prefix + "failures/"):
            for obj in page.get("Contents", []):
                name = obj["Key"][len(self.prefix) + len("failures/"):]
                if not name.endswith(".json"):
                    continue
                key = name[:-len(".json")]
                if commit:
                    rec = json.loads(self._read(f"failures/{name}") or b"{}")
                    if not str(rec.get("commit", "")).startswith(commit):
                        continue
                for suffix in (".json", ".log"):
                    self.s3.delete_object(Bucket=self.bucket, Key=f"{self.prefix}failures/{key}{suffix}")
                forgotten.add(key)
        return sorted(forgotten)


def open_s3(location: str, workdir: Path) -> S3Store:
    return S3Store(location, workdir)
