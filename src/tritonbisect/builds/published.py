"""Install a published wheel as a step's artifact: fetch (cache keyed by sha256), purge the
other Triton distributions, install, verify by the wheel's files. Used by the "wheel" recipe
(versions) and by the "triton" recipe for commits that have a nightly (`+git<sha>`)."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from tritonbisect.builds.env import EnvError, TargetEnv
from tritonbisect.builds.recipes import PrepareResult, StepContext
from tritonbisect.builds.wheel_fetch import Fetched, FetchError, fetch_wheel
from tritonbisect.core.outcome import Kind

STEP_FILE = "wheel-step.json"  # per step: what was downloaded and installed (for reports)


# (the fetched wheel, the install log) -> (installed?, how, extra fields for the step file)
Installer = Callable[[Fetched, Path], "tuple[bool, str, dict[str, Any]]"]


def install_published(entry: Mapping[str, Any], commit: str | None, ctx: StepContext,
                      env_of: Any, cache_root: Path, *, install: Installer | None = None,
                      start: float | None = None) -> PrepareResult:
    """entry: {filename, url, sha256, version[, package]}; commit: the commit the wheel must
    come from (a nightly's +git<sha> is checked against it), None for a release.
    `env_of`: a callable giving the step's TargetEnv (made only when needed). `install`:
    how to install the fetched wheel (default: as the env's only Triton, install_triton)."""
    start = time.monotonic() if start is None else start
    ctx.log_dir.mkdir(parents=True, exist_ok=True)
    log = ctx.log_dir / "install.log"
    name = entry.get("package") or "triton"
    version = str(entry["version"])

    def result(kind: Kind, reason: str) -> PrepareResult:
        # nothing is compiled: cached=True keeps installs out of the build counters
        return PrepareResult(kind, reason, cached=True, seconds=time.monotonic() - start,
                             log=log if log.exists() else None, published=True)

    try:
        got = fetch_wheel(entry["url"], entry["filename"], entry.get("sha256"), cache_root)
    except FetchError as exc:
        return result(Kind.INFRA, f"{name} {version}: {exc}")
    extra: dict[str, Any] = {}
    began = time.monotonic()
    try:
        if install is None:
            env: TargetEnv = env_of()
            extra["installer"] = env.installer()[0]
            ok, how = env.install_triton(got.path, commit, log=log, digest=got.sha256)
        else:
            ok, how, extra = install(got, log)
    except EnvError as exc:
        ok, how = False, str(exc)
    extra["install_s"] = round(time.monotonic() - began, 2)
    (ctx.log_dir / STEP_FILE).write_text(json.dumps({
        "version": version, "filename": entry["filename"], "sha256": got.sha256,
        "downloaded": got.downloaded, "bytes": got.nbytes,
        "installed": ok and "already installed" not in how, **extra,
    }), encoding="utf-8")
    if not ok:
        return result(Kind.INFRA, f"install of {entry['filename']}: {how}")
    source = f"downloaded {got.nbytes / 1e6:.1f} MB" if got.downloaded else "from the download cache"
    return result(Kind.PASS, f"published wheel: {how}: {source}")
