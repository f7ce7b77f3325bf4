"""`tritonbisect hunt`: one night of CI regression hunting (see `hunt.night`).

Thin: parse the options, pick the bisector (a `HuntTarget` of hunt/target_table.py), run the night,
write its outputs, exit with the documented code:

    0 nothing new (green, fixed, a known regression, a failure that did not confirm)
    5 a new regression, its culprit named      1 inconclusive (or the head untestable)
    3 the last good no longer passes (an environment change), or no known good
    2 usage, 4 aborted, 130 interrupted (the engine's codes)
"""

from __future__ import annotations

import hashlib
import json
import os
import shlex
from pathlib import Path
from typing import Any

import click
from click.core import ParameterSource

from tritonbisect.commands.echo import echo
from tritonbisect.core.errors import InputError
from tritonbisect.options.bisect_options import (
    BisectSettings,
    bisect_settings,
    common_bisect_options,
    wants_json,
)
from tritonbisect.options.launch import resolve_test
from tritonbisect.oracles.kinds import OracleKind, compiles

_dir = click.Path(file_okay=False, path_type=Path)
_file = click.Path(dir_okay=False, path_type=Path)

# options of the hunt itself: not passed on to the bisect command a report reproduces
HUNT_ONLY = {"state_path", "bad", "good", "confirm", "summary", "issue_body", "github_output", "json_out"}


def bisector_options(f: Any) -> Any:
    """The options of every bisector the hunt can use, as each brings them (its hunt target,
    hunt/target_table.py): the hunt names no domain itself."""
    from tritonbisect.hunt.target_table import hunt_targets

    for factory in reversed(hunt_targets()):
        for option in reversed(factory.click_options):
            f = option(f)
    return f


def choose_target(ctx: click.Context, kw: dict[str, Any], settings: BisectSettings):
    """The night's target: the first of hunt/target_table.py's bisectors that the options
    choose; an option of another bisector given on the command line is refused."""
    from tritonbisect.hunt.target_table import hunt_targets

    factories = hunt_targets()
    factory = next(f for f in factories if f.chooses(kw))
    specific = frozenset().union(*(f.options for f in factories))
    for name in sorted(specific - factory.options):
        if ctx.get_parameter_source(name) in (ParameterSource.COMMANDLINE, ParameterSource.ENVIRONMENT):
            flag = _flag(ctx, name)
            owners = [f.kind for f in factories if name in f.options]
            raise InputError(
                f"{flag} does not go with the {factory.kind} bisector (it is an option of: "
                f"{', '.join(owners)}); the bisector is chosen by --torch-dir, --triton-dir or --repo"
            )
    return factory.create(kw, settings)


def _flag(ctx: click.Context, name: str) -> str:
    param = next(p for p in ctx.command.params if p.name == name)
    return max(param.opts, key=len)


def given_args(ctx: click.Context) -> list[tuple[str, list[str]]]:
    """The options given on the command line, minus the hunt's own, as (name, words): what
    the bisect command that does the hunt's bisect is given."""
    out: list[tuple[str, list[str]]] = []
    for param in ctx.command.params:
        if not isinstance(param, click.Option) or param.name in HUNT_ONLY or param.name is None:
            continue
        if ctx.get_parameter_source(param.name) not in (ParameterSource.COMMANDLINE, ParameterSource.ENVIRONMENT):
            continue
        value = ctx.params[param.name]
        flag = max(param.opts, key=len)
        if param.is_flag:
            if value:
                out.append((param.name, [flag]))
            elif param.secondary_opts:  # an on/off pair given as off (--no-...)
                out.append((param.name, [max(param.secondary_opts, key=len)]))
        elif param.multiple:
            for item in value:
                out.append((param.name, [flag, str(item)]))
        elif value is not None:
            out.append((param.name, [flag, str(value)]))
    return out


# dropped when the command is rewritten for another mode (--regress fixed: find the fix)
_MODE_OPTIONS = {"regress", "threshold", "significance", "max_samples", "higher_is_better", "repeat"}


def bisect_argv(command: str, args: list[tuple[str, list[str]]], good: str, bad: str,
                regress: str | None = None) -> list[str]:
    """`tritonbisect <command> ... --good G --bad B`, the bisect the hunt runs (or, with
    `regress`, the same bisect in that mode)."""
    out = [command]
    for name, words in args:
        if regress is None or name not in _MODE_OPTIONS:
            out += words
    out += ["--good", good, "--bad", bad]
    if regress is not None:
        out += ["--regress", regress]
    return out


# --- the command ------------------------------------------------------------------------


@click.command("hunt")
@click.option("--state", "state_path", type=_file, required=True, help="The hunt's memory (JSON, written atomically): last good, regressions found and their fate. Keep it with the workdir.")
@click.option("--bad", metavar="REV", help="The head to test tonight (default: HEAD of the repository).")
@click.option("--good", metavar="REV", help="A commit where the test passes: seeds a new state, or replaces the state's last good (after an environment change).")
@click.option("--confirm", type=click.IntRange(min=0), default=2, show_default=True, help="Re-test a red head this many times before bisecting; one pass and nothing is bisected (flaky).")
@click.option("--summary", type=_file, help="Write the night's Markdown summary here (it is also appended to $GITHUB_STEP_SUMMARY when set).")
@click.option("--issue-body", type=_file, help="Write the issue body of a new regression here (and a comment per fixed one beside it: <stem>.fixed-<sha12>.md).")
@click.option("--github-output", type=_file, help="Append the step outputs here (default: $GITHUB_OUTPUT when set).")
@bisector_options
@common_bisect_options
@click.pass_context
def hunt_cmd(ctx: click.Context, state_path: Path, bad: str | None, good: str | None, confirm: int,
             summary: Path | None, issue_body: Path | None, github_output: Path | None, **kwargs: Any) -> None:
    """One night of CI regression hunting: test the head; bisect and report only what is new.

    Green: the head becomes the last good (one test). Red: re-tested --confirm times, the last
    good re-checked, then bisected in a normal session (resume/status/report work on it);
    each culprit is reported once. Exit: 0 nothing new, 5 new regression, 1 inconclusive,
    3 environment change, 2/4/130 as every command.
    """
    from tritonbisect.core.process import cancel_all
    from tritonbisect.hunt.memory import HuntState, StateLock
    from tritonbisect.hunt.night import Night, NightOptions
    from tritonbisect.reports.display import make_ui
    from tritonbisect.session.session import InterruptedRun, _sigterm_as_interrupt

    if kwargs.get("manual") or not (kwargs.get("test") or kwargs.get("repro")):
        # a nightly job has nobody to judge by hand: refuse before the options turn manual on
        raise InputError("hunt needs a test: --test CMD (or --repro TRACE --kernel K); it cannot be judged by hand")
    if kwargs.get("verify_revert") is None:  # a culprit filed as an issue is proven by its revert
        kwargs["verify_revert"] = (kwargs.get("regress") or "fail") != "fixed"
    settings = bisect_settings(**kwargs)
    if settings.verdicts.regress == "fixed":
        raise InputError("hunt looks for regressions; --regress fixed is not for a hunt (use `run --regress fixed`)")
    if settings.follow_ups.reduce.enabled:
        raise InputError("--reduce is not for a hunt: run `tritonbisect reduce --session S` on the night's session")
    if settings.follow_ups.narrow:
        raise InputError("--narrow is not for a hunt: run `tritonbisect narrow SESSION` on the night's session")
    if settings.follow_ups.workaround:
        raise InputError("--workaround is not for a hunt: run `tritonbisect workaround ORACLE_DIR --bad-python PY` "
                         "with the night's culprit")
    if not settings.test.wanted:
        raise InputError("give the test to run: --test CMD (or --repro TRACE --kernel K)")
    target = choose_target(ctx, kwargs, settings)
    state_path = state_path.expanduser().resolve()
    hunt_dir = _hunt_dir(settings.workdir, state_path)
    head = target.head(bad)
    if settings.test.repro:
        spec = settings.test_spec(out_dir=hunt_dir / "oracle")
        target.test = spec.to_dict()
    else:
        target.test = resolve_test(settings, target.history, head)
    record_command = target.test.get("record_command")
    args = given_args(ctx)

    def reproduce(g: str, b: str, regress: str | None = None) -> list[str]:
        return bisect_argv(target.command, args, g, b, regress)

    def reproduce_line(g: str, b: str, regress: str | None = None) -> str:
        return f"cd {shlex.quote(os.getcwd())} && tritonbisect {shlex.join(reproduce(g, b, regress))}"

    ui = make_ui()
    restore = _sigterm_as_interrupt()
    try:
        with StateLock(state_path):
            state = HuntState.load(state_path)
            notes = state.check_target({**target.identity(), "regress": settings.verdicts.regress,
                                        "test": _test_identity(settings)})
            for note in notes:
                ui.note(note)
            night = Night(
                target, settings, state, NightOptions(bad=bad, good=good, confirm=confirm), ui,
                hunt_dir=hunt_dir, bisect_argv=reproduce, record_command=record_command,
            )
            try:
                result = night.run()
            except KeyboardInterrupt:
                cancel_all()
                raise InterruptedRun(
                    "interrupted; the hunt state is saved and the next night goes on from it"
                ) from None
            result.notes[:0] = notes
            step_summary = os.environ.get("GITHUB_STEP_SUMMARY")
            files = _write_outputs(result, state, target, reproduce_line, issue_body, summary,
                                   Path(step_summary) if step_summary else None)
    finally:
        restore()
        ui.close()
    from tritonbisect.hunt.outputs import github_outputs, result_json

    data = result_json(result, state, files)
    gh_out = github_output or (Path(os.environ["GITHUB_OUTPUT"]) if os.environ.get("GITHUB_OUTPUT") else None)
    if gh_out is not None:
        with open(gh_out, "a", encoding="utf-8") as f:
            f.write(github_outputs(data))
    if wants_json(kwargs):
        echo(json.dumps(data))
    else:
        echo(_plain(data))
    raise click.exceptions.Exit(result.exit_code)


def _test_identity(settings: BisectSettings) -> str:
    """The test as the user gave it (not the generated oracle's command)."""
    test = settings.test
    if test.command:
        return test.command
    words = [f"--repro {test.repro}", f"--kernel {test.kernel}"]
    if test.launch_id is not None:
        words.append(f"--launch-id {test.launch_id}")
    if compiles(test.oracle):  # --oracle compile or ir
        words.append(f"--oracle {test.oracle}")
    if test.oracle == OracleKind.IR:
        words.append(f"--from {test.ir_from}")
    return " ".join(words)


def _hunt_dir(workdir: Path, state_path: Path) -> Path:
    """Where one hunt keeps its nights' logs (and its oracle) inside the workdir."""
    digest = hashlib.sha256(str(state_path).encode()).hexdigest()[:8]
    return workdir / "hunt" / f"{state_path.stem}-{digest}"


def _write_outputs(result, state, target, reproduce_line, issue_body, summary, step_summary):
    from tritonbisect.hunt.outputs import write_files

    def parent_of(commit: str) -> str | None:
        try:
            return target.resolve(f"{commit}^1")
        except InputError:
            return None

    return write_files(
        result, state, subject=target.subject, reproduce=reproduce_line, parent_of=parent_of,
        issue_body_path=issue_body.expanduser().resolve() if issue_body else None,
        summary_file=summary.expanduser().resolve() if summary else None,
        step_summary=step_summary,
    )


def _plain(data: dict[str, Any]) -> str:
    lines = [f"hunt: {data['status']}: {data['message']}"]
    if data.get("last_good"):
        lines.append(f"last good: {data['last_good']}")
    lines.append(
        f"{data['tests']} test runs, {data['builds']} builds ({data['cached_builds']} cached) tonight"
        + (f"; session {data['session']}" if data.get("session") else "")
    )
    for issue in data.get("issues") or ([data["issue"]] if data.get("issue") else []):
        lines.append(f"issue: {issue['title']} (body: {issue['body_file']})")
    for note in data.get("notes") or []:
        lines.append(f"note: {note}")
    return "\n".join(lines)


COMMANDS: list[click.Command] = [hunt_cmd]
