"""Domain bisectors: `triton`, `llvm`, `torch`, `pairs`, and the artifact `cache` group.

Thin: parse options, build the domain's Bisector (domains/triton/bisector.py, llvm.py, torch.py,
pairs.py), create the session and hand it to the engine (`commands.engine.execute`).
"""

from __future__ import annotations

import sys
from dataclasses import asdict
from pathlib import Path
from typing import Any

import click

from tritonbisect.commands.options import bisect_settings, common_bisect_options
from tritonbisect.core.errors import InputError

_dir = click.Path(file_okay=False, path_type=Path)
_file = click.Path(dir_okay=False, path_type=Path)


def _build_options(f):
    """Options of every recipe that builds Triton into the target environment."""
    for option in reversed(
        [
            click.option("--python", metavar="PY", help="Interpreter for the target venv, or the user's own env's python."),
            click.option("--venv", type=_dir, help="Use this existing virtual environment as the target (default: one per worker under the workdir)."),
            click.option("--debug", is_flag=True, help="DEBUG=1 Triton builds (assertions on)."),
            click.option("--max-jobs", type=click.IntRange(min=1), metavar="N",
                         help="MAX_JOBS for builds (default: the CPUs divided among the workers)."),
            click.option("--triton-build-type", type=click.Choice(["default", "RelWithDebInfo", "TritonRelBuildWithAsserts"]),
                         default="default", show_default=True,
                         help="Triton's CMake build type (REL_WITH_DEB_INFO=1 or TRITON_REL_BUILD_WITH_ASSERTS=1); "
                         "--debug gives Debug."),
            click.option("--clang-lld", is_flag=True, help="TRITON_BUILD_WITH_CLANG_LLD=true: build Triton with clang and link with lld (faster links)."),
        ]
    ):
        f = option(f)
    return f


def _llvm_options(f):
    """How LLVM is built where a recipe builds it (descent, llvm, pairs, --llvm-dir)."""
    for option in reversed(
        [
            click.option("--llvm-assertions/--no-llvm-assertions", default=True, show_default=True,
                         help="-DLLVM_ENABLE_ASSERTIONS (on, as Triton's own LLVM builds)."),
            click.option("--llvm-build-type", default="Release", show_default=True, help="CMAKE_BUILD_TYPE of LLVM builds."),
            click.option("--llvm-targets", metavar="T1;T2", default=None,
                         help="LLVM_TARGETS_TO_BUILD (default host;NVPTX;AMDGPU: what real Triton links)."),
            click.option("--backends", metavar="B1,B2", default=None,
                         help="Triton backends to build LLVM for instead of --llvm-targets (nvidia, amd): "
                         "nvidia,amd gives host;NVPTX;AMDGPU."),
            click.option("--compiler", type=click.Choice(["gcc", "clang"]), default="gcc", show_default=True, help="Compiler for LLVM builds (gcc works where conda's clang++ does not)."),
        ]
    ):
        f = option(f)
    return f


def _build(kwargs: dict[str, Any]):
    from tritonbisect.domains.triton.bisector import TritonBuildOptions

    if kwargs.get("python") and kwargs.get("venv"):
        raise InputError("--python and --venv are mutually exclusive; give one")
    venv = kwargs.get("venv")
    if venv is not None and not (Path(venv) / "pyvenv.cfg").is_file():
        raise InputError(f"--venv {venv}: not a virtual environment (no pyvenv.cfg)")
    return TritonBuildOptions(
        debug=bool(kwargs.get("debug")),
        max_jobs=kwargs.get("max_jobs"),
        build_type="" if kwargs.get("triton_build_type") in (None, "default") else kwargs["triton_build_type"],
        clang_lld=bool(kwargs.get("clang_lld")),
        python=kwargs.get("python"),
        venv=str(Path(venv).resolve()) if venv else None,
    )


def _llvm_config(kwargs: dict[str, Any]) -> dict[str, Any]:
    from tritonbisect.domains.llvm.recipe import DEFAULT_TARGETS, targets_for_backends

    if kwargs.get("llvm_targets") and kwargs.get("backends"):
        raise InputError("--llvm-targets and --backends both choose LLVM's targets; give one")
    if kwargs.get("backends"):
        names = [b.strip() for b in str(kwargs["backends"]).split(",") if b.strip()]
        targets = list(targets_for_backends(names))
    elif kwargs.get("llvm_targets"):
        targets = [t.strip() for t in str(kwargs["llvm_targets"]).replace(",", ";").split(";") if t.strip()]
        if not targets:
            raise InputError("--llvm-targets is empty: give e.g. 'host;NVPTX;AMDGPU'")
    else:
        targets = list(DEFAULT_TARGETS)
    return {
        "build_type": kwargs.get("llvm_build_type") or "Release",
        "assertions": kwargs.get("llvm_assertions", True) is not False,
        "targets": targets,
        "compiler": kwargs.get("compiler") or "gcc",
    }


def _test(settings, history, commit: str) -> dict:
    """--test / --repro as the TestSpec dict of the recipes; the script is checked at `commit`.

    A relative script path is looked up from the current directory, then from the root of
    the repository the test runs in (`--triton-dir DIR --test test/t.py` from elsewhere).
    """
    if not settings.wants_test:
        raise InputError("give the test to run: --test CMD (or --repro TRACE --kernel K)")
    root = Path(history.root)
    try:
        spec = settings.test_spec(repo=root, bad=commit, history=history)
    except InputError:
        if Path.cwd().resolve() == root.resolve() or settings.repro:
            raise
        spec = settings.test_spec(repo=root, bad=commit, history=history, cwd=root)
    return spec.to_dict()


def _start(settings, phases, *, workflow: str | None = None, before_run=None):
    from tritonbisect.commands.engine import execute
    from tritonbisect.session.phase_hint import check_hint
    from tritonbisect.session.session import Session

    check_hint(settings, [getattr(p, "spec", p) for p in phases])
    session = Session.create(
        settings.workdir, settings, phases, workflow=workflow, argv=list(sys.argv[1:])
    )
    if before_run is not None:
        before_run(session)
    execute(session, json_out=settings.json)


# --- triton ------------------------------------------------------------------------------


# build/wheel_feeds.FEEDS' nightly feeds, named here without importing it (--help stays light)
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
@_build_options
@_llvm_options
@common_bisect_options
def triton_cmd(triton_dir: Path, good: str, bad: str, no_descend_llvm: bool, llvm_dir: Path | None,
               compat_map: Path | None, wheel_index: tuple[str, ...], wheels_mode: str,
               wheel_package: str, wheel_feed: str | None, **kwargs: Any) -> None:
    """Bisect Triton; a culprit that bumps LLVM is followed into llvm-project."""
    from tritonbisect.domains.llvm.descent import WORKFLOW, DescentPlan, preflight
    from tritonbisect.domains.triton.bisector import TritonBisector

    if wheel_feed:
        from tritonbisect.builds.wheel_feeds import feed_named

        wheel_index = (*wheel_index, feed_named(wheel_feed).index_url)
    settings = bisect_settings(**kwargs)
    if wheels_mode == "only" and not wheel_index:
        raise InputError("--wheels only needs --wheel-index URL (an index with nightly wheels)")
    build = _build(kwargs)
    llvm = _llvm_config(kwargs)
    bisector = TritonBisector(
        triton_dir, good, bad, test={}, build=build, first_parent=settings.first_parent,
        llvm_dir=llvm_dir, llvm=llvm,
    )
    bisector.history.candidates(bisector.good, bisector.bad, first_parent=settings.first_parent)
    bisector.test = _test(settings, bisector.history, bisector.bad)
    plan = DescentPlan(
        descend=not no_descend_llvm,
        llvm_dir=str(llvm_dir.resolve()) if llvm_dir else None,
        compat_map=str(compat_map.resolve()) if compat_map else None,
        test=bisector.test,
        build=asdict(build),
        llvm=llvm,
    )
    preflight(bisector, plan)
    phases = [bisector.phase()]
    if wheel_index and wheels_mode != "off":
        from tritonbisect.commands.wheels import nightly_phases

        phases = nightly_phases(bisector, phases[0], settings, wheel_index, wheel_package,
                                wheels_mode)

    def save(session):
        if wheel_index:  # the JSON and the report then say which steps were installs
            session.extra["wheels_mode"] = wheels_mode
        plan.save(session)

    _start(settings, phases, workflow=WORKFLOW, before_run=save)


# --- llvm --------------------------------------------------------------------------------


@click.command("llvm")
@click.option("--triton-dir", type=_dir, default=".", show_default=True, help="The Triton checkout to build against each LLVM commit.")
@click.option("--llvm-dir", type=_dir, required=True, help="The llvm-project checkout to bisect (never modified).")
@click.option("--good-llvm", required=True, metavar="REV", help="An LLVM commit where the test passes.")
@click.option("--bad-llvm", required=True, metavar="REV", help="A later LLVM commit where it fails.")
@click.option("--compat-map", type=_file, help="commits.csv: the Triton commit to build at each LLVM commit.")
@click.option("--triton-commit", metavar="REV", help="Without a map: the Triton commit to build everywhere (default: HEAD of --triton-dir); LLVM commits it cannot build with are skipped.")
@_build_options
@_llvm_options
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
        test={}, build=_build(kwargs), compat_map=compat_map, triton_commit=triton_commit,
        llvm=_llvm_config(kwargs),
    )
    bisector.llvm_history.candidates(bisector.good_llvm, bisector.bad_llvm)
    bisector.test = _test(settings, bisector.triton, bisector.fixed)
    _start(settings, [bisector.phase()])


# --- pairs -------------------------------------------------------------------------------


@click.command("pairs")
@click.option("--compat-map", type=_file, required=True, help="commits.csv whose (Triton, LLVM) pairs are searched.")
@click.option("--triton-dir", type=_dir, default=".", show_default=True, help="The Triton checkout.")
@click.option("--llvm-dir", type=_dir, required=True, help="The llvm-project checkout.")
@click.option("--good-llvm", metavar="REV", help="A good LLVM commit (default: the map's old_llvm).")
@click.option("--bad-llvm", metavar="REV", help="A bad LLVM commit (default: the map's new_llvm).")
@_build_options
@_llvm_options
@common_bisect_options
def pairs_cmd(compat_map: Path, triton_dir: Path, llvm_dir: Path, good_llvm: str | None,
              bad_llvm: str | None, **kwargs: Any) -> None:
    """Binary search over the map's (Triton, LLVM) pairs: the first bad pair."""
    from tritonbisect.domains.llvm.pairs import WORKFLOW, PairsBisector, max_pairs_tested

    settings = bisect_settings(**kwargs)
    bisector = PairsBisector(
        triton_dir=triton_dir, llvm_dir=llvm_dir, compat_map=compat_map, test={},
        build=_build(kwargs), good_llvm=good_llvm, bad_llvm=bad_llvm, llvm=_llvm_config(kwargs),
    )
    bisector.test = _test(settings, bisector.triton, bisector.pairs[-1].triton)
    click.echo(
        f"tritonbisect pairs: {len(bisector.pairs)} pairs after {bisector.good_pair.describe()}; "
        f"at most {max_pairs_tested(len(bisector.pairs))} to test",
        err=True,
    )
    _start(settings, [bisector.phase()], workflow=WORKFLOW)


# --- torch -------------------------------------------------------------------------------


@click.command("torch")
@click.option("--torch-dir", type=_dir, default=".", show_default=True, help="The PyTorch checkout (never modified).")
@click.option("--good", required=True, metavar="REV", help="A PyTorch commit where the test passes.")
@click.option("--bad", required=True, metavar="REV", help="A later PyTorch commit where it fails.")
@click.option("--triton-dir", type=_dir, help="Triton checkout to build each commit's pinned Triton from (.ci/docker/ci_commit_pins/triton.txt).")
@click.option("--use", "use", multiple=True, metavar="FLAG=VAL", help="PyTorch build flag, e.g. --use CUDA=0 (repeatable).")
@click.option("--llvm-dir", type=_dir, help="llvm-project checkout to build the LLVM each pinned Triton pins (else Triton's build fetches it).")
@click.option("--wheel-index", "wheel_index", multiple=True, metavar="URL", help="A PEP 503/691 index with PyTorch nightlies (the commit in their torch/version.py, or +git<sha>): those commits are installed, not built (repeatable).")
@click.option("--wheels", "wheels_mode", type=click.Choice(["auto", "only", "off"]), default="auto", show_default=True, help="With --wheel-index: auto = nightlies first, then build inside their bracket; only = stop at the bracket; off = build everything.")
@click.option("--wheel-package", default="torch", show_default=True, help="The nightlies' distribution on --wheel-index.")
@click.option("--device", type=click.Choice(["cuda", "rocm", "xpu"]), default="cuda", show_default=True,
              help="Which Triton pin PyTorch uses: triton.txt (cuda), triton-rocm.txt where it exists (rocm), "
              "triton-xpu.txt (xpu: --triton-dir is then Intel's Triton).")
@_build_options
@common_bisect_options
def torch_cmd(torch_dir: Path, good: str, bad: str, triton_dir: Path | None, use: tuple[str, ...],
              llvm_dir: Path | None, wheel_index: tuple[str, ...], wheels_mode: str, wheel_package: str,
              device: str, **kwargs: Any) -> None:
    """Bisect PyTorch, with the Triton each commit pins."""
    from tritonbisect.domains.torch.bisector import TorchBisector, parse_use_flags

    settings = bisect_settings(**kwargs)
    if wheels_mode == "only" and not wheel_index:
        raise InputError("--wheels only needs --wheel-index URL (an index with PyTorch nightlies)")
    bisector = TorchBisector(
        torch_dir, good, bad, test={}, build=_build(kwargs), triton_dir=triton_dir,
        use=parse_use_flags(use), first_parent=settings.first_parent, llvm_dir=llvm_dir,
        device=device,
    )
    bisector.history.candidates(bisector.good, bisector.bad, first_parent=settings.first_parent)
    bisector.test = _test(settings, bisector.history, bisector.bad)
    if not wheel_index:
        _start(settings, [bisector.phase()])
        return
    from tritonbisect.domains.torch.nightly_workflow import WORKFLOW as TORCH_NIGHTLIES

    phases = [bisector.phase()]
    if wheels_mode != "off":
        from tritonbisect.commands.wheels import nightly_phases

        phases = nightly_phases(bisector, phases[0], settings, wheel_index, wheel_package, wheels_mode)

    def save(session):  # the JSON and the report then say which steps were installs
        session.extra["wheels_mode"] = wheels_mode
        session.save()

    _start(settings, phases, workflow=TORCH_NIGHTLIES, before_run=save)


def _cache_commands() -> list[click.Command]:
    from tritonbisect.commands.artifact_cache import cache_group

    return [cache_group]


COMMANDS: list[click.Command] = [triton_cmd, llvm_cmd, torch_cmd, pairs_cmd, *_cache_commands()]
