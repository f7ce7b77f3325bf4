"""Install a published PyTorch nightly as a step's artifact (`tritonbisect torch --wheel-index`).

The wheel is fetched (cache keyed by sha256), installed over the env's PyTorch, and its
Triton comes from one of two places: the Triton pinned at the commit, built by the torch
recipe from --triton-dir (already installed when this runs), or else the exact Triton the
wheel's METADATA requires (`pytorch-triton==3.5.0+git<sha>`), from the same indexes.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from tritonbisect.bisect.outcome import Kind
from tritonbisect.build.env import EnvError, TargetEnv
from tritonbisect.build.published import STEP_FILE
from tritonbisect.build.recipes import PrepareResult, StepContext
from tritonbisect.build.wheel_fetch import FetchError, fetch_wheel
from tritonbisect.build.wheel_version import triton_requirement


def _index_args(urls: Sequence[str]) -> list[str]:
    args = ["--index-url", urls[0]]
    for url in urls[1:]:
        args += ["--extra-index-url", url]
    return args


def install_published_torch(entry: Mapping[str, Any], ctx: StepContext, env: TargetEnv, cache_root: Path, *,
                            start: float, index_urls: Sequence[str] | None) -> PrepareResult:
    """entry: {filename, url, sha256, version, package}. `index_urls`: where the wheel's pinned
    Triton comes from (None when the recipe installed the pinned Triton itself)."""
    log = ctx.log_dir / "install.log"
    version = str(entry["version"])
    name = entry.get("package") or "torch"

    def result(kind: Kind, reason: str) -> PrepareResult:
        # nothing is compiled here: cached=True keeps installs out of the build counters
        return PrepareResult(kind, reason, cached=True, seconds=time.monotonic() - start,
                             log=log if log.exists() else None, published=True)

    try:
        got = fetch_wheel(entry["url"], entry["filename"], entry.get("sha256"), cache_root)
    except FetchError as exc:
        return result(Kind.INFRA, f"{name} {version}: {exc}")
    try:
        ok, how = env.install_wheel(got.path, log=log, digest=got.sha256)
    except EnvError as exc:
        ok, how = False, str(exc)
    triton = triton_requirement(got.path) if index_urls else None
    if ok and triton:
        rc, tail = env.pip(["install", "--no-deps", *_index_args(list(index_urls or [])), triton], log=log)
        ok, how = rc == 0, how if rc == 0 else f"{triton} (pinned by {entry['filename']}): {tail.strip()[-300:]}"
    (ctx.log_dir / STEP_FILE).write_text(json.dumps({
        "version": version, "filename": entry["filename"], "sha256": got.sha256,
        "downloaded": got.downloaded, "bytes": got.nbytes, "installed": ok, "triton": triton,
    }), encoding="utf-8")
    if not ok:
        return result(Kind.INFRA, f"install of {entry['filename']}: {how}")
    source = f"downloaded {got.nbytes / 1e6:.1f} MB" if got.downloaded else "from the download cache"
    pinned = f", with {triton} from the index" if triton else ""
    return result(Kind.PASS, f"published wheel: {name} {version}{pinned}: {source}")
