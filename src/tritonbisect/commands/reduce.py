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

import click

from tritonbisect.errors import InputError, TritonBisectError

EXIT_NOT_REPRODUCIBLE = 3


def _python(path: str, option: str) -> str:
    found = shutil.which(path)
    if found is None:
        raise InputError(f"{option} {path}: no such interpreter; give the python of an environment with that Triton")
    return found


def _levels(text: str) -> tuple[str, ...]:
    from tritonbisect.reduce.driver import LEVELS

    levels = tuple(x.strip() for x in text.split(",") if x.strip())
    unknown = [x for x in levels if x not in LEVELS]
    if unknown or not levels:
        raise InputError(f"--level {text}: unknown level(s) {', '.join(unknown) or '(none)'}; choose from {','.join(LEVELS)}")
    return levels


@click.command("reduce")
@click.argument("oracle_dir", type=click.Path(file_okay=False, path_type=Path))
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
def reduce_cmd(oracle_dir: Path, good_python: str | None, bad_python: str | None, good: str | None, bad: str | None,
               package: str, index_urls: tuple[str, ...], python: str | None, workdir: Path | None, out: Path,
               level_text: str, jobs: int, timeout: float, codegen_thresholds: tuple[str, ...], fresh_interpreters: bool,
               json_out: bool) -> None:
    """Shrink a failing oracle's kernel and inputs while the good Triton passes and the bad one still fails the same way."""
    from tritonbisect.reduce import oracle_io, output
    from tritonbisect.reduce.driver import NotReproducible, dumps, reduce, summary
    from tritonbisect.reduce.pool import Pool
    from tritonbisect.reduce.runner import Settings

    levels = _levels(level_text)
    if (good_python is None) != (bad_python is None) or (good is None) != (bad is None) or \
            (good_python is None) == (good is None):
        raise InputError("give the two Tritons either as --good-python PY --bad-python PY or as --good VERSION --bad VERSION")
    if good_python is not None and bad_python is not None:
        good_python, bad_python = _python(good_python, "--good-python"), _python(bad_python, "--bad-python")
    oracle = oracle_io.load(oracle_dir)
    if out.resolve() == oracle_dir.resolve():
        raise InputError(f"--out {out}: the input oracle's own folder; give another one")
    if good is not None and bad is not None:
        from tritonbisect.bisect.step_args import resolve_workdir
        from tritonbisect.reduce.published_envs import install_endpoints

        click.echo(f"installing {package} {good} and {bad} ...", err=True)
        good_python, bad_python = install_endpoints(good, bad, package=package, python=python or sys.executable,
                                                    workdir=resolve_workdir(workdir), index_urls=index_urls)
    assert good_python is not None and bad_python is not None
    settings = Settings(_python(good_python, "--good-python"), _python(bad_python, "--bad-python"), jobs, timeout,
                        codegen_thresholds=codegen_thresholds)
    t0 = time.monotonic()

    def progress(line: str) -> None:
        click.echo(f"[{time.monotonic() - t0:6.0f}s] {line}", err=json_out)

    pool = Pool(fresh=fresh_interpreters)
    work = Path(tempfile.mkdtemp(prefix="tritonbisect-reduce-"))
    try:
        try:
            outcome = reduce(oracle, work, settings, levels, pool, progress)
            output.write(oracle, outcome.reduced, out, pool, settings.good_python, outcome.versions,
                         outcome.signature, work, timeout)
        except NotReproducible as exc:
            if json_out:
                click.echo(json.dumps({"status": "not-reproducible", "reason": str(exc), "out": None}))
            click.echo(f"not reproducible: {exc}", err=True)
            sys.exit(EXIT_NOT_REPRODUCIBLE)
        except OSError as exc:
            raise TritonBisectError(f"reduce: {exc}", exit_code=4) from None
    finally:
        pool.close()
        shutil.rmtree(work, ignore_errors=True)
    result = summary(outcome, out)
    if json_out:
        click.echo(dumps(result))
        return
    b, a = result["before"], result["after"]
    click.echo(f"reduced: {b['kernel_lines']} -> {a['kernel_lines']} kernel lines, {b['elements']} -> {a['elements']} "
               f"tensor elements; {result['tests']} candidates in {result['seconds']}s; still shows {result['signature']}")
    click.echo(f"  {out / oracle.script_name}: run it as the original (--record-golden at good, --golden at bad)")
    click.echo(f"  {out / 'issue.py'}: one file for the issue")


COMMANDS: list[click.Command] = [reduce_cmd]
