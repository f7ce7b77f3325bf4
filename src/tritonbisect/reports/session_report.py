"""Reports of a session: Markdown ready to paste into a GitHub issue, and JSON."""

from __future__ import annotations

import shlex
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from tritonbisect.core.perf import format_summary, summary_of
from tritonbisect.core.perf_paired import sandwich_of
from tritonbisect.core.secrets import scrub as scrub_secrets
from tritonbisect.core.secrets import scrub_data
from tritonbisect.core.untrusted import printable
from tritonbisect.core.words import counted
from tritonbisect.reports.case_tables import markdown_lines as case_lines
from tritonbisect.reports.case_tables import searched_cases, step_cell
from tritonbisect.reports.extras import (
    PathScrubber,
    environment_line,
    failing_log,
    failing_output_lines,
)
from tritonbisect.reports.reduced import reduced_lines
from tritonbisect.reports.version_names import VersionNames
from tritonbisect.reports.where import time_lines, where_lines
from tritonbisect.session.session import Session, counters_of
from tritonbisect.session.settings_file import flat_settings

if TYPE_CHECKING:  # pragma: no cover
    from tritonbisect.session.phases import PhaseState

# an answer with no step under it: a journal emptied or lost since (never "Bisected")
EMPTY_JOURNAL = ("**The journal holds no step:** the answer session.json states rests on no recorded test "
                 "(the journal was emptied or lost); run the bisect again (the command below) before acting on it.")


def reproduce_command(session: Session) -> str:
    argv = list(session.argv)
    if not argv:
        return session.resume_command()
    cmd = "tritonbisect " + shlex.join(argv)
    if session.cwd:
        cmd = f"cd {shlex.quote(str(session.cwd))} && {cmd}"
    return cmd


def _info(history: Any, commit: str | None) -> dict[str, str] | None:
    if not commit or history is None:
        return None
    try:
        info = history.commit_info(commit)
    except Exception:  # noqa: BLE001 - the repository may be gone; the report still works
        return None
    return {
        "sha": info.sha,
        "subject": info.subject,
        "author": info.author,
        "email": info.email,
        "date": info.date,
    }


def _history(phase: PhaseState) -> Any:
    try:
        from tritonbisect.core.history import History

        return History(phase.spec.repo)
    except Exception:  # noqa: BLE001
        return None


def _subjects(history: Any, commits: list[str]) -> dict[str, str]:
    """Subjects of the steps' commits, one git call for all of them (not one per step)."""
    if history is None:
        return {}
    unique = list(dict.fromkeys(commits))
    try:
        return history.subjects(unique)
    except Exception:  # noqa: BLE001 - e.g. a commit is gone: look them up one by one
        infos = {c: _info(history, c) for c in unique}
        return {c: info["subject"] for c, info in infos.items() if info}


def _step(rec: Mapping[str, Any], subject: str) -> dict[str, Any]:
    build = rec.get("build") or {}
    tests = rec.get("tests") or []
    return {
        "seq": rec.get("seq"),
        "role": rec.get("role"),
        "round": rec.get("round"),
        "commit": rec.get("commit"),
        "subject": subject,
        "kind": rec.get("kind"),
        "verdict": rec.get("verdict"),
        "reason": rec.get("reason"),
        "worker": rec.get("worker"),
        "started": rec.get("started"),
        "finished": rec.get("finished"),
        "seconds": rec.get("seconds"),
        "build": {
            "cached": build.get("cached"),
            "performed": build.get("performed"),
            "seconds": build.get("seconds"),
            "log": build.get("log"),
            "published": bool(build.get("published")),
            "kept": bool(build.get("kept")),  # a worker's checkout still held it: nothing built
        }
        if build
        else None,
        "tests": [
            {k: t.get(k) for k in ("kind", "exit", "signal", "seconds", "timed_out", "log")}
            for t in tests
        ],
        # --perf-design paired: the reference's runs, interleaved with the tests (one per pair)
        **({"reference_tests": [
            {k: t.get(k) for k in ("kind", "exit", "signal", "seconds", "timed_out", "log")}
            for t in rec.get("reference_tests") or []
        ]} if rec.get("reference_tests") else {}),
        "dir": rec.get("dir"),
        "cases": rec.get("cases"),  # a test that reports cases: each case's kind and verdict
        "metric": summary_of(rec),  # --regress perf: median, samples, change vs the reference
    }


def report_data(session: Session) -> dict[str, Any]:
    records = session.records()
    phases = []
    for phase in session.phases():
        history = _history(phase)
        recs = [r for r in records if r.get("phase") == phase.spec.name]
        subjects = _subjects(history, [str(r.get("commit")) for r in recs] + phase.candidates[:50])

        def subject(commit: str, subjects: dict[str, str] = subjects) -> str:
            return subjects.get(commit, "")

        phases.append(
            {
                "name": phase.spec.name,
                "repo": str(phase.spec.repo),
                "good": phase.spec.good,
                "bad": phase.spec.bad,
                "good_info": _info(history, phase.spec.good),
                "bad_info": _info(history, phase.spec.bad),
                "range_size": phase.range_size,
                "status": phase.status,
                "culprit": phase.culprit,
                "culprit_info": _info(history, phase.culprit),
                "candidates": phase.candidates,
                "candidates_info": [
                    {"sha": c, "subject": subject(c)} for c in phase.candidates[:50]
                ]
                if phase.status == "inconclusive"
                else [],
                "confidence": phase.confidence,
                # P(culprit), top candidates, error rates (session/answer.py)
                "posterior": session.extra.get("posterior", {}).get(phase.spec.name),
                # --prefer-pass / --prefer-files: what the hint weighed, and what came of it
                "hint": (session.extra.get("hint") or {}).get(phase.spec.name),
                "reason": phase.reason,
                "recipe": phase.spec.recipe_name,
                "counters": counters_of(recs),
                "steps": [_step(r, subject(str(r.get("commit")))) for r in recs],
                # did any verdict disagree with another (a flaky test, a confirmation, a mark)?
                "contradicted": _contradicted(recs, phase),
                # a test that reports cases: each case's answer (session/case_answer.py)
                "cases": (session.extra.get("cases") or {}).get(phase.spec.name),
                # the LLVMs (or toolchain) the culprit moved, the fork patches replayed (reports/pins.py)
                "pins": (session.extra.get("pins") or {}).get(phase.spec.name),
                # --perf-design paired: the A/B of the endpoints and of each culprit against its parent
                "perf": sandwich_of(recs, phase.spec.good, phase.spec.bad),
            }
        )
    result = session.result()
    return {
        "session": session.id,
        "created": session.created,
        "workflow": session.workflow,
        "status": result.status,
        "culprit": result.culprit,
        "confidence": result.confidence,
        "candidates": result.candidates,
        "counters": counters_of(records),
        "settings": flat_settings(session.settings),  # one flat object, as the report always had
        "command": reproduce_command(session),
        "phases": phases,
        "revert": session.extra.get("revert"),  # --verify-revert: each culprit's revert verdict
        "narrow": session.extra.get("narrow"),  # `narrow` / --narrow: where in the compiler
        "narrow_time": session.extra.get("narrow_time"),  # `narrow --time`: where the compile time grew
        "reduce": session.extra.get("reduce"),  # `reduce --session` / --reduce: the reduced kernel
    }


def _culprit_subjects(phase: Mapping[str, Any]):
    """The subject of each culprit of a phase's cases (one git call for all)."""
    culprits = list((phase.get("cases") or {}).get("culprits") or [])
    known = _subjects(_history_of(phase["repo"]), culprits) if culprits else {}
    return lambda commit: known.get(commit, "")


def _history_of(repo: str) -> Any:
    try:
        from pathlib import Path

        from tritonbisect.core.history import History

        return History(Path(repo))
    except Exception:  # noqa: BLE001
        return None


def _contradicted(recs: list[dict[str, Any]], phase: PhaseState) -> bool:
    from tritonbisect.session.evidence import evidence_of

    ev = evidence_of(recs)
    return ev.flakiness_seen or bool(ev.marks) or phase.confidence == "low"


def _md_escape(text: str | None) -> str:
    return (text or "").replace("|", "\\|").replace("\n", " ")


def _fmt_seconds(value: Any) -> str:
    if value is None:
        return ""
    value = float(value)
    if value < 60:
        return f"{value:.1f}s"
    return f"{int(value // 60)}m{int(value % 60):02d}s"


def _commit_line(info: Mapping[str, str] | None, sha: str | None) -> str:
    if not sha:
        return ""
    if not info:
        return f"`{sha}`"
    return (
        f"`{sha}` **{_md_escape(info['subject'])}** — {_md_escape(info['author'])} "
        f"<{info['email']}>, {info['date']}"
    )


def sandwich_lines(sandwich: Mapping[str, Any] | None) -> list[str]:
    """--perf-design paired: how large the regression is between the endpoints, and each
    culprit against its parent, with their intervals."""
    if not sandwich:
        return []
    out = []
    ends = sandwich.get("endpoints")
    if ends:
        out.append(f"- **Regression (A/B of the endpoints):** {ends['text']}, {_decided(ends)}")
    for fig in sandwich.get("culprits") or []:
        out.append(f"- **`{str(fig['commit'])[:12]}` against its parent `{str(fig['against'])[:12]}`:** "
                   f"{fig['text']}, {_decided(fig)}")
    return out


def _decided(figure: Mapping[str, Any]) -> str:
    conf = figure.get("confidence")
    level = f"{float(conf) * 100:g}% CI" if conf else "CI"
    return {"worse": f"slower beyond the threshold ({level})", "within": f"within the threshold ({level})"}.get(
        str(figure.get("decision")), f"undecided ({level})")


def _tests_cell(tests: list[dict[str, Any]], reference: list[dict[str, Any]] | None = None) -> str:
    """Each run's time; many runs (perf samples) as a count and a total; pairs (the paired
    design) as pairs and the total of both sides."""
    if reference:
        total = sum(float(t["seconds"] or 0) for t in (*tests, *reference))
        return f"{counted(len(tests), 'pair')}, {_fmt_seconds(total)}"
    if len(tests) > 4:
        total = sum(float(t["seconds"] or 0) for t in tests)
        return f"{len(tests)} runs, {_fmt_seconds(total)}"
    return " + ".join(_fmt_seconds(t["seconds"]) for t in tests) or "—"


def render_markdown(session: Session) -> str:
    data = report_data(session)
    names = VersionNames.of(session) if len(data["phases"]) == 1 else None
    if names is not None:  # `wheels`: versions, installs and the index, nothing of its ladder
        from tritonbisect.reports.wheels_markdown import render

        return render(session, data, names, tests_cell=_tests_cell, posterior_lines=_posterior_lines,
                      empty_journal=EMPTY_JOURNAL)
    out: list[str] = []
    # the session's answer (with --verify-revert, later phases name the culprits after it)
    culprit_phase = next((p for p in data["phases"] if data["culprit"] and p["culprit"] == data["culprit"]), None)
    culprit_phase = culprit_phase or next((p for p in reversed(data["phases"]) if p["culprit"]), None)
    if data["counters"]["steps"] == 0 and data["status"] in ("found", "inconclusive"):
        out.append(f"## Bisect result: {data['status']} in session.json, but the journal holds no step")
        out += ["", EMPTY_JOURNAL]
    elif culprit_phase and data["status"] == "found":
        info = culprit_phase["culprit_info"] or {}
        title = f"`{culprit_phase['culprit'][:12]}` {info.get('subject', '')}".strip()
        culprits = (culprit_phase.get("cases") or {}).get("culprits") or []
        if len(culprits) > 1:  # a test that reports cases, broken at several commits
            found = sum(1 for e in culprit_phase["cases"]["cases"].values() if e.get("culprit"))
            title = f"{found} cases at {len(culprits)} culprits, the earliest {title}"
        out.append(f"## Bisected: {title}")
    else:
        out.append(f"## Bisect result: {data['status']}")
    out.append("")
    c = data["counters"]
    out.append(
        f"Session `{data['session']}` · {counted(c['tests'], 'test run')} · {counted(c['builds'], 'build')}"
        f" ({c['cached_builds']} cached) · {counted(c['steps'], 'step')}"
    )
    out.append("")
    out.append(f"- **Environment:** {environment_line(session.extra.get('environment'))}")
    scrub = PathScrubber(workdir=session.settings.workdir, cwd=session.cwd)
    if session.extra.get("wheels_mode") is not None:  # triton --wheel-index
        from tritonbisect.reports.published_steps import summary_line

        out.append("")
        out.append(f"- **Published wheels:** {summary_line(session)}")
    multi = len(data["phases"]) > 1
    for phase in data["phases"]:
        out.append("")
        level = "###"
        if multi:
            out.append(f"### Phase `{phase['name']}`: {phase['status']}")
            out.append("")
            level = "####"
        out.append(f"- **Repository:** `{scrub(phase['repo'])}`")
        n = f" ({counted(phase['range_size'], 'commit')})" if phase["range_size"] is not None else ""
        out.append(f"- **Range:** good `{phase['good'][:12]}` → bad `{phase['bad'][:12]}`{n}")
        out.append(f"- **Status:** {phase['status']}")
        if phase["culprit"]:
            label = "Earliest culprit" if phase.get("cases") and len(phase["cases"].get("culprits") or []) > 1 else "Culprit"
            if phase["name"] == "pairs":  # the end of an LLVM range (domains/llvm/pairs.py)
                label = "First bad pair (LLVM)"
            out.append(f"- **{label}:** {_commit_line(phase['culprit_info'], phase['culprit'])}")
        if phase["status"] == "inconclusive":
            out.append(f"- **Candidates ({len(phase['candidates'])}), one of them is the culprit:**")
            for cand in phase["candidates_info"]:
                out.append(f"  - `{cand['sha'][:12]}` {_md_escape(cand['subject'])}")
        if phase["confidence"]:
            out.append(f"- **Confidence:** {phase['confidence']}")
        out.extend(_posterior_lines(phase.get("posterior"), subject_of(phase), phase["contradicted"]))
        out.extend(hint_lines(phase.get("hint")))
        if phase["reason"]:
            out.append(f"- **Note:** {_md_escape(scrub(phase['reason']))}")
        out.extend(sandwich_lines(phase.get("perf")))
        out.extend(unreadable_ir_lines(phase["steps"]))
        pc = phase["counters"]
        out.append(
            f"- **Cost:** {counted(pc['tests'], 'test run')}, {counted(pc['builds'], 'build')}"
            f" ({pc['cached_builds']} cached), {counted(pc['rounds'], 'search round')}"
        )
        out.extend(case_lines(phase.get("cases"), _culprit_subjects(phase), level))
        out.append("")
        out.append(f"{level} Steps")
        out.append("")
        metrics = any(step["metric"] for step in phase["steps"])
        searched = searched_cases(phase.get("cases"))
        out.append(
            "| # | role | commit | subject | outcome | verdict | build | test | worker |"
            + (" metric |" if metrics else "") + (" cases |" if searched else "")
        )
        out.append(
            "|---|------|--------|---------|---------|---------|-------|------|--------|"
            + ("--------|" if metrics else "") + ("-------|" if searched else "")
        )
        for step in phase["steps"]:
            build = step["build"] or {}
            if not build or (not build.get("performed") and not build.get("cached")):
                build_cell = "—"
            elif build.get("published"):
                build_cell = "install"
            elif build.get("kept"):
                build_cell = "kept"
            elif build.get("cached"):
                build_cell = "cached"
            else:
                build_cell = _fmt_seconds(build.get("seconds"))
            test_cell = _tests_cell(step["tests"], step.get("reference_tests"))
            out.append(
                f"| {step['seq']} | {step['role']} | `{(step['commit'] or '')[:12]}` "
                f"| {_md_escape(step['subject'])[:60]} | {step['kind']} | {step['verdict']} "
                f"| {build_cell} | {test_cell} | {step['worker']} |"
                + (f" {format_summary(step['metric'])} |" if metrics else "")
                + (f" {step_cell(step['cases'], searched)} |" if searched else "")
            )
        if phase["culprit"] or phase["status"] == "invalid-endpoints":
            log = failing_log(phase["steps"], phase["culprit"], phase["bad"])
            out.extend(failing_output_lines(log, scrub, level, session_dir=session.dir, session_id=session.id))
    if session.extra.get("revert"):  # --verify-revert
        from tritonbisect.session.revert_check import report_lines

        out.append("")
        out.extend(report_lines(session))
    if session.extra.get("pins"):
        from tritonbisect.reports.pins import report_lines as pin_report

        out.append("")
        out.extend(pin_report(session))
    out.extend(where_lines(session.extra.get("narrow")))
    out.extend(time_lines(session.extra.get("narrow_time")))
    out.extend(reduced_lines(session.extra.get("reduce"), scrub=scrub))
    out.append("")
    out.append("### Reproduce")
    out.append("")
    out.append("```sh")
    # run from the directory the session was started in: its paths are relative to it
    out.append(scrub("tritonbisect " + shlex.join(session.argv)) if session.argv else scrub(data["command"]))
    out.append("```")
    out.append("")
    out.append("<sub>Generated by tritonbisect.</sub>")
    # subjects, authors, reasons and the test's output are someone else's text: the report is
    # printed on terminals and pasted into issues, without their escape sequences
    # and no secret value the run knows (a test that printed its environment), no URL password
    return printable(scrub_secrets("\n".join(out) + "\n"))


def unreadable_ir_lines(steps: list[Mapping[str, Any]]) -> list[str]:
    """IR-oracle steps skipped because the commit could not read the IR (dialect drift);
    `--from source` is suggested when they are most of the steps."""
    unreadable = sum(1 for s in steps if s.get("kind") == "unreadable_ir")
    if not unreadable:
        return []
    line = f"- **Unreadable IR:** {unreadable} of {counted(len(steps), 'commit')} tested could not read the recorded IR (skipped)"
    if unreadable * 2 >= len(steps):
        line += "; most of the range speaks another IR dialect: bisect with `--from source` instead"
    return [line]


def hint_lines(hint: Mapping[str, Any] | None) -> list[str]:
    """The hint of a phase (--prefer-pass/--prefer-files): what it weighed and its verdict."""
    if not hint:
        return []
    files = hint.get("files") or []
    shown = ", ".join(f"`{f}`" for f in files[:6]) + (f" and {len(files) - 6} more" if len(files) > 6 else "")
    line = (f"- **Hint:** `{_md_escape(hint.get('described'))}` weighed {hint.get('commits')} of "
            f"{counted(hint.get('range_size'), 'commit')} (touching {shown or 'no file'})")
    if hint.get("ratio"):
        line += f", each {float(hint['ratio']):.0f}x a commit elsewhere"
    out = [line]
    for p in hint.get("passes") or []:
        if p.get("note"):
            out.append(f"  - `{_md_escape(p.get('query'))}`: {_md_escape(p['note'])}")
    if hint.get("verdict"):
        out.append(f"  - {'**' if hint.get('against') else ''}{_md_escape(hint['verdict'])}"
                   f"{'**' if hint.get('against') else ''}")
    return out


def subject_of(phase: Mapping[str, Any]):
    """A commit's subject from what a phase's report data already holds."""
    known = {s["commit"]: s["subject"] for s in phase["steps"] if s.get("commit")}
    known.update({c["sha"]: c["subject"] for c in phase.get("candidates_info") or []})
    return lambda commit: known.get(commit, "")


def _posterior_lines(post: Mapping[str, Any] | None, subject, contradicted: bool = True) -> list[str]:
    """The probability behind the answer: what "high" means, the runner-up commits. Error
    rates estimated from verdicts that never disagreed are noise: they are left out."""
    if not post or post.get("probability") is None:
        return []
    fixed = post.get("rates") == "fixed"
    rates = (f"; {'fixed' if fixed else 'estimated'} error rates p = {post.get('p')}, q = {post.get('q')}"
             if fixed or contradicted else "; no verdict contradicted another")
    lines = [
        f"- **Posterior:** P = {post['probability']:.3f} (threshold {post.get('threshold')}; "
        f"{post.get('search')} search; {counted(post.get('verdicts'), 'verdict')}{rates})"
    ]
    top = [t for t in post.get("top") or [] if t["probability"] >= 0.001]
    if len(top) > 1:
        lines.append("- **Top candidates:**")
        for t in top:
            lines.append(
                f"  - `{t['commit'][:12]}` {t['probability']:.3f} {_md_escape(subject(t['commit']))}"
            )
    return lines


def render_json(session: Session) -> dict[str, Any]:
    return scrub_data(report_data(session))
