"""The installs-only first phase of `tritonbisect triton|torch --wheel-index`: the commits of
the range that have a published nightly, tested before anything is built from source."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from tritonbisect.core.errors import InputError
from tritonbisect.domains.wheels.target_python import target_platform, target_python

if TYPE_CHECKING:  # pragma: no cover
    from tritonbisect.session.settings import BisectSettings


def nightly_phases(bisector: Any, source_phase: Any, settings: BisectSettings, index_urls: tuple[str, ...],
                   package: str, mode: str) -> list[Any]:
    """The phases of `tritonbisect triton|torch --wheel-index`: the installs-only "nightlies"
    phase (the source phase follows inside its bracket), or the source phase alone when
    the index has no nightly inside good..bad."""
    from dataclasses import replace

    from tritonbisect.builds.index_config import activate, read_config, strip_auth
    from tritonbisect.builds.wheel_index import compatible, list_wheels, normalize_name
    from tritonbisect.domains.wheels.bisector import list_or_abort
    from tritonbisect.domains.wheels.nightlies import nightly_commits, nightly_phase
    from tritonbisect.session.phase_run import candidates_of

    target = target_python(bisector.build.python, Path(bisector.build.venv) if bisector.build.venv else None)
    activate(read_config(target, index_urls=index_urls))
    files = list_or_abort(list_wheels, normalize_name(package), index_urls=index_urls)
    files = compatible(files, target_platform(target))
    order = list(candidates_of(bisector.history, bisector.good, bisector.bad,
                               first_parent=settings.search.first_parent).order)
    recipe = source_phase.recipe_name
    read = ""
    if recipe == "torch":
        wheels, read = _torch_nightlies(bisector, files, order, settings, package)
    else:
        wheels = nightly_commits(files, order, bisector.good)
    for entry in wheels.values():
        entry["package"] = package
    config = {**source_phase.recipe_config, "wheels": wheels, "wheel_index": [strip_auth(u) for u in index_urls]}
    phase = nightly_phase(source_phase.repo, bisector.good, bisector.bad, order, wheels, config,
                          first_parent=settings.search.first_parent, history=bisector.history,
                          recipe_name=recipe)
    what = "+git<sha> or git_version" if recipe == "torch" else "+git<sha>"
    if phase is None and mode == "only":
        raise InputError(f"--wheels only: no {package} nightly ({what}) on the index is a "
                         f"commit inside {bisector.good[:12]}..{bisector.bad[:12]}; nothing to "
                         "install (use --wheels auto to build from source)")
    if read:
        click.echo(read, err=True)
    if phase is None:
        click.echo(f"--wheel-index: no {package} nightly of a commit inside the range; "
                   "building every step from source", err=True)
        return [replace(source_phase, recipe_config=config)]
    click.echo(f"--wheel-index: {len(phase.candidates or []) - 1} of {len(order)} commits have a "
               f"nightly; testing those first (installs only)", err=True)
    return [phase]


def _torch_nightlies(bisector: Any, files: list, order: list[str], settings: BisectSettings,
                     package: str) -> tuple[dict[str, dict[str, Any]], str]:
    """PyTorch nightlies by the commit in their `version.py`: one per date between good's and
    bad's commit dates is downloaded (into the artifact cache the installs use) and read."""
    from datetime import datetime, timezone

    from tritonbisect.builds.store import open_cache
    from tritonbisect.builds.wheel_fetch import FetchError, fetch_wheel
    from tritonbisect.builds.wheel_version import git_version_of_wheel
    from tritonbisect.domains.wheels.bisector import IndexUnreachable
    from tritonbisect.domains.wheels.nightlies import torch_nightly_commits

    def day(commit: str):
        return datetime.fromisoformat(bisector.history.committed_at(commit)).astimezone(timezone.utc).date()

    cache_root = Path(open_cache(settings.executor.cache_dir, workdir=Path(settings.workdir)).root)

    def read_commit(f) -> tuple[str | None, str | None]:
        try:
            got = fetch_wheel(f.url, f.filename, f.sha256, cache_root)
        except FetchError as exc:
            raise IndexUnreachable(f"{package} {f.version}: {exc}; nothing was tested") from None
        return git_version_of_wheel(got.path), got.sha256

    found = torch_nightly_commits(files, order, bisector.good, (day(bisector.good), day(bisector.bad)),
                                  read_commit, lambda shas: bisector.history.subjects(shas, known_only=True))
    if not found.read:
        return found.wheels, ""
    left = [f"{n} {why}" for n, why in ((found.no_commit, "name no commit (no git_version in version.py)"),
                                        (found.elsewhere, "name a commit outside the range")) if n]
    note = (f"--wheel-index: read the commit of {found.read} dated {package} nightlies (downloads kept in "
            "the artifact cache)" + (f"; {', '.join(left)}" if left else ""))
    return found.wheels, note
