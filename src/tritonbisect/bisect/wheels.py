"""`tritonbisect wheels`: bisect published versions (installs only, no builds).

The versions between the endpoints become a *version ladder*: a git repository in the
workdir with one commit per version, oldest first, each holding WHEEL.json (the file to
install). Its commits are deterministic (fixed author and dates), so the same versions give
the same ladder, and a session over it is an ordinary session: the engine's search, endpoint
checks, --repeat, journal, resume and report apply as they are. The "wheel" recipe
(build/wheel_recipe.py) turns a ladder commit into an installed wheel.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tritonbisect.bisect.phases import PhaseSpec
from tritonbisect.build.wheel_index import (
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
from tritonbisect.errors import AbortError, InputError

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


def choose_rungs(files: Sequence[WheelFile], plat: Platform, good: str, bad: str, *,
                 package: str, pre: bool) -> list[Rung]:
    """One installable wheel per version from `good` to `bad` (inclusive), oldest first.

    InputError (one line, exit 2) when an endpoint is not a version of the package, or has
    no wheel for this Python and platform; the line names the nearest versions that do."""
    every = by_version(files)
    usable = by_version(compatible(files, plat))
    for name, v in (("--good", good), ("--bad", bad)):
        try:
            version_key(v)
        except ValueError:
            raise InputError(f"{name} {v}: not a version (e.g. 3.5.0)") from None
        if v not in every:
            near = ", ".join(nearest(v, list(every))) or "none"
            raise InputError(f"{name} {v}: {package} has no such version on the index; "
                             f"nearest: {near}")
        if v not in usable:
            near = ", ".join(nearest(v, list(usable))) or "none"
            raise InputError(f"{name} {v}: {package} {v} has no wheel for {plat.describe()}; "
                             f"nearest with one: {near}")
    if version_key(good) >= version_key(bad):
        raise InputError(f"--good {good} must be an older version than --bad {bad}")
    lo, hi = version_key(good), version_key(bad)
    chosen = [v for v in sorted_versions(usable)
              if lo <= version_key(v) <= hi and (pre or v in (good, bad) or not is_prerelease(v))]
    return [Rung(v, _best(usable[v])) for v in chosen]


def _best(files: Sequence[WheelFile]) -> WheelFile:
    """A platform wheel before a pure one, one with a digest before one without."""
    return sorted(files, key=lambda f: (f.sha256 is None, all(t[2] == "any" for t in f.tags),
                                        f.filename))[0]


def _git(repo: Path, *args: str, input_: str | None = None, env: Mapping[str, str] | None = None) -> str:
    proc = subprocess.run(["git", "-C", str(repo), *args], input=input_, capture_output=True,
                          text=True, env={**os.environ, **_GIT_ENV, **(env or {})})
    if proc.returncode != 0:
        raise InputError(f"git {' '.join(args[:2])} in {repo} failed: {proc.stderr.strip()[-200:]}")
    return proc.stdout.strip()


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
    shas: list[str] = []
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
