"""Install a published PyTorch nightly as a step's artifact (`tritonbisect torch --wheel-index`).

The wheel is fetched (cache keyed by sha256), installed over the env's PyTorch, and its
Triton comes from one of two places: the Triton pinned at the commit, built by the torch
recipe from --triton-dir (already installed when this runs), or else the exact Triton the
wheel's METADATA requires (`pytorch-triton==3.5.0+git<sha>`), from the same indexes.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from tritonbisect.build.env import TargetEnv
from tritonbisect.build.published import install_published
from tritonbisect.build.recipes import PrepareResult, StepContext
from tritonbisect.build.wheel_fetch import Fetched
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
    name = f"{entry.get('package') or 'torch'} {entry['version']}"

    def install(got: Fetched, log: Path) -> tuple[bool, str, dict[str, Any]]:
        ok, how = env.install_wheel(got.path, log=log, digest=got.sha256)
        triton = triton_requirement(got.path) if index_urls else None
        if not ok or not triton:
            return ok, how or name, {"triton": None}
        rc, tail = env.pip(["install", "--no-deps", *_index_args(list(index_urls or [])), triton], log=log)
        if rc != 0:
            return False, f"{triton} (pinned by {entry['filename']}): {tail.strip()[-300:]}", {"triton": triton}
        return True, f"{name}, with {triton} from the index", {"triton": triton}

    return install_published(entry, None, ctx, lambda: env, cache_root, install=install, start=start)
