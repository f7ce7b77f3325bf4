"""`tritonbisect wheels`: bisect published versions (installs only, no builds).

The versions between the endpoints become a *version ladder*: a git repository in the
workdir with one commit per version, oldest first, each holding WHEEL.json (the file to
install). Its commits are deterministic (fixed author and dates), so the same versions give
the same ladder, and a session over it is an ordinary session: the engine's search, endpoint
checks, --repeat, journal, resume and report apply as they are. The "wheel" recipe
(domains/wheels/recipe.py) turns a ladder commit into an installed wheel.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tritonbisect.builds.wheel_index import (
    Platform,
    WheelFile,
    WheelIndexError,
    by_version,
    compatible,
    is_prerelease,
    nearest,
    sorted_versions,
    version_key,
)
from tritonbisect.core.errors import AbortError, InputError
from tritonbisect.core.gitrun import git, run_git
from tritonbisect.session.phases import PhaseSpec

LADDER_FILE = "WHEEL.json"
_GIT_ENV = {
    "GIT_AUTHOR_NAME": "tritonbisect", "GIT_AUTHOR_EMAIL": "tritonbisect@localhost",
    "GIT_COMMITTER_NAME": "tritonbisect", "GIT_COMMITTER_EMAIL": "tritonbisect@localhost",
    "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": os.devnull,
}


class IndexUnreachable(AbortError):
    """The index could not be read before the session began: nothing was tested (exit 4)."""


@dataclass(frozen=True)
class Rung:
    version: str
    wheel: WheelFile


def _check_version(name: str, v: str, every: dict[str, list[WheelFile]], usable: dict[str, list[WheelFile]],
                   plat: Platform, package: str) -> None:
    try:
        version_key(v)
    except ValueError:
        raise InputError(f"{name} {v}: not a version (e.g. 3.5.0)") from None
    v = _spelled(v, every)
    if v not in every:
        near = ", ".join(nearest(v, list(every))) or "none"
        raise InputError(f"{name} {v}: {package} has no such version on the index; "
                         f"nearest: {near}")
    if v not in usable:
        near = ", ".join(nearest(v, list(usable))) or "none"
        tags = sorted({t for f in every[v] for t in f.tags})
        raise InputError(f"{name} {v}: {package} {v} has no wheel for {plat.describe()} (only "
                         f"{', '.join(tags[:4])}{' …' if len(tags) > 4 else ''}); nearest with one: {near}")


def choose_one(files: Sequence[WheelFile], plat: Platform, version: str, *, package: str, option: str) -> Rung:
    """The installable wheel of one version (InputError, one line, as choose_rungs says it)."""
    every = by_version(files)
    usable = by_version(compatible(files, plat))
    _check_version(option, version, every, usable, plat, package)
    version = _spelled(version, every)
    return Rung(version, _best(usable[version], plat))


def choose_rungs(files: Sequence[WheelFile], plat: Platform, good: str, bad: str, *,
                 package: str, pre: bool, order: Sequence[str] | None = None) -> list[Rung]:
    """One installable wheel per version from `good` to `bad` (inclusive), oldest first.
    `order`: the versions oldest first when PEP 440 cannot tell (nightlies of one release
    ordered by the checkout's history, ancestry_order); else PEP 440 order.

    InputError (one line, exit 2) when an endpoint is not a version of the package, or has
    no wheel for this Python and platform; the line names the nearest versions that do."""
    every = by_version(files)
    usable = by_version(compatible(files, plat))
    for name, v in (("--good", good), ("--bad", bad)):
        _check_version(name, v, every, usable, plat, package)
    good, bad = _spelled(good, every), _spelled(bad, every)
    ranked = [v for v in (order or []) if v in usable]
    if good in ranked and bad in ranked:
        lo, hi = ranked.index(good), ranked.index(bad)
        if lo >= hi:
            raise InputError(f"--good {good} must be an older build than --bad {bad} (by the checkout's history)")
        inside = ranked[lo:hi + 1]
    else:
        if version_key(good) >= version_key(bad):
            raise InputError(f"--good {good} must be an older version than --bad {bad}")
        lo_v, hi_v = version_key(good), version_key(bad)
        inside = [v for v in sorted_versions(usable) if lo_v <= version_key(v) <= hi_v]
    chosen = [v for v in inside if pre or v in (good, bad) or not is_prerelease(v)]
    return [Rung(v, _best(usable[v], plat)) for v in chosen]


def _spelled(version: str, every: Mapping[str, Sequence[WheelFile]]) -> str:
    """The index's spelling of `version` (3.2 -> 3.2.0 when that is what is published)."""
    try:
        want = version_key(version)
    except ValueError:
        return version
    return next((v for v in every if version_key(v) == want), version)


def _best(files: Sequence[WheelFile], plat: Platform) -> WheelFile:
    """The wheel whose tag the interpreter prefers most (a manylinux wheel before a pure
    one, as pip picks), one with a digest before one without."""
    return sorted(files, key=lambda f: (plat.rank(f) if plat.rank(f) is not None else 1 << 30,
                                        f.sha256 is None, f.filename))[0]


def ancestry_order(versions: Sequence[str], checkout: Path) -> tuple[list[str] | None, str]:
    """The versions that name a commit (+git<sha>, +<sha10>) ordered by the checkout's
    history (a topological order), with the commit-less ones by PEP 440 around them; and a
    note when that was not possible. None: use PEP 440 order."""
    from tritonbisect.domains.wheels.nightlies import commit_label

    labelled = {v: commit_label(v) for v in versions}
    named = {v: lab for v, lab in labelled.items() if lab}
    if not named:
        return None, ""
    shas: dict[str, str] = {}
    for v, lab in named.items():
        proc = run_git(["rev-parse", "--verify", "-q", f"{lab}^{{commit}}"], cwd=Path(checkout))
        if proc.returncode == 0:
            shas[v] = proc.stdout.strip()
    if len(shas) < len(named):
        missing = len(named) - len(shas)
        return None, (f"{missing} of {len(named)} nightlies name a commit that {checkout} does not have "
                      "(git fetch there?); ordered by version instead")
    commits = sorted(set(shas.values()))
    base = run_git(["merge-base", "--octopus", *commits], cwd=Path(checkout)).stdout.strip()
    walk = run_git(["rev-list", "--topo-order", "--reverse", *commits, *(["--not", base] if base else [])],
                   cwd=Path(checkout)).stdout.split()
    pos = {c: i + 1 for i, c in enumerate(walk)}
    if base:
        pos[base] = 0
    def key(v: str) -> tuple:
        if v in shas:
            return (version_key(v).release, 1, pos.get(shas[v], -1))
        return (version_key(v).release, 0 if version_key(v).is_prerelease else 2, version_key(v))
    return sorted(versions, key=key), ""


def _git(repo: Path, *args: str, input_: str | None = None, env: Mapping[str, str] | None = None) -> str:
    return git(args, cwd=Path(repo), input=input_, extra_env={**_GIT_ENV, **(env or {})}, where=True).strip()


def make_ladder(workdir: Path, package: str, rungs: Sequence[Rung]) -> tuple[Path, list[str]]:
    """The ladder repository for these rungs (made once, then reused) and its commits."""
    payload = [dict(package=package, version=r.version, **_wheel_fields(r.wheel)) for r in rungs]
    digest = hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()[:16]
    repo = Path(workdir) / "wheel-ladders" / f"{package}-{digest}"
    if (repo / ".git").is_dir():
        shas = _git(repo, "rev-list", "--reverse", "HEAD").split()
        if len(shas) == len(rungs):
            return repo, shas
    repo.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{package}-", dir=repo.parent))
    _git(tmp, "init", "-q", "-b", "main")
    shas = []
    for i, entry in enumerate(payload):
        blob = _git(tmp, "hash-object", "-w", "--stdin",
                    input_=json.dumps(entry, indent=1, sort_keys=True) + "\n")
        tree = _git(tmp, "mktree", input_=f"100644 blob {blob}\t{LADDER_FILE}\n")
        when = f"{1700000000 + i * 86400} +0000"
        parents = ["-p", shas[-1]] if shas else []
        sha = _git(tmp, "commit-tree", tree, *parents, "-m", f"{package} {entry['version']}",
                   env={"GIT_AUTHOR_DATE": when, "GIT_COMMITTER_DATE": when})
        shas.append(sha)
    _git(tmp, "update-ref", "refs/heads/main", shas[-1])
    _git(tmp, "reset", "-q", "--hard", shas[-1])
    if repo.exists():
        shutil.rmtree(repo, ignore_errors=True)
    try:
        os.replace(tmp, repo)
    except OSError:  # made meanwhile by another session: use that one
        shutil.rmtree(tmp, ignore_errors=True)
    return repo, shas


def _wheel_fields(w: WheelFile) -> dict[str, Any]:
    return {"filename": w.filename, "url": w.url, "sha256": w.sha256}


@dataclass
class WheelsBisector:
    """The phase over a ladder of published versions."""

    package: str
    rungs: list[Rung]
    ladder: Path
    shas: list[str]
    recipe_config: dict = field(default_factory=dict)

    def phase(self) -> PhaseSpec:
        return PhaseSpec(
            name="wheels", repo=self.ladder, good=self.shas[0], bad=self.shas[-1],
            recipe_name="wheel", recipe_config=self.recipe_config,
            candidates=list(self.shas[1:]),
        )

    def versions(self) -> dict[str, str]:
        return {sha: r.version for sha, r in zip(self.shas, self.rungs, strict=True)}


def ladder_versions(repo: Path) -> dict[str, str]:
    """{commit: version} of a ladder (read back from its commits, e.g. on resume)."""
    out = {}
    for line in _git(repo, "log", "--format=%H %s").splitlines():
        sha, _, subject = line.partition(" ")
        out[sha] = subject.rsplit(" ", 1)[-1]
    return out


def list_or_abort(fn, *args, **kwargs) -> list[WheelFile]:
    try:
        return fn(*args, **kwargs)
    except WheelIndexError as exc:
        raise IndexUnreachable(f"{exc}; nothing was tested (check the URL or the network)") from None
