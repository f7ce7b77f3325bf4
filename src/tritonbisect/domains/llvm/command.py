"""`tritonbisect llvm` and `tritonbisect pairs`: bisect llvm-project through the Triton that
builds against each LLVM commit, or binary-search the compatibility map's pairs.

Thin: parse the options, build the LLVMBisector or PairsBisector, start the session.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from tritonbisect.core.errors import InputError
from tritonbisect.domains.triton.triton_options import (
    backend_options,
    build_from_options,
    build_options,
)
from tritonbisect.options.bisect_options import bisect_settings, common_bisect_options, wants_json
from tritonbisect.options.launch import resolve_test, start_session
from tritonbisect.options.llvm_options import llvm_config_from_options, llvm_options

_dir = click.Path(file_okay=False, path_type=Path)
_file = click.Path(dir_okay=False, path_type=Path)


@click.command("llvm")
@click.option("--triton-dir", type=_dir, default=".", show_default=True, help="The Triton checkout to build against each LLVM commit.")
@click.option("--llvm-dir", type=_dir, required=True, help="The llvm-project checkout to bisect (never modified).")
@click.option("--good-llvm", required=True, metavar="REV", help="An LLVM commit where the test passes.")
@click.option("--bad-llvm", required=True, metavar="REV", help="A later LLVM commit where it fails.")
@click.option("--compat-map", type=_file, help="commits.csv: the Triton commit to build at each LLVM commit.")
@click.option("--triton-commit", metavar="REV", help="Without a map: the Triton commit to build everywhere (default: HEAD of --triton-dir); LLVM commits it cannot build with are skipped.")
@build_options
@backend_options
@llvm_options
@common_bisect_options
def llvm_cmd(triton_dir: Path, llvm_dir: Path, good_llvm: str, bad_llvm: str, compat_map: Path | None,
             triton_commit: str | None, **kwargs: Any) -> None:
    """Bisect llvm-project, building at each LLVM commit a Triton that builds against it."""
    from tritonbisect.domains.llvm.bisector import LLVMBisector

    settings = bisect_settings(**kwargs)
    if compat_map is not None and triton_commit:
        raise InputError("--compat-map and --triton-commit are mutually exclusive; give one")
    bisector = LLVMBisector(
        triton_dir=triton_dir, llvm_dir=llvm_dir, good_llvm=good_llvm, bad_llvm=bad_llvm,
        test={}, build=build_from_options(kwargs), compat_map=compat_map, triton_commit=triton_commit,
        llvm=llvm_config_from_options(kwargs),
    )
    bisector.llvm_history.candidates(bisector.good_llvm, bisector.bad_llvm)
    bisector.test = resolve_test(settings, bisector.triton, bisector.fixed)
    start_session(settings, [bisector.phase()], json_out=wants_json(kwargs))


@click.command("pairs")
@click.option("--compat-map", type=_file, required=True, help="commits.csv whose (Triton, LLVM) pairs are searched.")
@click.option("--triton-dir", type=_dir, default=".", show_default=True, help="The Triton checkout.")
@click.option("--llvm-dir", type=_dir, required=True, help="The llvm-project checkout.")
@click.option("--good-llvm", metavar="REV", help="A good LLVM commit (default: the map's old_llvm).")
@click.option("--bad-llvm", metavar="REV", help="A bad LLVM commit (default: the map's new_llvm).")
@build_options
@backend_options
@llvm_options
@common_bisect_options
def pairs_cmd(compat_map: Path, triton_dir: Path, llvm_dir: Path, good_llvm: str | None,
              bad_llvm: str | None, **kwargs: Any) -> None:
    """Binary search over the map's (Triton, LLVM) pairs, then over the first bad pair's LLVM range."""
    from tritonbisect.domains.llvm.pairs import WORKFLOW, PairsBisector, max_pairs_tested

    settings = bisect_settings(**kwargs)
    bisector = PairsBisector(
        triton_dir=triton_dir, llvm_dir=llvm_dir, compat_map=compat_map, test={},
        build=build_from_options(kwargs), good_llvm=good_llvm, bad_llvm=bad_llvm,
        llvm=llvm_config_from_options(kwargs),
    )
    bisector.test = resolve_test(settings, bisector.triton, bisector.pairs[-1].triton)
    click.echo(
        f"tritonbisect pairs: {len(bisector.pairs)} pairs after {bisector.good_pair.describe()}; "
        f"at most {max_pairs_tested(len(bisector.pairs))} to test",
        err=True,
    )
    start_session(settings, [bisector.phase()], workflow=WORKFLOW, json_out=wants_json(kwargs))


COMMANDS: list[click.Command] = [llvm_cmd, pairs_cmd]
