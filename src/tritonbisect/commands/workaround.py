"""`tritonbisect workaround ORACLE_DIR`: the launch and compile options, configs and Triton
switches that make the bad Triton pass a compile oracle, cheapest first.

Thin: resolve the Tritons (pythons given, or published versions installed as `reduce --good
VERSION` installs them), run the search (workaround/search.py), print (workaround/render.py)."""

from __future__ import annotations

import json
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import click

from tritonbisect.core.errors import InputError

EXIT_NONE = 1
EXIT_NOTHING_TO_DO = 3


def _python(path: str, option: str) -> str:
    found = shutil.which(path)
    if found is None:
        raise InputError(f"{option} {path}: no such interpreter; give the python of an environment with that Triton")
    return found


@click.command("workaround")
@click.argument("oracle_dir", type=click.Path(file_okay=False, path_type=Path))
@click.option("--bad-python", metavar="PY", help="Python of the environment whose Triton fails the oracle.")
@click.option("--bad", metavar="VERSION", help="A published version that fails it (installed into a venv of its own, as `wheels` installs it).")
@click.option("--good-python", metavar="PY", help="Python of an environment whose Triton passes: its codegen is what a change is measured against.")
@click.option("--good", metavar="VERSION", help="A published version that passes.")
@click.option("--package", default="triton", show_default=True, help="The distribution of --good/--bad: triton, pytorch-triton, ...")
@click.option("--index-url", "index_urls", multiple=True, metavar="URL", help="A PEP 503/691 simple index for --good/--bad (repeatable).")
@click.option("--python", metavar="PY", help="With --good/--bad: the interpreter whose torch the venvs use (default: this one).")
@click.option("--check", type=click.Choice(["codegen"]), help="codegen: a change passes only if the bad Triton's codegen stays within the thresholds of the good Triton's (needs a good Triton).")
@click.option("--codegen-threshold", "codegen_thresholds", multiple=True, metavar="METRIC=LIMIT", help="With --check codegen: the statistics checked and their limits, as compile_repro.py takes them.")
@click.option("--jobs", type=click.IntRange(1, 64), default=2, show_default=True, help="Candidates compiled at a time.")
@click.option("--timeout", type=float, default=300.0, show_default=True, metavar="S", help="Seconds per candidate compile.")
@click.option("--max-candidates", type=click.IntRange(1, 10000), default=200, show_default=True, metavar="N", help="At most this many candidates (single changes, then pairs).")
@click.option("--workdir", type=click.Path(file_okay=False, path_type=Path), help="Where the results cache and the --good/--bad venvs are kept (default: $TRITONBISECT_HOME or the user cache dir).")
@click.option("--json", "json_out", is_flag=True, help='Print {"workarounds": [{"change", "outcome", "cost"}], "tried": N, ...}.')
def workaround_cmd(oracle_dir: Path, bad_python: str | None, bad: str | None, good_python: str | None, good: str | None,
                   package: str, index_urls: tuple[str, ...], python: str | None, check: str | None,
                   codegen_thresholds: tuple[str, ...], jobs: int, timeout: float, max_candidates: int,
                   workdir: Path | None, json_out: bool) -> None:
    """Find the changes (launch options, configs, Triton's own switches) that make the bad Triton pass ORACLE_DIR."""
    from tritonbisect.core.step_args import resolve_workdir
    from tritonbisect.reduce import oracle_io
    from tritonbisect.workaround.search import Settings

    if (bad_python is None) == (bad is None):
        raise InputError("give the Triton to work around as --bad-python PY or --bad VERSION (one of them)")
    if good_python is not None and good is not None:
        raise InputError("give the good Triton as --good-python PY or --good VERSION, not both")
    if codegen_thresholds and check != "codegen":
        raise InputError("--codegen-threshold goes with --check codegen")
    if check == "codegen" and good_python is None and good is None:
        raise InputError("--check codegen compares with the good Triton's codegen: give --good-python PY or --good VERSION")
    if codegen_thresholds:
        from tritonbisect.oracles.compile.standalone import tb_codegen

        try:
            tb_codegen.parse_thresholds(list(codegen_thresholds))
        except ValueError as exc:
            raise InputError(f"--codegen-threshold: {exc}") from None
    oracle = oracle_io.load(oracle_dir)
    home = resolve_workdir(workdir)
    versions = {"--bad": bad, "--good": good}
    if bad is not None or good is not None:
        from tritonbisect.reduce.published_envs import install_version

        wanted = " and ".join(f"{package} {v}" for v in (bad, good) if v)
        click.echo(f"installing {wanted} ...", err=True)
        installed = {option: install_version(v, option=option, package=package, python=python or sys.executable,
                                             workdir=home, index_urls=index_urls)
                     for option, v in versions.items() if v}
        bad_python = installed.get("--bad", bad_python)
        good_python = installed.get("--good", good_python)
    assert bad_python is not None
    settings = Settings(_python(bad_python, "--bad-python"),
                        _python(good_python, "--good-python") if good_python else None,
                        jobs=jobs, timeout=timeout, check_codegen=check == "codegen",
                        thresholds=codegen_thresholds, max_candidates=max_candidates)
    result = search_and_print(oracle, settings, home, json_out)
    raise click.exceptions.Exit(0 if result.get("workarounds") else EXIT_NONE)


def search_and_print(oracle: Any, settings: Any, home: Path, json_out: bool, *, quiet: bool = False) -> dict[str, Any]:
    """Run the search, print its answer (text or JSON); the JSON. Shared with a bisect's --workaround."""
    from tritonbisect.workaround import render
    from tritonbisect.workaround.search import NothingToWorkAround, run_search

    t0 = time.monotonic()

    def progress(line: str) -> None:
        if not quiet:
            click.echo(f"[{time.monotonic() - t0:6.0f}s] {line}", err=True)

    work = Path(tempfile.mkdtemp(prefix="tritonbisect-workaround-"))
    try:
        result = run_search(oracle, settings, work, home / "workaround-cache", progress)
    except NothingToWorkAround as exc:
        click.echo(f"tritonbisect: {exc}", err=True)
        raise click.exceptions.Exit(EXIT_NOTHING_TO_DO) from None
    finally:
        shutil.rmtree(work, ignore_errors=True)
    data = render.as_json(result, oracle.original.context)
    if json_out:
        click.echo(json.dumps(data))
    elif not quiet:
        click.echo(render.text(result, oracle.original.context))
    return data


COMMANDS: list[click.Command] = [workaround_cmd]
