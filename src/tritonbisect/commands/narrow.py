"""`tritonbisect narrow SESSION`: the compiler pass where the culprit's IR first differs."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click

from tritonbisect.commands.echo import echo
from tritonbisect.commands.options import resolve_workdir


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


@click.command("narrow")
@click.argument("session_id", metavar="[SESSION]", required=False)
@click.option("--workdir", type=click.Path(file_okay=False, path_type=Path), help="Where sessions live (default: $TRITONBISECT_HOME or the user cache dir).")
@click.option("--timeout", type=float, default=600.0, show_default=True, metavar="S", help="Per-compile timeout in seconds.")
@click.option("--keep", type=click.Path(file_okay=False, path_type=Path), metavar="DIR", help="Keep both compiles' full IR dumps (DIR/*/parent-work/child.stderr, .../culprit-work/child.stderr) and artifacts.")
@click.option("--json", "json_out", is_flag=True, help="Print the result as JSON.")
def narrow_cmd(session_id: str | None, workdir: Path | None, timeout: float, keep: Path | None, json_out: bool) -> None:
    """Name the compiler pass where the culprit's IR first differs from its parent's (cached builds, MLIR_ENABLE_DUMP=1)."""
    from tritonbisect.narrow.narrowing import narrow_session
    from tritonbisect.session.session import Session

    session = Session.open(resolve_workdir(workdir), session_id)
    with session.locked():
        if keep is not None:
            keep.mkdir(parents=True, exist_ok=True)
        result = narrow_session(session, timeout=timeout, keep=keep)
    if keep is not None:
        result["kept"] = str(keep)
    if json_out:
        echo(json.dumps(result, indent=1))
    else:
        echo_narrowing(result)


COMMANDS: list[click.Command] = [narrow_cmd]
