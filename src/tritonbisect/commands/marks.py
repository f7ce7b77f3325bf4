"""Correct, inspect, replay: `mark`, `undo`, `log`, `replay`.

Thin: parse options, call session/corrections.py and session/bisect_log.py. Exit codes as the
other commands: 0 done, 2 bad input (unknown commit, a mark that contradicts another, a
running session), and `replay` those of `run`.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from tritonbisect.commands.echo import echo
from tritonbisect.core.errors import InputError, unexpected_shapes
from tritonbisect.options.bisect_options import common_bisect_options, resolve_workdir

if TYPE_CHECKING:  # pragma: no cover
    from tritonbisect.session.session import Session

_workdir_option = click.option(
    "--workdir",
    type=click.Path(file_okay=False, path_type=Path),
    help="Where sessions live (default: $TRITONBISECT_HOME or the user cache dir).",
)


def _open(session_id: str | None, workdir: Path | None):
    from tritonbisect.session.session import Session

    session = Session.open(resolve_workdir(workdir), session_id)
    session.journal.records()  # a corrupt journal is reported before anything is written
    return session


@click.command("mark")
@click.argument("args", nargs=-1, metavar="[SESSION] COMMIT good|bad|skip")
@click.option("--why", metavar="TEXT", help="Why: kept in the journal and shown by `log` and the report.")
@click.option("--phase", "phase_name", metavar="NAME", help="The phase the commit belongs to (default: the latest whose range holds it).")
@_workdir_option
def mark_cmd(args: tuple[str, ...], why: str | None, phase_name: str | None, workdir: Path | None) -> None:
    """Correct a verdict: COMMIT is good, bad or to be skipped, whatever its tests said.

    The mark is a new journal record (nothing is rewritten); it beats every test verdict of
    COMMIT. The phase is reopened: `tritonbisect resume` continues from the corrected state.
    """
    from tritonbisect.session.corrections import MARK_VERDICTS, mark

    if len(args) not in (2, 3):
        raise InputError("usage: tritonbisect mark [SESSION] COMMIT good|bad|skip [--why TEXT]")
    session_id, commit, verdict = (None, *args) if len(args) == 2 else args
    if verdict not in MARK_VERDICTS:
        raise InputError(f"the verdict is one of {', '.join(MARK_VERDICTS)}, not {verdict!r}")
    session = _open(session_id, workdir)
    rec = mark(session, commit, verdict, why, phase_name)
    was = f" (was {rec['was']})" if rec.get("was") and rec["was"] != verdict else ""
    echo(
        f"marked {rec['commit'][:12]} {verdict}{was} in session {session.id}, phase {rec['phase']} "
        f"(journal #{rec['seq']}); continue with: {session.resume_command()}"
    )


@click.command("undo")
@click.argument("session_id", metavar="[SESSION]", required=False)
@click.option("--seq", type=int, metavar="N", help="The journal record to take back (default: the latest verdict still in force).")
@click.option("--why", metavar="TEXT", help="Why: kept in the journal.")
@_workdir_option
def undo_cmd(session_id: str | None, seq: int | None, why: str | None, workdir: Path | None) -> None:
    """Take back a verdict (a mark, an answer given by hand, or a test's) with a new record.

    `tritonbisect log` and `status` show the records' numbers. The phase is reopened:
    `tritonbisect resume` continues without that verdict (and may test the commit again).
    """
    from tritonbisect.session.corrections import undo

    session = _open(session_id, workdir)
    rec, target = undo(session, seq, why)
    echo(
        f"undid #{target.get('seq')} ({str(target.get('commit'))[:12]} {target.get('verdict')}, "
        f"{target.get('role')}) in session {session.id} (journal #{rec['seq']}); "
        f"continue with: {session.resume_command()}"
    )


@click.command("log")
@click.argument("session_id", metavar="[SESSION]", required=False)
@click.option("--phase", "phase_name", metavar="NAME", help="Only this phase (a log per phase otherwise).")
@_workdir_option
def log_cmd(session_id: str | None, phase_name: str | None, workdir: Path | None) -> None:
    """The verdicts of a session in `git bisect log` form (`git bisect replay` takes it)."""
    session = _open(session_id, workdir)
    with unexpected_shapes(f"session {session.id}'s journal.jsonl", "was it edited?"):
        text = render_session_log(session, phase_name)
    echo(text, nl=False)


def render_session_log(session: Session, phase_name: str | None = None) -> str:
    from tritonbisect.core.history import History
    from tritonbisect.search import bayes
    from tritonbisect.session.bisect_log import render
    from tritonbisect.session.corrections import phase_candidates
    from tritonbisect.session.evidence import evidence_of
    from tritonbisect.session.flakiness import flake_model_of

    phases = [p for p in session.phases() if phase_name in (None, p.spec.name)]
    if not phases:
        raise InputError(f"session {session.id} has no phase {phase_name!r}")
    records = session.records()
    parts = []
    for phase in phases:
        recs = [r for r in records if r.get("phase") == phase.spec.name]
        history = History(phase.spec.repo)
        shas = [phase.spec.good, phase.spec.bad, *(str(r.get("commit")) for r in recs if r.get("commit"))]
        try:
            subjects = history.subjects(list(dict.fromkeys(shas)))
        except Exception:  # noqa: BLE001 - a subject is decoration only
            subjects = {}
        p_bad = None
        ev = evidence_of(recs)
        if ev.flakiness_seen:
            try:
                post = bayes.posterior(phase_candidates(phase), ev.counts,
                                       model=flake_model_of(session.settings.search), marks=ev.marks)
                p_bad = post.p_bad
            except (ValueError, InputError):
                p_bad = None
        parts.append(render(
            session_id=session.id, phase=phase.spec.name, repo=str(phase.spec.repo),
            good=phase.spec.good, bad=phase.spec.bad, records=recs,
            subject=_lookup(subjects), first_parent=phase.spec.first_parent,
            p_bad=p_bad, status=phase.status, culprit=phase.culprit,
            candidates=phase.candidates,
        ))
    return "\n".join(parts)


@click.command("replay")
@click.argument("logfile", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--repo", type=click.Path(file_okay=False, path_type=Path), default=".", show_default=True, help="The repository the log is of (never modified).")
@click.option("--build", "build_cmd", metavar="CMD", help="Build command (bash), run in each commit's checkout before the test.")
@common_bisect_options
def replay_cmd(logfile: Path, repo: Path, build_cmd: str | None, **kwargs: Any) -> None:
    """Start a session from a `git bisect log`: its verdicts are kept, the search goes on.

    Move an interrupted `git bisect` (by hand or `git bisect run`) over: the log's first good
    and bad commits are the range, every later verdict is recorded as given, and the rest is
    tested with --test (or judged by hand without it).
    """
    from tritonbisect.builds.recipes import recipe_from_config
    from tritonbisect.commands.engine import execute
    from tritonbisect.core.clock import now_iso
    from tritonbisect.core.history import History
    from tritonbisect.options.bisect_options import bisect_settings, wants_json
    from tritonbisect.session.bisect_log import BisectLogError, parse, replayed_records
    from tritonbisect.session.session import PhaseSpec, Session, candidates_of

    try:
        text = logfile.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise InputError(f"git bisect log {logfile} does not exist") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"cannot read git bisect log {logfile}: {exc}") from None
    try:
        log = parse(text)
    except BisectLogError as exc:
        raise InputError(f"{logfile} is not a usable git bisect log: {exc}") from None
    if not log.good or not log.bad:
        missing = "good" if not log.good else "bad"
        raise InputError(f"{logfile} names no {missing} commit yet; a range needs both")
    if log.first_parent:
        kwargs["first_parent"] = True
    settings = bisect_settings(**kwargs)
    history = History(repo)

    def resolve(line: int, rev: str) -> list[str]:
        try:
            if ".." in rev:  # `git bisect skip A..B` names every commit of the range
                left, _, right = rev.partition("..")
                return [history.resolve(c) for c in git_rev_list(history.root, left, right)]
            return [history.resolve(rev)]
        except InputError as exc:
            raise InputError(f"{logfile} line {line}: {exc.message}") from None

    good = resolve(log.good[0][0], log.good[0][1])[0]
    bad = resolve(log.bad[0][0], log.bad[0][1])[0]
    cands = candidates_of(history, good, bad, first_parent=settings.search.first_parent)  # validates
    in_set = set(cands.order)
    spec = settings.test_spec(repo=Path(history.root), bad=bad, history=history)
    recipe = recipe_from_config("command", {"build": build_cmd, "test": spec.to_dict()})
    phase = PhaseSpec(name="main", repo=Path(history.root), good=good, bad=bad,
                      recipe_name=recipe.name, recipe_config=recipe.config(),
                      first_parent=settings.search.first_parent)
    records, notes = replayed_records(
        log, phase="main", good=good, bad=bad, resolve=resolve, in_range=in_set.__contains__,
        source=logfile.name, stamp=now_iso("milliseconds"),
    )
    from tritonbisect.session.phase_hint import check_hint

    check_hint(settings.hint, [phase])
    session = Session.create(settings.workdir, settings, [phase], argv=list(sys.argv[1:]))
    for rec in records:
        session.journal.append(rec)
    for note in notes:
        echo(f"tritonbisect replay: {note}", err=True)
    echo(
        f"tritonbisect replay: {len(records) - 2} verdicts from {logfile} inside "
        f"{good[:12]}..{bad[:12]} ({len(cands.order)} commits); going on",
        err=True,
    )
    execute(session, json_out=wants_json(kwargs))


def git_rev_list(root: Path, left: str, right: str) -> list[str]:
    from tritonbisect.core.gitrun import GitError, git

    try:
        out = git(["rev-list", f"{left or 'HEAD'}..{right or 'HEAD'}", "--"], cwd=root)
    except GitError:
        raise InputError(f"unknown range {left}..{right} in {root}") from None
    return out.split()


COMMANDS: list[click.Command] = [mark_cmd, undo_cmd, log_cmd, replay_cmd]


def _lookup(subjects: Mapping[str, str]) -> Callable[[str], str]:
    """A commit's subject, "" when unknown."""
    return lambda commit: subjects.get(commit, "")
