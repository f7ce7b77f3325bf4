"""`tritonbisect narrow SESSION`: the compiler pass where the culprit's IR first differs."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click

from tritonbisect.commands.echo import echo
from tritonbisect.options.bisect_options import resolve_workdir


def echo_narrowing(result: dict[str, Any]) -> None:
    first = result.get("first_difference")
    passes = f"{result['passes']['parent']} / {result['passes']['culprit']} passes, {result['seconds']}s"
    versions = result.get("versions")
    if versions:  # `wheels`: the published versions, never the ladder's commits
        echo(f"narrowed {versions['package']} {versions['culprit']} against the version before it, "
                   f"{versions['parent']} ({passes}, from the published wheels)")
    else:
        echo(f"narrowed {result['culprit'][:12]} against its parent {result['parent'][:12]} "
                   f"({passes}, builds: {result['builds']})")
    echo(f"  first pass whose output differs: {first['pass'] if first else 'none'}"
               + (f" ({first['note']})" if first else ""))
    if result.get("after_dumps"):  # every pass and the PTX agree: ptxas
        click.echo(f"  where: {result['after_dumps']['where']} ({result['after_dumps']['note']})")
    if result.get("last_agreeing"):
        echo(f"  last pass where they agree:      {result['last_agreeing']}")
    if result.get("running_pass"):
        echo(f"  running when the culprit failed:  {result['running_pass']}")
    failed = result.get("failed") or {}
    if failed.get("after_mlir"):
        from tritonbisect.narrow.failure import failure_line

        echo(f"  the culprit failed {failure_line(failed)}")
    for key, label in (("added", "only in the culprit's pipeline"), ("removed", "only in the parent's pipeline"),
                       ("moved", "moved to another place")):
        if result.get(key):
            echo(f"  {label}: {', '.join(result[key])}")
    if result.get("renamed"):
        echo(f"  renamed: {', '.join(f'{a} → {b}' for a, b in result['renamed'])}")
    for stat in result.get("codegen") or []:
        where = stat["pass"] or "no dumped pass"
        echo(f"  {stat['text']}: first differs after {where} ({stat['note']})")
    lit = result.get("lit_test")
    if lit and lit.get("path"):
        echo(f"  lit test of that pass (input just before it, CHECK lines from the good Triton's output): "
             f"{lit['path']}\n    {lit['run']}")
    hint = result.get("prefer_pass")
    if hint:
        weighs = (f" (weighs {hint['commits']} commits touching {len(hint['files'])} files)"
                  if hint.get("commits") is not None else "")
        echo(f"  next, with the pass as a hint{weighs}: {hint['command']}"
             + (f"\n  ({hint['note']})" if hint.get("note") else ""))
    if first and first.get("output_diff"):
        echo(first["output_diff"])


def echo_time_narrowing(result: dict[str, Any]) -> None:
    from tritonbisect.reports.where import time_line

    versions = result.get("versions")
    compile_ = result.get("compile") or {}
    p, c = compile_.get("parent") or {}, compile_.get("culprit") or {}
    if versions:
        echo(f"timed {versions['package']} {versions['culprit']} against the version before it, {versions['parent']} "
             f"({result['seconds']}s, from the published wheels)")
    else:
        echo(f"timed {result['culprit'][:12]} against its parent {result['parent'][:12]} "
             f"({result['seconds']}s, builds: {result['builds']})")
    if p.get("seconds") is not None and c.get("seconds") is not None:
        echo(f"  compile: {p['seconds']:.3f} s → {c['seconds']:.3f} s wall, "
             f"{p['cpu_seconds']:.3f} s → {c['cpu_seconds']:.3f} s of CPU (the fastest of each side's compiles)")
    echo(f"  grew most: {time_line(result)}")
    stages = sorted(set(p.get("stages") or {}) | set(c.get("stages") or {}),
                    key=lambda st: list(c.get("stages") or p.get("stages") or {}).index(st)
                    if st in (c.get("stages") or p.get("stages") or {}) else 99)
    if stages:
        def cpu(side: dict[str, Any], st: str) -> str:
            value = ((side.get("stages") or {}).get(st) or {}).get("cpu")
            return "—" if value is None else f"{value:.3f}"
        echo("  stages, s of CPU: " + ", ".join(f"{st} {cpu(p, st)} → {cpu(c, st)}" for st in stages))
    for part in (result.get("parts") or [])[1:6]:
        if part["change"] > 0:
            echo(f"  then: {part['text']}: {part['parent']:.3f} s → {part['culprit']:.3f} s (+{part['change']:.3f} s)")


@click.command("narrow")
@click.argument("session_id", metavar="[SESSION]", required=False)
@click.option("--workdir", type=click.Path(file_okay=False, path_type=Path), help="Where sessions live (default: $TRITONBISECT_HOME or the user cache dir).")
@click.option("--timeout", type=float, default=600.0, show_default=True, metavar="S", help="Per-compile timeout in seconds.")
@click.option("--keep", type=click.Path(file_okay=False, path_type=Path), metavar="DIR", help="Keep both compiles' full IR dumps (DIR/*/parent-work/child.stderr, .../culprit-work/child.stderr) and artifacts.")
@click.option("--time/--no-time", "time_it", default=None, help="Name the pass (or LLVM or ptxas stage) whose compile time grew most from the parent to the culprit, with both times (MLIR_ENABLE_TIMING=1, LLVM_ENABLE_TIMING=1); the default for a --regress compile-time session.")
@click.option("--samples", type=click.IntRange(1, 100), default=None, metavar="N", help="With --time: timed compiles on each side, the fastest counting (default 5).")
@click.option("--json", "json_out", is_flag=True, help="Print the result as JSON.")
def narrow_cmd(session_id: str | None, workdir: Path | None, timeout: float, keep: Path | None,
               time_it: bool | None, samples: int | None, json_out: bool) -> None:
    """Name the compiler pass where the culprit's IR first differs from its parent's (cached builds, MLIR_ENABLE_DUMP=1), or with --time the one whose compile time grew most."""
    from tritonbisect.core.errors import InputError
    from tritonbisect.narrow.narrowing import narrow_session, wants_time
    from tritonbisect.narrow.timing import DEFAULT_SAMPLES
    from tritonbisect.session.session import Session

    session = Session.open(resolve_workdir(workdir), session_id)
    timed = wants_time(session) if time_it is None else time_it
    if samples is not None and not timed:
        raise InputError("--samples goes with --time (the timed compiles of each side)")
    with session.locked():
        if keep is not None:
            keep.mkdir(parents=True, exist_ok=True)
        result = narrow_session(session, timeout=timeout, keep=keep, time_it=timed,
                                samples=samples or DEFAULT_SAMPLES)
    if keep is not None:
        result["kept"] = str(keep)
    if json_out:
        echo(json.dumps(result, indent=1))
    elif timed:
        echo_time_narrowing(result)
    else:
        echo_narrowing(result)


COMMANDS: list[click.Command] = [narrow_cmd]
