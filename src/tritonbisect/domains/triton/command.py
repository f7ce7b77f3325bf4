"""`tritonbisect triton`: bisect Triton commits; a culprit that bumps LLVM is followed into
llvm-project (domains/llvm/descent.py), and with --wheel-index nightlies are installed first.

Thin: parse the options, build the TritonBisector and its descent plan, start the session.
"""

from __future__ import annotations

from dataclasses import asdict
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

# builds/wheel_feeds.py's FEEDS, the nightly ones, named here without importing it (--help stays light)
NIGHTLY_FEEDS = ("triton-nightly", "pytorch-nightly")


@click.command("triton")
@click.option("--triton-dir", type=_dir, default=".", show_default=True, help="The Triton checkout (never modified).")
@click.option("--good", required=True, metavar="REV", help="A Triton commit where the test passes.")
@click.option("--bad", required=True, metavar="REV", help="A later Triton commit where it fails.")
@click.option("--no-descend-llvm", is_flag=True, help="Stop at a Triton culprit that bumps LLVM instead of bisecting llvm-project.")
@click.option("--llvm-dir", type=_dir, help="llvm-project checkout: builds each commit's pinned LLVM, and is bisected when the culprit is an LLVM bump.")
@click.option("--compat-map", type=_file, help="commits.csv: which Triton commit builds against each LLVM commit (for the descent).")
@click.option("--wheel-index", "wheel_index", multiple=True, metavar="URL", help="A PEP 503/691 index with nightly wheels (+git<sha> versions): those commits are installed, not built (repeatable).")
@click.option("--wheels", "wheels_mode", type=click.Choice(["auto", "only", "off"]), default="auto", show_default=True, help="With --wheel-index: auto = nightlies first, then build inside their bracket; only = stop at the bracket; off = build everything.")
@click.option("--wheel-package", default="triton", show_default=True, help="The nightlies' distribution on --wheel-index (triton, triton-rocm, triton-xpu, pytorch-triton, triton-nightly...).")
@click.option("--wheel-feed", type=click.Choice(NIGHTLY_FEEDS), help="A named nightly feed, as another --wheel-index: triton-nightly (Triton's nightly index) or pytorch-nightly (PyTorch's).")
@build_options
@backend_options
@llvm_options
@common_bisect_options
def triton_cmd(triton_dir: Path, good: str, bad: str, no_descend_llvm: bool, llvm_dir: Path | None,
               compat_map: Path | None, wheel_index: tuple[str, ...], wheels_mode: str,
               wheel_package: str, wheel_feed: str | None, **kwargs: Any) -> None:
    """Bisect Triton; a culprit that bumps LLVM is followed into llvm-project."""
    from tritonbisect.domains.triton.bisector import TritonBisector
    from tritonbisect.domains.triton.descent_plan import WORKFLOW, DescentPlan
    from tritonbisect.session.workflows import preflight

    if wheel_feed:
        from tritonbisect.builds.wheel_feeds import feed_named

        wheel_index = (*wheel_index, feed_named(wheel_feed).index_url)
    settings = bisect_settings(**kwargs)
    if wheels_mode == "only" and not wheel_index:
        raise InputError("--wheels only needs --wheel-index URL (an index with nightly wheels)")
    build = build_from_options(kwargs)
    llvm = llvm_config_from_options(kwargs)
    bisector = TritonBisector(
        triton_dir, good, bad, test={}, build=build, first_parent=settings.search.first_parent,
        llvm_dir=llvm_dir, llvm=llvm,
    )
    bisector.history.candidates(bisector.good, bisector.bad, first_parent=settings.search.first_parent)
    bisector.test = resolve_test(settings, bisector.history, bisector.bad)
    plan = DescentPlan(
        descend=not no_descend_llvm,
        llvm_dir=str(llvm_dir.resolve()) if llvm_dir else None,
        compat_map=str(compat_map.resolve()) if compat_map else None,
        test=bisector.test,
        build=asdict(build),
        llvm=llvm,
    )
    preflight(WORKFLOW)(bisector, plan)
    phases = [bisector.phase()]
    if wheel_index and wheels_mode != "off":
        from tritonbisect.domains.wheels.nightly_phases import nightly_phases

        phases = nightly_phases(bisector, phases[0], settings, wheel_index, wheel_package,
                                wheels_mode)

    def save(session):
        if wheel_index:  # the JSON and the report then say which steps were installs
            session.extra["wheels_mode"] = wheels_mode
        plan.save(session)

    start_session(settings, phases, workflow=WORKFLOW, before_run=save, json_out=wants_json(kwargs))


COMMANDS: list[click.Command] = [triton_cmd]
