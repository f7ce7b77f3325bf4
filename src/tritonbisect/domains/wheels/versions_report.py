"""The result of a `tritonbisect wheels` session in versions: last good, first bad, what was
tested, installed and downloaded, and the commit range for `tritonbisect triton`."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from tritonbisect.builds.install_check import git_label
from tritonbisect.core.gitrun import run_git
from tritonbisect.reports.version_names import VersionNames, step_files


def wheels_result(result: Any, records: Sequence[Mapping[str, Any]], versions: Mapping[str, str],
                  order: list[str], session_dir: Path) -> dict[str, Any]:
    """status, last_good, first_bad, tested, installs, downloads (+ download_mb)."""
    first_bad = last_good = None
    names = VersionNames("", dict(versions))  # a reason that names a ladder commit (a timing's reference)
    if result.status == "found" and result.culprit in versions:
        first_bad = versions[result.culprit]
        i = order.index(result.culprit)
        last_good = versions[order[i - 1]] if i > 0 else None
    tested = []
    seen = set()
    for rec in records:
        if rec.get("role") in ("mark", "undo") or rec.get("commit") not in versions:
            continue
        v = versions[rec["commit"]]
        entry = (v, rec.get("kind"), rec.get("verdict"), rec.get("role"))
        if entry in seen:
            continue
        seen.add(entry)
        tested.append({"version": v, "outcome": rec.get("kind"), "verdict": rec.get("verdict"),
                       "role": rec.get("role"), "reason": names.scrub(rec.get("reason", ""))})
    steps = step_files(session_dir, records)
    return {
        "status": result.status,
        "last_good": last_good,
        "first_bad": first_bad,
        "candidates": [versions.get(c, c) for c in (result.candidates or [])],
        "tested": tested,
        "installs": sum(1 for s in steps if s.get("installed")),
        "downloads": sum(1 for s in steps if s.get("downloaded")),
        "download_mb": round(sum(int(s.get("bytes") or 0) for s in steps) / 1e6, 1),
        # seconds each install took (purge, install, check), and with what
        "install_s": [s["install_s"] for s in steps if s.get("installed") and "install_s" in s],
        "installer": next((s["installer"] for s in steps if s.get("installer")), None),
        "reason": names.scrub(result.reason),
    }


def version_ref(triton_dir: Path, version: str) -> str | None:
    """The commit a published version comes from in a Triton checkout: `+git<sha>` names it;
    a release maps to its tag (v3.5.0), else its release branch (release/3.5.x)."""
    label = git_label(version)
    base = re.split(r"[+]", version)[0]
    parts = base.split(".")
    refs = [label] if label else []
    refs += [f"v{base}", base]
    if len(parts) >= 2:
        branch = f"release/{parts[0]}.{parts[1]}.x"
        refs += [branch, f"origin/{branch}"]
    for ref in refs:
        proc = run_git(["rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}"], cwd=Path(triton_dir))
        if proc.returncode == 0 and proc.stdout.strip():
            return proc.stdout.strip()
    return None


def commit_range(triton_dir: Path, last_good: str | None, first_bad: str | None) -> dict[str, Any]:
    good = version_ref(triton_dir, last_good) if last_good else None
    bad = version_ref(triton_dir, first_bad) if first_bad else None
    out: dict[str, Any] = {"good": good, "bad": bad}
    if good and bad:
        out["command"] = f"tritonbisect triton --triton-dir {triton_dir} --good {good} --bad {bad}"
    return out
