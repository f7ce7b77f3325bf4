"""The Markdown report of a `wheels` session: versions, installs and the index, ready to paste
into a Triton issue; nothing of the version ladder the session searched (reports/version_names.py)."""

from __future__ import annotations

import html
import shlex
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tritonbisect.core.untrusted import printable
from tritonbisect.core.words import counted
from tritonbisect.reports.extras import (
    PathScrubber,
    environment_line,
    failing_log,
    failing_output_lines,
)
from tritonbisect.reports.reduced import reduced_lines
from tritonbisect.reports.version_names import Installs, VersionNames, install_cell
from tritonbisect.reports.where import time_lines, where_lines

if TYPE_CHECKING:  # pragma: no cover
    from tritonbisect.session.session import Session


def _cell(text: Any) -> str:
    return str(text if text is not None else "").replace("|", "\\|").replace("\n", " ")


def render(session: Session, data: Mapping[str, Any], names: VersionNames, *,
           tests_cell: Callable[[list[dict[str, Any]]], str], posterior_lines: Callable[..., list[str]],
           empty_journal: str) -> str:
    """The report of a session whose one phase bisects versions; `data` is report_data's."""
    phase = data["phases"][0]
    pkg = names.package
    records = [r for r in session.records() if r.get("phase") == phase["name"]]
    installs = Installs.of(session.dir, records)
    scrub = PathScrubber(workdir=session.settings.workdir, cwd=session.cwd)

    def said(text: str | None) -> str:  # the user's paths hidden, ladder commits as versions
        return names.scrub(scrub(text))

    culprit = phase["culprit"]
    previous = _previous(culprit, names)
    if c_steps(data) == 0 and data["status"] in ("found", "inconclusive"):
        out = [f"## Bisect result: {data['status']} in session.json, but the journal holds no step", "",
               empty_journal]
    elif data["status"] == "found" and culprit:
        title = f"first bad version {pkg} {names.name(culprit)}"
        if previous:
            title += f" (last good {previous})"
        out = [f"## Bisected: {title}"]
    else:
        out = [f"## Bisect result: {data['status']}"]
    c = data["counters"]
    out += ["", f"Session `{data['session']}` · {counted(c['tests'], 'test run')} · {installs.said()} · "
            f"{counted(c['steps'], 'step')}", ""]
    out.append(f"- **Environment:** {environment_line(session.extra.get('environment'))}")
    out.append(f"- **Package:** `{pkg}`" + (f" from {said('; '.join(names.index))}" if names.index else ""))
    n = f" ({counted(phase['range_size'], 'version')} after the good one)" if phase["range_size"] is not None else ""
    out.append(f"- **Versions:** good {names.name(phase['good'])} → bad {names.name(phase['bad'])}{n}")
    out.append(f"- **Status:** {phase['status']}")
    if culprit:
        out.append(f"- **First bad version:** {pkg} {names.name(culprit)}"
                   + (f" (last good: {pkg} {previous})" if previous else ""))
    if phase["status"] == "inconclusive":
        out.append(f"- **Candidates ({len(phase['candidates'])}), one of them is the first bad version:** "
                   + ", ".join(names.versions(phase["candidates"])))
    if phase["confidence"]:
        out.append(f"- **Confidence:** {phase['confidence']}")
    out += [names.scrub(line) for line in posterior_lines(phase.get("posterior"), lambda _c: "", phase["contradicted"])]
    if phase["reason"]:
        out.append(f"- **Note:** {_cell(said(phase['reason']))}")
    out.append(f"- **Cost:** {counted(c['tests'], 'test run')}, {installs.said()}, "
               f"{counted(phase['counters']['rounds'], 'search round')}")
    out += ["", "### Steps", "", "| # | role | version | outcome | verdict | install | test | worker |",
            "|---|------|---------|---------|---------|---------|------|--------|"]
    by_seq = {r.get("seq"): r for r in records}
    for step in phase["steps"]:
        rec = by_seq.get(step["seq"]) or {}
        version = names.name(step["commit"]) if step["commit"] else ""
        out.append(f"| {step['seq']} | {step['role']} | {version} | {step['kind'] or ''} | {step['verdict'] or ''} "
                   f"| {install_cell(Path(session.dir), rec)} | {tests_cell(step['tests'])} | {step['worker']} |")
    if culprit or phase["status"] == "invalid-endpoints":
        log = failing_log(phase["steps"], culprit, phase["bad"])
        shown = f"the test's output with {pkg} {names.name(culprit or phase['bad'])}"
        lines = failing_output_lines(log, scrub, "###", session_dir=Path(session.dir), session_id=session.id)
        out += [_summary(line, shown) for line in lines]
    out += [names.scrub(line) for line in where_lines(session.extra.get("narrow"))]
    out += [names.scrub(line) for line in time_lines(session.extra.get("narrow_time"))]
    out += [names.scrub(line) for line in reduced_lines(session.extra.get("reduce"), scrub=scrub)]
    out += ["", "### Reproduce", "", "```sh",
            scrub("tritonbisect " + shlex.join(session.argv)) if session.argv else scrub(data["command"]), "```",
            "", "<sub>Generated by tritonbisect.</sub>"]
    # reasons and the test's output are someone else's text: no terminal escapes in what is pasted
    return printable("\n".join(out) + "\n")


def c_steps(data: Mapping[str, Any]) -> int:
    return int(data["counters"]["steps"])


def _previous(culprit: str | None, names: VersionNames) -> str | None:
    """The version before the culprit on the ladder (the last good one); labels keep its order."""
    ladder = list(names.labels)
    if culprit in ladder and ladder.index(culprit) > 0:
        return names.labels[ladder[ladder.index(culprit) - 1]]
    return None


def _summary(line: str, shown: str) -> str:
    """The failing output's summary names the version, not a step folder (named after a ladder commit)."""
    if not line.startswith("<details><summary>"):
        return line
    lines = line.split("<code>", 1)[0].removeprefix("<details><summary>").strip()
    return f"<details><summary>{lines} {html.escape(shown, quote=False)}</summary>"
