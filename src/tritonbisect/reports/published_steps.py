"""What the published wheels of a session came to, for its result and report: how each step
got its artifact (install, build, cache), and the bracket the installs-only "nightlies"
phase of `triton|torch --wheel-index` left (domains/wheels/nightlies.py)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tritonbisect.core.words import counted
from tritonbisect.session.phases import PhaseSpec

if TYPE_CHECKING:  # pragma: no cover
    from tritonbisect.session.session import Session

# the name of the installs-only phase that tests the commits with a nightly first (its
# phases are named in session.json, so the name never changes)
NIGHTLIES_PHASE = "nightlies"


def wheel_version(spec: PhaseSpec, commit: str) -> str:
    """The version of the published wheel a phase installs for `commit` ("no wheel")."""
    entry = (spec.recipe_config.get("wheels") or {}).get(commit)
    return entry["version"] if entry else "no wheel"


def step_source(rec: Mapping[str, Any]) -> str:
    """How a journaled step got its artifact: "install" (a published wheel), "build" (a
    source build), "cached" (a build already in the cache) or "none" (no build stage)."""
    build = rec.get("build") or {}
    if build.get("published"):
        return "install"
    if build.get("cached"):
        return "cached"
    if build.get("performed", bool(build.get("log"))):
        return "build"
    return "none"


def wheels_summary(session: Session) -> dict[str, Any] | None:
    """The JSON/report block of a `--wheel-index` session: the nightlies' bracket, the count
    of installs and of source builds, and each step's source (install, build or cached)."""
    phases = session.phases()
    nightly = next((p for p in phases if p.spec.name == NIGHTLIES_PHASE), None)
    if nightly is None and "wheels_mode" not in session.extra:
        return None
    records = [r for r in session.records() if r.get("role") not in ("mark", "undo")]
    wheels: dict[str, Any] = {}
    for p in phases:
        wheels.update(p.spec.recipe_config.get("wheels") or {})
    steps = [{"phase": r.get("phase"), "role": r.get("role"), "commit": r.get("commit"),
              "source": step_source(r), "verdict": r.get("verdict"),
              **({"version": wheels[r["commit"]]["version"]} if r.get("commit") in wheels else {})}
             for r in records]
    out: dict[str, Any] = {
        "mode": session.extra.get("wheels_mode", "auto"),
        "nightlies": len(wheels),
        "installs": sum(1 for s in steps if s["source"] == "install"),
        "source_builds": sum(1 for s in steps if s["source"] == "build"),
        "cached_builds": sum(1 for s in steps if s["source"] == "cached"),
        "steps": steps,
    }
    if nightly is not None and nightly.status == "found" and nightly.culprit:
        cands = list(nightly.spec.candidates or [])
        i = cands.index(nightly.culprit) if nightly.culprit in cands else 0
        lo = cands[i - 1] if i > 0 else nightly.spec.good
        out["bracket"] = {
            "good": lo, "bad": nightly.culprit,
            "good_version": wheel_version(nightly.spec, lo),
            "bad_version": wheel_version(nightly.spec, nightly.culprit),
            "commits": _bracket_size(nightly.spec.repo, lo, nightly.culprit),
        }
    return out


def _bracket_size(repo: Path, good: str, bad: str) -> int | None:
    from tritonbisect.core.gitrun import run_git

    proc = run_git(["rev-list", "--count", f"{good}..{bad}"], cwd=Path(repo))
    return int(proc.stdout.strip()) if proc.returncode == 0 and proc.stdout.strip() else None


def summary_line(session: Session) -> str:
    """One line: installs, source builds and the nightlies' bracket."""
    s = wheels_summary(session)
    if s is None:
        return ""
    line = (f"--wheels {s['mode']}: {counted(s['installs'], 'install')} of published wheels, "
            f"{counted(s['source_builds'], 'source build')} ({counted(s['nightlies'], 'commit')} with a nightly)")
    b = s.get("bracket")
    if b:
        line += (f"; nightlies' bracket {b['good'][:12]} ({b['good_version']}) .. "
                 f"{b['bad'][:12]} ({b['bad_version']}), {counted(b['commits'], 'commit')}")
    return line
