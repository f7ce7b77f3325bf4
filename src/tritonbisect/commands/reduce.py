"""`tritonbisect reduce ORACLE_DIR`: shrink a failing oracle while good and bad still disagree.

Thin: load the oracle (reduce/oracle_io.py), run the reduction loop (reduce/driver.py) on
fork servers under the two Pythons (reduce/pool.py), write the result (reduce/output.py)."""

from __future__ import annotations

import json
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import click

from tritonbisect.commands.echo import echo
from tritonbisect.core.errors import InputError, unexpected_shapes

EXIT_NOT_REPRODUCIBLE = 3


def _python(path: str, option: str) -> str:
    found = shutil.which(path)
    if found is None:
        raise InputError(f"{option} {path}: no such interpreter; give the python of an environment with that Triton")
    return found


def _levels(text: str) -> tuple[str, ...]:
    from tritonbisect.session.follow_ups import parse_levels

    return parse_levels(text)


@click.command("reduce")
@click.argument("oracle_dir", required=False, type=click.Path(file_okay=False, path_type=Path))
@click.option("--session", "session_id", metavar="S", help="A finished session whose test is an oracle: its culprit (bad) and the culprit's parent (good) from the build cache, no build; ORACLE_DIR defaults to the session's oracle.")
@click.option("--good-python", metavar="PY", help="Python of the environment whose Triton is good.")
@click.option("--bad-python", metavar="PY", help="Python of the environment whose Triton is bad.")
@click.option("--good", metavar="VERSION", help="A published version that is good (installed into a venv of its own, as `wheels` installs it).")
@click.option("--bad", metavar="VERSION", help="A published version that is bad.")
@click.option("--package", default="triton", show_default=True, help="The distribution of --good/--bad: triton, pytorch-triton, ...")
@click.option("--index-url", "index_urls", multiple=True, metavar="URL", help="A PEP 503/691 simple index for --good/--bad (repeatable; default https://pypi.org/simple).")
@click.option("--python", metavar="PY", help="With --good/--bad: the interpreter whose torch the two venvs use (default: this one).")
@click.option("--workdir", type=click.Path(file_okay=False, path_type=Path), help="Where the --good/--bad venvs and downloads are kept (default: $TRITONBISECT_HOME or the user cache dir).")
@click.option("--out", required=True, type=click.Path(file_okay=False, path_type=Path), help="Folder for the reduced oracle and issue.py.")
@click.option("--level", "level_text", default="source,ir,inputs", show_default=True, metavar="LEVELS", help="Comma list of source, ir, inputs.")
@click.option("--jobs", type=click.IntRange(1, 64), default=2, show_default=True, help="Candidates run at a time.")
@click.option("--timeout", type=float, default=120.0, show_default=True, metavar="S", help="Seconds per candidate run before it counts as a hang.")
@click.option("--codegen-threshold", "codegen_thresholds", multiple=True, metavar="METRIC=LIMIT", help="Compile oracles: the codegen statistics checked and their limits, as compile_repro.py takes them (default: its own).")
@click.option("--fresh-interpreters", is_flag=True, help="Start a new interpreter per run instead of forking long-lived workers (to measure).")
@click.option("--json", "json_out", is_flag=True, help="Print the result as JSON.")
@unexpected_shapes("the oracle folder (or the session)", "was it edited? regenerate it with `tritonbisect repro`")
def reduce_cmd(oracle_dir: Path | None, session_id: str | None, good_python: str | None, bad_python: str | None, good: str | None, bad: str | None,
               package: str, index_urls: tuple[str, ...], python: str | None, workdir: Path | None, out: Path,
               level_text: str, jobs: int, timeout: float, codegen_thresholds: tuple[str, ...], fresh_interpreters: bool,
               json_out: bool) -> None:
    """Shrink a failing oracle's kernel and inputs while the good Triton passes and the bad one still fails the same way."""
    from tritonbisect.reduce import oracle_io

    levels = _levels(level_text)
    if session_id is not None:
        if good_python or bad_python or good or bad:
            raise InputError("--session names the two Tritons itself (the culprit's parent and the culprit): "
                             "leave out --good-python/--bad-python/--good/--bad")
        _reduce_session(session_id, oracle_dir, workdir, out, levels, jobs, timeout, codegen_thresholds,
                        fresh_interpreters, json_out)
        return
    if oracle_dir is None:
        raise InputError("give ORACLE_DIR (a folder `repro` wrote), or --session S")
    if (good_python is None) != (bad_python is None) or (good is None) != (bad is None) or \
            (good_python is None) == (good is None):
        raise InputError("give the two Tritons either as --good-python PY --bad-python PY or as --good VERSION --bad VERSION")
    if good_python is not None and bad_python is not None:
        good_python, bad_python = _python(good_python, "--good-python"), _python(bad_python, "--bad-python")
    oracle = oracle_io.load(oracle_dir)
    _check_out(out, oracle_dir)
    if good is not None and bad is not None:
        from tritonbisect.core.step_args import resolve_workdir
        from tritonbisect.reduce.published_envs import install_endpoints

        echo(f"installing {package} {good} and {bad} ...", err=True)
        good_python, bad_python = install_endpoints(good, bad, package=package, python=python or sys.executable,
                                                    workdir=resolve_workdir(workdir), index_urls=index_urls)
    assert good_python is not None and bad_python is not None
    _reduce_and_print(oracle, good_python, bad_python, out, levels, jobs, timeout, codegen_thresholds,
                      fresh_interpreters, json_out)


def _check_out(out: Path, oracle_dir: Path) -> None:
    if out.resolve() == oracle_dir.resolve():
        raise InputError(f"--out {out}: the input oracle's own folder; give another one")


def _reduce_session(session_id: str, oracle_dir: Path | None, workdir: Path | None, out: Path,
                    levels: tuple[str, ...], jobs: int, timeout: float, thresholds: tuple[str, ...],
                    fresh: bool, json_out: bool) -> None:
    from tritonbisect.options.bisect_options import resolve_workdir
    from tritonbisect.reduce import oracle_io
    from tritonbisect.reduce.from_session import endpoints
    from tritonbisect.reports.version_names import VersionNames
    from tritonbisect.session.session import Session

    session = Session.open(resolve_workdir(workdir), session_id)
    scratch = Path(tempfile.mkdtemp(prefix="tritonbisect-reduce-envs-"))
    try:
        ends = endpoints(session, scratch)
        oracle = oracle_io.load(oracle_dir or ends.oracle)
        _check_out(out, oracle.root)
        names = VersionNames.of(session)
        if names is not None:  # `wheels`: its versions, not the ladder's commits
            echo(f"reducing with {names.package} {names.name(ends.parent)} (good) and "
                       f"{names.name(ends.culprit)} (bad), from the published wheels", err=True)
        else:
            echo(f"reducing with the parent {ends.parent[:12]} (good) and the culprit {ends.culprit[:12]} "
                       "(bad), from cached builds", err=True)
        result = _reduce_and_print(oracle, ends.good_python, ends.bad_python, out, levels, jobs, timeout,
                                   thresholds or ends.codegen_thresholds, fresh, json_out, env=ends.env)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    session.extra["reduce"] = reduced_record(result, ends.culprit, ends.parent)
    session.save()


def reduced_record(result: dict[str, Any], culprit: str, parent: str) -> dict[str, Any]:
    """What the session keeps of a reduction (session.json "extra" -> "reduce"), for its report."""
    keep = ("out", "oracle", "kind", "kernel_source", "before", "after", "signature", "tests", "seconds",
            "good_triton", "bad_triton", "settings")
    return {"culprit": culprit, "parent": parent, "builds": 0, **{k: result.get(k) for k in keep}}


def _reduce_and_print(oracle: Any, good_python: str, bad_python: str, out: Path, levels: tuple[str, ...],
                      jobs: int, timeout: float, thresholds: tuple[str, ...], fresh: bool, json_out: bool,
                      env: dict[str, str] | None = None) -> dict[str, Any]:
    from tritonbisect.reduce.candidate_runner import Settings
    from tritonbisect.reduce.driver import NotReproducible, dumps
    from tritonbisect.reduce.reduction import run_reduction

    settings = Settings(_python(good_python, "--good-python"), _python(bad_python, "--bad-python"), jobs, timeout,
                        codegen_thresholds=thresholds)
    t0 = time.monotonic()

    def progress(line: str) -> None:  # on stderr: stdout holds the result alone
        echo(f"[{time.monotonic() - t0:6.0f}s] {line}", err=True)

    try:
        result = run_reduction(oracle, settings, out, levels, progress=progress, fresh=fresh, env=env)
    except NotReproducible as exc:
        if json_out:
            echo(json.dumps({"status": "not-reproducible", "reason": str(exc), "out": None}))
        echo(f"not reproducible: {exc}", err=True)
        sys.exit(EXIT_NOT_REPRODUCIBLE)
    if json_out:
        echo(dumps(result))
        return result
    echo_reduced(result)
    return result


def echo_reduced(result: dict[str, Any]) -> None:
    out = Path(result["out"])
    b, a = result["before"], result["after"]
    if "ir_ops" in b:
        sizes = f"{b['ir_ops']} -> {a['ir_ops']} IR operations, {b['kernel_lines']} -> {a['kernel_lines']} lines"
    else:
        sizes = (f"{b['kernel_lines']} -> {a['kernel_lines']} kernel lines, {b['elements']} -> {a['elements']} "
                 "tensor elements")
    echo(f"reduced: {sizes}; {result['tests']} candidates in {result['seconds']}s; still shows {result['signature']}")
    echo(f"  {result['oracle']}: run it as the original (--record-golden at good, --golden at bad)")
    echo(f"  {out / 'issue.py'}: one file for the issue")


COMMANDS: list[click.Command] = [reduce_cmd]
