"""Install a published PyTorch nightly as a step's artifact (`tritonbisect torch --wheel-index`).

The wheel is fetched (cache keyed by sha256), installed over the env's PyTorch, and its
Triton comes from one of two places: the Triton pinned at the commit, built by the torch
recipe from --triton-dir (already installed when this runs), or else the exact Triton the
wheel's METADATA requires (`pytorch-triton==3.5.0+git<sha>`), from the same indexes, fetched
into the same download cache and installed as the env's only Triton (env.install_triton).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from tritonbisect.builds.env import TargetEnv
from tritonbisect.builds.published import install_published
from tritonbisect.builds.recipes import PrepareResult, StepContext
from tritonbisect.builds.wheel_fetch import Fetched, FetchError, fetch_wheel
from tritonbisect.builds.wheel_index import (
    WheelIndexError,
    compatible,
    list_wheels,
    platform_of,
    version_key,
)
from tritonbisect.builds.wheel_version import triton_requirement


def install_pinned_triton(requirement: str, index_urls: Sequence[str], env: TargetEnv, cache_root: Path,
                          log: Path) -> tuple[bool, str]:
    """`name==version` (a nightly's pin) from the indexes, for this env's Python and platform."""
    name, _, version = requirement.partition("==")
    try:
        files = [f for f in list_wheels(name, index_urls=index_urls)
                 if version_key(f.version) == version_key(version)]
        files = compatible(files, platform_of(str(env.python)))
    except (WheelIndexError, ValueError) as exc:
        return False, f"{requirement}: {exc}"
    if not files:
        return False, f"{requirement}: no wheel of it for this Python and platform on {', '.join(index_urls)}"
    try:
        got = fetch_wheel(files[0].url, files[0].filename, files[0].sha256, cache_root)
    except FetchError as exc:
        return False, f"{requirement}: {exc}"
    return env.install_triton(got.path, None, log=log, digest=got.sha256)


def install_published_torch(entry: Mapping[str, Any], ctx: StepContext, env: TargetEnv, cache_root: Path, *,
                            start: float, index_urls: Sequence[str] | None) -> PrepareResult:
    """entry: {filename, url, sha256, version, package}. `index_urls`: where the wheel's pinned
    Triton comes from (None when the recipe installed the pinned Triton itself)."""
    def install(got: Fetched, log: Path) -> tuple[bool, str, dict[str, Any]]:
        ok, how = env.install_wheel(got.path, log=log, digest=got.sha256)
        triton = triton_requirement(got.path) if index_urls else None
        if not ok or not triton:
            return ok, how, {"triton": None}
        ok, triton_how = install_pinned_triton(triton, list(index_urls or []), env, cache_root, log)
        if not ok:
            return False, f"{triton} (pinned by {entry['filename']}): {triton_how}", {"triton": triton}
        return True, f"{how}; {triton}: {triton_how}", {"triton": triton}

    return install_published(entry, None, ctx, lambda: env, cache_root, install=install, start=start)
