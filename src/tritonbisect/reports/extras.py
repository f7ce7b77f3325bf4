"""What a report needs beyond the steps to be pasted into an issue: the failing test's
output, the versions it ran with, and paths that say nothing of the user's machine."""

from __future__ import annotations

import html
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from tritonbisect.core.versions import environment

TAIL_LINES = 40


def environment_line(env: Mapping[str, str] | None) -> str:
    env = env or environment()
    return (f"tritonbisect {env.get('tritonbisect', '?')} · Python {env.get('python', '?')} · "
            f"git {env.get('git', '?')} · {env.get('platform', '?')}")


class PathScrubber:
    """Rewrites the user's local paths: the workdir as `<workdir>`, what is under the
    directory the command was run from as relative paths, the home directory as `~`."""

    def __init__(self, *, workdir: str | os.PathLike[str] | None, cwd: str | None,
                 home: str | None = None) -> None:
        pairs: list[tuple[str, str]] = []
        if workdir:
            pairs.append((str(Path(workdir)), "<workdir>"))
        if cwd and cwd != "/":
            pairs.append((str(Path(cwd)).rstrip("/") + "/", ""))
            pairs.append((str(Path(cwd)), "."))
        home = home if home is not None else str(Path.home())
        if home and home != "/":
            pairs.append((home, "~"))
        # the longest first: a workdir inside the home is `<workdir>`, not `~/...`
        self.pairs = sorted(pairs, key=lambda p: len(p[0]), reverse=True)

    def __call__(self, text: str | None) -> str:
        out = text or ""
        for old, new in self.pairs:
            out = out.replace(old, new)
        return out


def failing_log(steps: Sequence[Mapping[str, Any]], culprit: str | None, bad: str) -> str | None:
    """The test log that shows the regression: the culprit's last bad run, else the bad
    endpoint's."""
    for commit in (culprit, bad):
        if not commit:
            continue
        for step in reversed(steps):
            if step.get("commit") != commit or step.get("verdict") != "bad":
                continue
            logs = [t.get("log") for t in step.get("tests") or [] if t.get("log")]
            if logs:
                return str(logs[-1])
    return None


def session_log(session_dir: Path, session_id: str, path: str | None) -> Path | None:
    """Where a log a step record names is inside its session's folder: the path below the
    folder, or (a session folder moved since) what follows the session's id in it. None for a
    path elsewhere: a journal is a file anyone with the folder could have edited."""
    if not path:
        return None
    recorded = Path(path)
    if recorded.is_absolute() and recorded.is_relative_to(session_dir):
        return recorded
    parts = recorded.parts
    if session_id in parts:
        rest = parts[len(parts) - parts[::-1].index(session_id):]
        return session_dir.joinpath(*rest) if rest else None
    return None


def log_tail(session_dir: Path, session_id: str, path: str | None, lines: int = TAIL_LINES) -> str | None:
    """The last lines of a step's log, read only inside the session's folder and through no
    link (core/confined.py): a test that links its log to ~/.netrc shows nothing."""
    from tritonbisect.core.confined import read_tail_inside

    where = session_log(session_dir, session_id, path)
    if where is None:
        return None
    text = read_tail_inside(session_dir, where, 16 * 1024)
    if text is None:
        return None
    text = "\n".join(text.rstrip("\n").splitlines()[-lines:])
    return text if text.strip() else None


def failing_output_lines(log: str | None, scrub: PathScrubber, heading: str, *, session_dir: Path,
                         session_id: str) -> list[str]:
    """A collapsed block with the end of the failing test's output."""
    tail = log_tail(session_dir, session_id, log)
    if tail is None:
        return []
    fence = "```"
    while fence in tail:
        fence += "`"
    return [
        "",
        f"{heading} Failing test output",
        "",
        f"<details><summary>the last {TAIL_LINES} lines of <code>{html.escape(scrub(log))}</code></summary>",
        "",
        fence,
        scrub(tail).rstrip("\n"),
        fence,
        "",
        "</details>",
    ]

