"""The next command after a narrowing: the commit bisect with `--prefer-pass` filled in.

`next_hint(narrowed, repo, good, bad, base)` names the pass (bisect/prior.narrowed_passes),
finds its files in `repo` at `bad` (session/hint.py) and returns what `narrow` prints and
`--json` carries: {"passes", "files", "commits", "command", "note"}.
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from tritonbisect.core.errors import InputError
from tritonbisect.search.prior import narrowed_passes


def next_hint(narrowed: Mapping[str, Any], repo: Path | None, good: str | None, bad: str | None,
              base: str) -> dict[str, Any] | None:
    """None when the narrowing names no pass. `base`: the command to extend (without the hint)."""
    names = narrowed_passes(narrowed)
    if not names:
        return None
    flags = " ".join(f"--prefer-pass {shlex.quote(n)}" for n in names)
    out: dict[str, Any] = {"passes": names, "files": [], "commits": None, "command": f"{base} {flags}".strip(),
                           "note": ""}
    if repo is None or not good or not bad:
        out["note"] = "no commit range to weigh (give --triton-dir for the Triton checkout)"
        return out
    from tritonbisect.session.hint import find_hint

    try:
        hint = find_hint(Path(repo), good, bad, passes=names, globs=[])
    except InputError as exc:
        out["note"] = str(exc)
        return out
    except Exception as exc:  # noqa: BLE001 - a suggestion only: never fail the narrowing for it
        out["note"] = f"could not read {repo}: {exc}"
        return out
    out["files"] = hint.files
    out["commits"] = len(hint.commits)
    out["note"] = "; ".join(p.note for p in hint.passes if p.note)
    return out


def rerun_command(argv: Sequence[str]) -> str:
    """The session's own command line, without an earlier hint."""
    kept: list[str] = []
    skip = False
    for arg in argv:
        if skip:
            skip = False
            continue
        if arg in ("--prefer-pass", "--prefer-files"):
            skip = True
            continue
        if arg.startswith(("--prefer-pass=", "--prefer-files=")):
            continue
        kept.append(arg)
    return "tritonbisect " + shlex.join(kept)
