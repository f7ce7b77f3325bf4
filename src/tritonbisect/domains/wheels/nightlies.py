"""Nightlies as free builds inside `tritonbisect triton` (--wheel-index, --wheels).

A published wheel whose version carries `+git<sha>` is a prebuilt commit. When the index has
some inside good..bad, the session first runs a "nightlies" phase over those commits only
(installs, no builds), ordered by their place in the checkout's history (PEP 440 sorts
local labels as text, not by date); then, with --wheels auto, a "triton" phase builds from
source only inside the bracket it leaves: the last good nightly (or good) .. the first bad
nightly (or bad). Both phases use the "triton" recipe, whose config maps the commits that
have a wheel to it (builds/published.py, install_published).

`tritonbisect torch --wheel-index` runs the same two phases with the "torch" recipe. PyTorch
nightlies (`2.10.0.dev20251101+cpu`) name no commit in their version: the commit is the
`git_version` in the wheel's `torch/version.py` (a `nightly` branch commit is taken to the
main commit its subject names), read from the (cached) download of one nightly per date
between good and bad (torch_nightly_commits).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import date, timedelta
from pathlib import Path
from typing import Any

import click

from tritonbisect.builds.install_check import git_label
from tritonbisect.builds.wheel_index import WheelFile
from tritonbisect.builds.wheel_version import dev_date
from tritonbisect.core.errors import InputError
from tritonbisect.reports.published_steps import NIGHTLIES_PHASE as PHASE
from tritonbisect.reports.published_steps import wheel_version
from tritonbisect.session.phases import PhaseSpec

MODES = ("auto", "only", "off")


_BARE_HEX = re.compile(r"\+([0-9a-f]{7,40})$")  # older pytorch-triton: 3.0.0+45fff310c8


def commit_label(version: str) -> str | None:
    """The commit prefix a nightly's version names: `+git<sha>` (also `+abc.git<sha>`), or
    a bare hex local label of 7+ digits as older `pytorch-triton` nightlies carry."""
    label = git_label(version)
    if label:
        return label
    m = _BARE_HEX.search(version.lower())
    return m.group(1) if m else None


def nightly_commits(files: Sequence[WheelFile], order: Sequence[str], good: str) -> dict[str, dict[str, Any]]:
    """{commit: wheel entry} for the wheels whose +git<sha> names good or a commit of
    `order` (good..bad, oldest first); wheels of commits outside the range are ignored."""
    inside = {*order, good}
    out: dict[str, dict[str, Any]] = {}
    for f in files:
        label = commit_label(f.version)
        if not label:
            continue
        sha = next((s for s in inside if s.startswith(label)), None)
        if sha is None:
            continue
        out.setdefault(sha, {"filename": f.filename, "url": f.url, "sha256": f.sha256,
                             "version": f.version})
    return out


# The PyTorch `nightly` branch: one commit per day whose subject names the main commit it was
# cut from. A wheel's git_version may be that commit instead of the main one.
_NIGHTLY_SUBJECT = re.compile(r"nightly release \(([0-9a-f]{7,40})\)")


@dataclass
class TorchNightlies:
    """What reading the dated nightlies found: {commit: wheel entry}, and why the others
    were left out (so "no nightly inside the range" can say which it was)."""

    wheels: dict[str, dict[str, Any]] = field(default_factory=dict)
    read: int = 0  # wheels downloaded and read
    no_commit: int = 0  # their torch/version.py names no commit
    elsewhere: int = 0  # they name a commit outside good..bad (or unknown to the checkout)


def torch_nightly_commits(files: Sequence[WheelFile], order: Sequence[str], good: str,
                          window: tuple[date, date],
                          read_commit: Callable[[WheelFile], tuple[str | None, str | None]],
                          subjects: Callable[[list[str]], Mapping[str, str]] | None = None) -> TorchNightlies:
    """PyTorch nightlies by commit. A `+git<sha>` version names its commit; a dated dev
    version (`.devYYYYMMDD`) inside `window` (good's and bad's commit dates, a day of margin
    each side) is read once per date with `read_commit` (-> the wheel's git_version and its
    sha256); other versions are left alone, so only the nightlies that can lie in the range
    are fetched. A git_version on the `nightly` branch is taken to the main commit its subject
    names (`subjects`: {full sha: subject} of those that are commits here). InputError when one date has several builds
    (+cpu, +cu128...): one variant's index must be given. Newest date first."""
    inside = {*order, good}
    lo, hi = window[0] - timedelta(days=1), window[1] + timedelta(days=1)
    found = TorchNightlies()

    def entry(f: WheelFile, sha256: str | None) -> dict[str, Any]:
        return {"filename": f.filename, "url": f.url, "sha256": f.sha256 or sha256, "version": f.version}

    def place(label: str) -> str | None:
        return next((s for s in inside if s.startswith(label)), None)

    found.wheels.update(nightly_commits(files, order, good))  # +git<sha> versions name their commit
    dated: dict[date, list[WheelFile]] = {}
    for f in files:
        day = None if commit_label(f.version) else dev_date(f.version)
        if day is not None and lo <= day <= hi:
            dated.setdefault(day, []).append(f)
    unplaced: list[tuple[str, WheelFile, str | None]] = []
    for day in sorted(dated, reverse=True):
        variants = sorted({f.version.partition("+")[2] for f in dated[day]})
        if len(variants) > 1:
            raise InputError(f"the index holds {len(variants)} builds of each nightly ({', '.join('+' + v for v in variants)}); "
                             "give the index of one of them, e.g. https://download.pytorch.org/whl/nightly/cpu")
        f = dated[day][0]
        label, sha256 = read_commit(f)
        found.read += 1
        if not label:
            found.no_commit += 1
            continue
        sha = place(label)
        if sha is None:
            unplaced.append((label, f, sha256))
        else:
            found.wheels.setdefault(sha, entry(f, sha256))
    mains = _main_commits_of([label for label, _f, _d in unplaced], subjects)
    for label, f, sha256 in unplaced:
        sha = place(mains[label]) if label in mains else None
        if sha is None:
            found.elsewhere += 1
        else:
            found.wheels.setdefault(sha, entry(f, sha256))
    return found


def _main_commits_of(labels: list[str], subjects: Callable[[list[str]], Mapping[str, str]] | None) -> dict[str, str]:
    """{nightly-branch commit: the main commit its subject names}, for those that are such."""
    if not labels or subjects is None:
        return {}
    out = {}
    for sha, subject in subjects(labels).items():
        m = _NIGHTLY_SUBJECT.search(subject)
        label = next((lb for lb in labels if sha.startswith(lb)), None)
        if m and label:
            out[label] = m.group(1)
    return out


def ancestry_chain(history: Any, commits: Sequence[str], good: str, bad: str) -> list[str]:
    """The commits that lie on bad's first-parent line back to good (where nightlies are
    published from), oldest first: each is an ancestor of the next, so a linear search can
    place them. A nightly of a side branch is left out. Never sorted by version string:
    PEP 440 compares `+git<sha>` labels as text, not by date."""
    from tritonbisect.session.phase_run import candidates_of

    line = list(candidates_of(history, good, bad, first_parent=True).order)
    wanted = set(commits)
    return [c for c in line if c in wanted]


def nightly_phase(repo: Path, good: str, bad: str, order: Sequence[str],
                  wheels: Mapping[str, Any], recipe_config: dict,
                  first_parent: bool = False, history: Any = None,
                  recipe_name: str = "triton") -> PhaseSpec | None:
    """The installs-only phase over the nightly commits strictly inside good..bad (and bad),
    or None when there are none (nothing to gain). With `history`, only the nightlies on one
    line of descent from good to bad (ancestry_chain)."""
    inner = [c for c in order[:-1] if c in wheels]
    if history is not None:
        inner = ancestry_chain(history, inner, good, bad)
    if not inner:
        return None
    return PhaseSpec(name=PHASE, repo=repo, good=good, bad=bad, recipe_name=recipe_name,
                     recipe_config=recipe_config, first_parent=first_parent,
                     candidates=[*inner, bad])


def continue_after_nightlies(session: Any, last: Any) -> bool:
    """Append the source-build phase inside the bracket the nightlies left (--wheels auto)."""
    if last.status != "found" or not last.culprit:
        return False
    spec = last.spec
    cands = list(spec.candidates or [])
    i = cands.index(last.culprit)
    lo = cands[i - 1] if i > 0 else spec.good
    mode = session.extra.get("wheels_mode", "auto")
    click.echo(f"nightlies: last good {lo[:12]}, first bad {last.culprit[:12]} "
               f"({wheel_version(spec, lo)} .. {wheel_version(spec, last.culprit)})", err=True)
    if mode == "only":
        click.echo("--wheels only: not building inside the bracket; to do it: tritonbisect "
                   f"{spec.recipe_name} --good {lo[:12]} --bad {last.culprit[:12]} --test ...", err=True)
        return False
    session.append_phase(PhaseSpec(  # the source phase is named after its recipe: triton, torch
        name=spec.recipe_name, repo=spec.repo, good=lo, bad=last.culprit, recipe_name=spec.recipe_name,
        recipe_config=spec.recipe_config, first_parent=spec.first_parent))
    click.echo(f"building from source inside the bracket {lo[:12]}..{last.culprit[:12]}", err=True)
    return True
