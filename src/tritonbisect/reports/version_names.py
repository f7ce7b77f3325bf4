"""A `wheels` session in the words of its user: versions, installs and the index.

Such a session bisects a *version ladder*, a git repository the tool makes with one commit per
published version (domains/wheels/bisector.py). Its commits, author and dates are an internal
device: what `report`, `status` and `narrow` print of such a session names the versions
instead, counts installs and downloads instead of builds, and says which index the wheels
came from.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tritonbisect.session.names import name_commits

if TYPE_CHECKING:  # pragma: no cover
    from tritonbisect.session.session import Session

LADDER_RECIPE = "wheel"  # the recipe of a version ladder's phase
WHEEL_STEP = "wheel-step.json"  # what an install step wrote: version, downloaded, installed, bytes
_PATH_KEYS = frozenset({"dir", "log", "repo", "cwd"})  # the session's files: named as they are on disk


@dataclass
class VersionNames:
    """A ladder phase's commits as the versions they stand for."""

    package: str
    labels: dict[str, str]  # ladder commit -> version
    index: list[str] = field(default_factory=list)  # where the wheels came from, credentials redacted

    @classmethod
    def of(cls, session: Session, phase: Any = None) -> VersionNames | None:
        """The names of `phase` (default: the session's first) when it bisects versions."""
        phases = list(session.phases())
        phase = phase if phase is not None else (phases[0] if phases else None)
        if phase is None or phase.spec.recipe_name != LADDER_RECIPE:
            return None
        labels = (session.extra.get("labels") or {}).get(phase.spec.name) or {}
        if not labels:
            return None
        package = str((phase.spec.recipe_config or {}).get("package") or "triton")
        index = [str(line) for line in (session.extra.get("index") or [])]
        return cls(package, dict(labels), index)

    def name(self, commit: str | None) -> str:
        """`3.4.0` for a ladder commit; a commit that is not one stays a short sha."""
        commit = commit or ""
        if commit in self.labels:
            return self.labels[commit]
        for sha, version in self.labels.items():
            if len(commit) >= 7 and sha.startswith(commit):
                return version
        return commit[:12]

    def scrub(self, text: str | None) -> str:
        """`text` with every ladder commit (whole or abbreviated) written as its version."""
        return name_commits(text, self.labels)

    def versions(self, commits: Iterable[str]) -> list[str]:
        return [self.name(c) for c in commits]

    def in_versions(self, value: Any, key: str | None = None) -> Any:
        """A JSON value of the session (`status --json`) as its user knows it: every ladder
        commit in it written as its version, a `commit` field named `version`; paths stay
        as they are on disk, where the session's folders are."""
        if isinstance(value, Mapping):
            return {("version" if k == "commit" else k): self.in_versions(v, str(k)) for k, v in value.items()}
        if isinstance(value, list):
            return [self.in_versions(v, key) for v in value]
        if isinstance(value, str) and key not in _PATH_KEYS:
            return self.scrub(value)
        return value


def step_files(session_dir: Path, records: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The wheel-step.json of every step (and its earlier attempts) that got that far."""
    return [s for rec in records for s in _steps_of(session_dir, rec)]


def _steps_of(session_dir: Path, rec: Mapping[str, Any]) -> list[dict[str, Any]]:
    out = []
    for attempt in [rec, *(rec.get("attempts") or [])]:
        d = attempt.get("dir") or rec.get("dir")
        if not d:
            continue
        path = Path(d) if Path(d).is_absolute() else Path(session_dir) / d
        try:
            out.append(json.loads((path / WHEEL_STEP).read_text(encoding="utf-8")))
        except (OSError, ValueError):
            continue
    return out


@dataclass(frozen=True)
class Installs:
    """What a session's steps installed and downloaded."""

    installs: int
    downloads: int
    megabytes: float

    @classmethod
    def of(cls, session_dir: Path, records: Sequence[Mapping[str, Any]]) -> Installs:
        steps = step_files(session_dir, records)
        return cls(sum(1 for s in steps if s.get("installed")), sum(1 for s in steps if s.get("downloaded")),
                   round(sum(int(s.get("bytes") or 0) for s in steps) / 1e6, 1))

    def said(self) -> str:
        return (f"{self.installs} install{'s' * (self.installs != 1)} ({self.downloads} "
                f"download{'s' * (self.downloads != 1)}, {self.megabytes} MB)")


def install_cell(session_dir: Path, rec: Mapping[str, Any]) -> str:
    """A step's install, in a report's table: download + install, install, already installed
    (the environment held that wheel), or nothing (the step stopped before)."""
    steps = _steps_of(session_dir, rec)
    if not steps:
        return "—"
    if not steps[-1].get("installed"):
        return "already installed"
    return "download + install" if any(s.get("downloaded") for s in steps) else "install"
