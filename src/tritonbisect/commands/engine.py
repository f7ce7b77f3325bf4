"""Engine commands: `resume`, `status`, `report`, `demo`, and the `execute` every bisecting
command ends with (`run` is domains/command/command.py, `step` commands/step.py).

Exit codes (README): 0 found, 1 inconclusive, 2 usage/input, 3 endpoints invalid,
4 aborted, 6 found with low confidence, 130 interrupted. `step` speaks only git bisect's protocol: 0/1/125/128.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

import click

from tritonbisect.commands.echo import echo
from tritonbisect.core.errors import unexpected_shapes
from tritonbisect.core.words import counted
from tritonbisect.options.bisect_options import (
    bisect_settings,
    resolve_workdir,
)
from tritonbisect.options.launch import workdir_flag

if TYPE_CHECKING:  # pragma: no cover
    from tritonbisect.session.observer import Display
    from tritonbisect.session.phases import SessionResult
    from tritonbisect.session.session import Session

# --- shared by every bisecting command ---------------------------------------------------


def _sandwiches(session: Session) -> dict[str, Any]:
    """Each phase's A/B figures under --perf-design paired (core/perf_paired.py)."""
    if session.settings.perf_settings() is None:  # neither --regress perf nor compile-time
        return {}
    from tritonbisect.core.perf_paired import sandwich_of

    records = session.records()
    out = {}
    for p in session.phases():
        found = sandwich_of([r for r in records if r.get("phase") == p.spec.name], p.spec.good, p.spec.bad)
        if found:
            out[p.spec.name] = found
    return out


def result_json(session: Session, result: SessionResult) -> dict[str, Any]:
    from tritonbisect.session.session import phase_totals

    counters = session.counters()
    perf = _sandwiches(session)
    out = {
        "culprit": result.culprit,
        "status": result.status,
        # what the exit code says: "found-low-confidence" (exit 6) apart from "found" (exit 0)
        "outcome": result.outcome,
        "exit_code": result.exit_code,
        "candidates": result.candidates,
        "confidence": result.confidence,
        "tests": counters["tests"],
        "builds": counters["builds"],
        "cached_builds": counters["cached_builds"],
        "rounds": counters["rounds"],
        "steps": counters["steps"],
        "session": session.id,
        "session_dir": str(session.dir),
        "phase": result.phase,
        # the probability of the answer and the top candidates (session/answer.py)
        "posterior": session.extra.get("posterior", {}).get(result.phase),
        "phases": [
            {
                "name": p.spec.name,
                "status": p.status,
                "culprit": p.culprit,
                "candidates": p.candidates,
                "confidence": p.confidence,
                "reason": p.reason,
                "posterior": session.extra.get("posterior", {}).get(p.spec.name),
                # a test that reports cases: each phase's own (a follow-up phase searches those
                # of the earliest culprit only), as the top-level "cases" has them for the answer's
                **({"cases": (session.extra.get("cases") or {})[p.spec.name]}
                   if (session.extra.get("cases") or {}).get(p.spec.name) else {}),
                # which LLVM (or toolchain) the culprit moved, the fork patches replayed, A/B verdicts
                **({"pins": (session.extra.get("pins") or {})[p.spec.name]}
                   if (session.extra.get("pins") or {}).get(p.spec.name) else {}),
                # steps, builds, what they compiled and their seconds, in this phase
                "totals": phase_totals(session.records(p.spec.name)),
                # --perf-design paired: the A/B of the endpoints and of each culprit (its parent)
                **({"perf": perf[p.spec.name]} if perf.get(p.spec.name) else {}),
            }
            for p in session.phases()
        ],
        "reason": result.reason,
    }
    if perf.get(result.phase):  # --perf-design paired: how large, with its interval
        out["perf"] = perf[result.phase]
    if session.extra.get("revert"):  # --verify-revert: the revert's verdict, and the culprits
        from tritonbisect.session.revert_check import revert_json

        out.update(revert_json(session))
    if session.extra.get("cases"):  # a test that reports cases: each case's own culprit
        from tritonbisect.reports.case_tables import cases_json

        out.update(cases_json(session, result.phase))
    if session.extra.get("hint"):  # --prefer-pass / --prefer-files: what it weighed, what came of it
        out["hint"] = session.extra["hint"]
    if session.extra.get("wheels_mode") is not None:  # triton --wheel-index: installs vs builds
        from tritonbisect.reports.published_steps import wheels_summary

        summary = wheels_summary(session)
        if summary is not None:
            out["installs"] = summary["installs"]
            out["source_builds"] = summary["source_builds"]
            out["wheels"] = summary
    return out


def execute(session: Session, *, json_out: bool = False, ui: Display | None = None) -> NoReturn:
    """Drive a session to its end, print the result, and exit with the documented code.

    Used by `run`, `resume` and the domain bisectors (`triton`, `llvm`, ...).
    """
    result, follow_ups = drive_and_follow(session, json_out=json_out, ui=ui)
    if json_out:
        data = result_json(session, result)
        data.update(follow_ups)
        echo(json.dumps(data))
    else:
        echo(summary(session, result))
    raise click.exceptions.Exit(result.exit_code)


def drive_and_follow(session: Session, *, json_out: bool, ui: Display | None = None) -> tuple[Any, dict[str, Any]]:
    """Drive a session to its end, then its follow-ups (--narrow, --reduce, --workaround).

    Returns the result and the follow-ups' JSON by name (`narrow`, `reduce`, `workaround`), those that ran.
    """
    from tritonbisect.reports.display import make_ui
    from tritonbisect.session.session import drive

    if session.settings.executor.sandbox:
        from tritonbisect.builds.sandbox import announce

        echo(f"tritonbisect: {announce()}", err=True)
    ui = ui or make_ui()
    try:
        result = drive(session, ui)
    finally:
        ui.close()
    follow_ups = {"narrow": narrow_after(session, result, quiet=json_out),
                  "reduce": reduce_after(session, result, quiet=json_out),
                  "workaround": workaround_after(session, result, quiet=json_out)}
    return result, {name: data for name, data in follow_ups.items() if data is not None}


def narrow_after(session: Session, result: SessionResult, *, quiet: bool) -> dict[str, Any] | None:
    """--narrow: name the compiler pass the culprit changed; a failure is a note."""
    if not session.settings.follow_ups.narrow or result.status != "found":
        return None
    from tritonbisect.commands.narrow import echo_narrowing, echo_time_narrowing
    from tritonbisect.core.errors import TritonBisectError
    from tritonbisect.narrow.narrowing import narrow_session, wants_time

    timed = wants_time(session)  # a compile-time culprit: which part of the compile grew
    try:
        narrowed = narrow_session(session, time_it=timed)
    except TritonBisectError as exc:
        echo(f"tritonbisect: --narrow: {exc}", err=True)
        return None
    if not quiet:
        (echo_time_narrowing if timed else echo_narrowing)(narrowed)
    return narrowed


def reduce_after(session: Session, result: SessionResult, *, quiet: bool) -> dict[str, Any] | None:
    """--reduce: shrink the oracle with the culprit's parent and the culprit from their cached
    builds, into SESSION_DIR/reduced; a failure is a note (the culprit stands)."""
    if not session.settings.follow_ups.reduce.enabled or result.status != "found":
        return None
    import shutil
    import tempfile
    import time
    from pathlib import Path

    from tritonbisect.commands.reduce import echo_reduced, reduced_record
    from tritonbisect.core.errors import TritonBisectError
    from tritonbisect.reduce import oracle_io
    from tritonbisect.reduce.candidate_runner import Settings
    from tritonbisect.reduce.driver import NotReproducible
    from tritonbisect.reduce.from_session import endpoints
    from tritonbisect.reduce.reduction import run_reduction

    t0 = time.monotonic()
    scratch = Path(tempfile.mkdtemp(prefix="tritonbisect-reduce-envs-"))
    try:
        ends = endpoints(session, scratch)
        given = session.settings.follow_ups.reduce
        settings = Settings(ends.good_python, ends.bad_python, given.jobs, given.timeout,
                            codegen_thresholds=ends.codegen_thresholds)
        echo("tritonbisect: --reduce: shrinking the oracle with the culprit and its parent ...", err=True)
        out = Path(session.dir) / "reduced"
        shutil.rmtree(out, ignore_errors=True)
        result_ = run_reduction(oracle_io.load(ends.oracle), settings, out, tuple(given.levels), env=ends.env,
                                progress=lambda line: echo(f"[{time.monotonic() - t0:6.0f}s] {line}", err=True))
    except NotReproducible as exc:
        echo(f"tritonbisect: --reduce: not reproducible with the cached builds: {exc}", err=True)
        return None
    except TritonBisectError as exc:
        echo(f"tritonbisect: --reduce: {exc}", err=True)
        return None
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    record = reduced_record(result_, ends.culprit, ends.parent)
    session.extra["reduce"] = record
    session.save()
    if not quiet:
        echo_reduced(result_)
    return record


def workaround_after(session: Session, result: SessionResult, *, quiet: bool) -> dict[str, Any] | None:
    """--workaround: the changes that make the culprit's cached build pass the oracle, measured
    against its parent's; a failure is a note (the culprit stands)."""
    if not getattr(session.settings.follow_ups, "workaround", False) or result.status != "found":
        return None
    import shutil
    import tempfile
    from pathlib import Path

    from tritonbisect.commands.workaround import search_and_print
    from tritonbisect.core.errors import TritonBisectError
    from tritonbisect.reduce import oracle_io
    from tritonbisect.reduce.from_session import endpoints
    from tritonbisect.workaround.search import Settings

    scratch = Path(tempfile.mkdtemp(prefix="tritonbisect-workaround-envs-"))
    try:
        ends = endpoints(session, scratch)
        test = session.settings.test
        settings = Settings(ends.bad_python, ends.good_python, env=dict(ends.env),
                            check_codegen="codegen" in (test.check or ()), thresholds=tuple(ends.codegen_thresholds))
        click.echo("tritonbisect: --workaround: looking for a change that makes the culprit's build pass ...", err=True)
        data = search_and_print(oracle_io.load(ends.oracle), settings, Path(session.settings.workdir), json_out=False,
                                quiet=quiet)
    except click.exceptions.Exit:
        return None  # nothing to work around: said on stderr
    except TritonBisectError as exc:
        click.echo(f"tritonbisect: --workaround: {exc}", err=True)
        return None
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    record = {"culprit": ends.culprit, "parent": ends.parent,
              **{k: data.get(k) for k in ("workarounds", "tried", "seconds", "seconds_to_first", "bad_triton",
                                          "good_triton", "recorded")}}
    session.extra["workaround"] = record
    session.save()
    return record


# a session's files may have been edited (by hand, or by a test that can write the workdir):
# what reads them ends in one line, not a traceback
_SESSION_FILES = unexpected_shapes("the session's session.json or journal.jsonl",
                                   "were they edited? start the bisect again if so")


@_SESSION_FILES
def summary(session: Session, result: SessionResult) -> str:
    lines = []
    if result.status == "found":
        subject = ""
        phase = next((p for p in session.phases() if p.spec.name == result.phase), None)
        if phase is not None and result.culprit:
            try:
                from tritonbisect.core.history import History

                subject = " " + History(phase.spec.repo).commit_info(result.culprit).subject
            except Exception:  # noqa: BLE001
                subject = ""
        # --wheels only ends at the nightlies' bracket: its culprit is the first bad nightly
        label = "first bad nightly" if result.phase == "nightlies" else "culprit"
        if session.settings.verdicts.regress == "fixed":
            label = "first fixed nightly" if result.phase == "nightlies" else "fixed by"
        lines.append(f"{label}: {result.culprit}{subject}")
        post = session.extra.get("posterior", {}).get(result.phase) or {}
        prob = f" (P = {post['probability']:.3f})" if post.get("probability") is not None else ""
        lines.append(f"confidence: {result.confidence}{prob}")
        if result.confidence == "low":
            lines.append(f"low confidence (exit {result.exit_code}): {result.reason}")
    elif result.status == "inconclusive":
        from tritonbisect.session.evidence import candidate_states, candidates_summary

        records = [r for r in session.records() if r.get("phase") == result.phase]
        states = candidate_states(records, result.candidates)
        lines.append(
            f"inconclusive: the culprit is one of {len(result.candidates)} commits "
            f"({candidates_summary(states)}):"
        )
        lines.extend(f"  {c}  {states[c]}" for c in result.candidates)
    else:
        lines.append(f"{result.status}: {result.reason}")
    if session.extra.get("cases"):  # a test that reports cases: the culprit of each
        lines.extend(_case_lines(session, result.phase))
    for name, hint in (session.extra.get("hint") or {}).items():
        lines.append(f"hint ({hint.get('described')}), phase {name}: "
                     + (hint.get("verdict") or f"weighed {hint.get('commits')} commits"))
    if session.extra.get("revert"):  # --verify-revert
        from tritonbisect.session.revert_check import summary_lines

        lines.extend(summary_lines(session))
    if session.extra.get("pins"):  # the LLVMs the culprits moved, the fork patches replayed
        from tritonbisect.reports.pins import summary_lines as pin_summary

        lines.extend(pin_summary(session))
    c = session.counters()
    if session.extra.get("wheels_mode") is not None:
        from tritonbisect.reports.published_steps import summary_line

        lines.append(summary_line(session))
    lines.append(
        f"{counted(c['tests'], 'test run')}, {counted(c['builds'], 'build')}; "
        f"full report: tritonbisect report {session.id}"
        + workdir_flag(session)
    )
    return "\n".join(lines)


def _case_lines(session: Session, phase_name: str) -> list[str]:
    from tritonbisect.reports.case_tables import summary_lines

    phase = next((p for p in session.phases() if p.spec.name == phase_name), None)
    subjects: dict[str, str] = {}
    if phase is not None:
        try:
            from tritonbisect.core.history import History

            state = (session.extra.get("cases") or {}).get(phase_name) or {}
            subjects = History(phase.spec.repo).subjects(list(state.get("culprits") or []))
        except Exception:  # noqa: BLE001 - the repository may be gone: no subjects then
            subjects = {}
    return summary_lines(session, phase_name, lambda c: subjects.get(c, ""))


# --- resume / status / report ------------------------------------------------------------

_workdir_option = click.option(
    "--workdir",
    type=click.Path(file_okay=False, path_type=Path),
    help="Where sessions live (default: $TRITONBISECT_HOME or the user cache dir).",
)


@click.command("resume")
@click.argument("session_id", metavar="[SESSION]", required=False)
@_workdir_option
@click.option("--json", "json_out", is_flag=True, help="Print one JSON object with the result.")
def resume_cmd(session_id: str | None, workdir: Path | None, json_out: bool) -> None:
    """Continue an interrupted session (the latest when SESSION is omitted)."""
    from tritonbisect.session.session import Session

    session = Session.open(resolve_workdir(workdir), session_id)
    session.journal.records()  # a corrupt journal is reported before anything runs
    if session.settings.test.manual:
        from tritonbisect.session.manual import require_terminal

        require_terminal()
    execute(session, json_out=json_out)


@click.command("status")
@click.argument("session_id", metavar="[SESSION]", required=False)
@_workdir_option
@click.option("--json", "json_out", is_flag=True, help="Print the session's state as one JSON object.")
@_SESSION_FILES
def status_cmd(session_id: str | None, workdir: Path | None, json_out: bool) -> None:
    """Show where a session stands (the latest when SESSION is omitted)."""
    from tritonbisect.reports.display import format_eta
    from tritonbisect.session.session import Session, counters_of

    session = Session.open(resolve_workdir(workdir), session_id)
    records = session.records()
    running = session.lock.is_locked_elsewhere()
    counters = counters_of(records)  # the journal is read once
    from tritonbisect.reports.version_names import VersionNames

    names = VersionNames.of(session)  # `wheels`: its versions, not the ladder's commits
    if json_out:
        payload = {
            "session": session.id,
            "running": running,
            "created": session.created,
            "counters": counters,
            "phases": [p.to_dict() for p in session.phases()],
            "last_steps": records[-10:],
            "posterior": session.extra.get("posterior", {}),
            "pins": session.extra.get("pins") or {},
            **_outcome_of(session),
        }
        if names:  # what a version cost is an install (a download, once), not a build
            from tritonbisect.reports.version_names import Installs

            installs = Installs.of(session.dir, records)
            payload["counters"] = {"tests": counters["tests"], "installs": installs.installs,
                                   "downloads": installs.downloads, "download_mb": installs.megabytes,
                                   "steps": counters["steps"], "rounds": counters["rounds"]}
        echo(json.dumps(names.in_versions(payload) if names else payload))
        return
    echo(f"session {session.id} ({'running now' if running else 'not running'})")
    echo(f"  created {session.created}; dir {session.dir}")
    if session.argv:
        echo(f"  command: tritonbisect {' '.join(session.argv)}")
    for p in session.phases():
        line = f"  phase {p.spec.name}: {p.status}"
        if p.range_size is not None:
            line += f", {counted(p.range_size, 'version' if names else 'commit')} in range"
        if p.culprit:
            line += f", {'first bad version ' + names.name(p.culprit) if names else 'culprit ' + p.culprit}"
            line += f" (confidence {p.confidence})"
        if p.status == "inconclusive":
            line += f", {len(p.candidates)} candidates"
            if names:
                line += f" ({', '.join(names.versions(p.candidates))})"
        echo(line)
        if p.reason:
            echo(f"    {names.scrub(p.reason) if names else p.reason}")
        from tritonbisect.reports.pins import phase_pins, pin_lines

        for pin_line in pin_lines(phase_pins(session, p.spec.name)):
            echo(f"    {pin_line}")
        if (session.extra.get("cases") or {}).get(p.spec.name):  # a test that reports cases
            from tritonbisect.reports.case_tables import summary_lines

            for case_line in summary_lines(session, p.spec.name):
                if not case_line.startswith("cases:"):  # the reason above counts them already
                    echo(f"    {case_line.strip()}")
    total = sum(float(r.get("seconds") or 0) for r in records)
    if names:
        from tritonbisect.reports.version_names import Installs

        cost = Installs.of(session.dir, records).said()
    else:
        cost = f"{counted(counters['builds'], 'build')} ({counters['cached_builds']} cached)"
    echo(f"  {counted(counters['steps'], 'step')}, {counted(counters['tests'], 'test run')}, {cost}, "
         f"{format_eta(total)} of step time")
    if not counters["steps"] and any(p.status in ("found", "inconclusive") for p in session.phases()):
        echo("  the journal holds no step: the answer above rests on no recorded test (emptied or lost); "
             "run the bisect again before acting on it")
    shown = records[-_STATUS_STEPS:]
    if shown:
        more = f" of {len(records)}" if len(records) > len(shown) else ""
        echo(f"  last {len(shown)}{more} journal records (every step: tritonbisect report {session.id}"
                   f"{workdir_flag(session)}):")
    for rec in shown:
        echo(f"    {_status_line(rec, names.name if names else None)}")
    if not running and any(p.status in ("pending", "running", "aborted") for p in session.phases()):
        echo(f"  resume with: {session.resume_command()}")
    from tritonbisect.session.cleanup import describe

    kept = describe(session, session.dir.parent.parent)
    if kept and names:  # the ladder's checkouts are the tool's own scratch space
        echo(f"  its scratch folders are kept; remove them with: tritonbisect clean {session.id}"
             f"{workdir_flag(session)}")
    elif kept:
        echo("\n".join(kept))
        echo(f"  remove them with: tritonbisect clean {session.id}{workdir_flag(session)}")


_STATUS_STEPS = 8  # journal records `status` shows


def _status_line(rec: dict[str, Any], name: Callable[[str], str] | None = None) -> str:
    """One journal record for `status`: a step's verdict, or a person's correction; `name`
    names a commit (a version of `wheels`), else its short sha."""
    commit = str(rec.get("commit") or "")
    head = f"#{rec.get('seq')} [{rec.get('phase')}/{rec.get('role')}] {name(commit) if name else commit[:12]}"
    if rec.get("role") == "undo":
        why = f" ({rec['reason']})" if rec.get("reason") else ""
        return f"{head} takes back #{rec.get('undoes')}{why}"
    if rec.get("role") == "mark":
        why = f" ({rec['reason']})" if rec.get("reason") else ""
        return f"{head} marked {rec.get('verdict')}{why}"
    from tritonbisect.core.perf import change_text, summary_of

    change = change_text(summary_of(rec))  # --regress perf: the change measured (its interval)
    return f"{head} {rec.get('verdict')} ({rec.get('kind')}{', ' + change if change else ''})"


def _outcome_of(session: Session) -> dict[str, Any]:
    """The outcome and exit code of a finished session (nothing while it is not finished)."""
    from tritonbisect.session.phases import RESUMABLE

    if not session.phases() or any(p.status in RESUMABLE for p in session.phases()):
        return {}
    result = session.result()
    return {"outcome": result.outcome, "exit_code": result.exit_code}


@click.command("report")
@click.argument("session_id", metavar="[SESSION]", required=False)
@_workdir_option
@click.option("--format", "fmt", type=click.Choice(["md", "json"]), default="md", show_default=True,
              help="md: Markdown, ready to paste into a GitHub issue; json: the same facts as one JSON object.")
@click.option("--output", "-o", type=click.Path(dir_okay=False, path_type=Path), help="Write to a file instead of stdout.")
@_SESSION_FILES
def report_cmd(session_id: str | None, workdir: Path | None, fmt: str, output: Path | None) -> None:
    """A report of a session: Markdown for a GitHub issue, or JSON."""
    from tritonbisect.reports.session_report import render_json, render_markdown
    from tritonbisect.session.session import Session

    session = Session.open(resolve_workdir(workdir), session_id)
    text = render_markdown(session) if fmt == "md" else json.dumps(render_json(session), indent=2) + "\n"
    if output:
        from tritonbisect.core.oserrors import at_path

        with at_path(output):
            output.write_text(text, encoding="utf-8")
        echo(f"report written to {output}", err=True)
    else:
        echo(text, nl=False)


# --- demo --------------------------------------------------------------------------------


@click.command("demo")
@click.option("--jobs", "-j", type=int, default=1, show_default=True, help="Workers testing commits in parallel, each in its own worktree.")
@click.option("--keep", is_flag=True, help="Keep the sample repository and session afterwards.")
@click.option("--json", "json_out", is_flag=True, help="Print the JSON report instead of Markdown.")
def demo_cmd(jobs: int, keep: bool, json_out: bool) -> None:
    """Bisect an embedded sample repository: a planted crash, a cluster that does not build."""
    import shutil
    import tempfile

    from tritonbisect.demo import demo_phase, make_demo_repo
    from tritonbisect.reports.display import make_ui
    from tritonbisect.reports.session_report import render_json, render_markdown
    from tritonbisect.session.session import Session, drive

    tmp = Path(tempfile.mkdtemp(prefix="tritonbisect-demo-"))
    try:
        sample = make_demo_repo(tmp / "sample")
        settings = bisect_settings(jobs=max(1, jobs), workdir=str(tmp / "work"), test=sample.test)
        session = Session.create(
            settings.workdir, settings, [demo_phase(sample)], argv=["demo"]
        )
        echo(
            f"tritonbisect demo: {sample.n_commits} commits in {sample.repo}; "
            f"planted regression at {sample.culprit[:12]}, commits "
            f"{', '.join(c[:7] for c in sample.broken)} do not build",
            err=True,
        )
        ui = make_ui()
        try:
            result = drive(session, ui)
        finally:
            ui.close()
        if json_out:
            echo(json.dumps(render_json(session), indent=2))
        else:
            echo(render_markdown(session), nl=False)
        ok = result.culprit == sample.culprit
        echo(
            f"tritonbisect demo: {'found the planted regression' if ok else 'WRONG culprit'}"
            + (f"; files kept in {tmp}" if keep else ""),
            err=True,
        )
        if ok:
            echo("next, on your own repository: tritonbisect run --repo PATH --good GOOD --bad BAD "
                 "--build 'make -j16' --test ./check.sh\n"
                 "  or from a trace of your program: tritonbisect trace --out trace/ -- python my_app.py "
                 "(README.md, 'Three ways in')", err=True)
        code = result.exit_code if ok else 4
    finally:
        if not keep:
            shutil.rmtree(tmp, ignore_errors=True)
    raise click.exceptions.Exit(code)


COMMANDS: list[click.Command] = [resume_cmd, status_cmd, report_cmd, demo_cmd]
