"""`tritonbisect torch`: bisect PyTorch commits, each built with the Triton it pins; with
--wheel-index, PyTorch nightlies are installed first.

Thin: parse the options, build the TorchBisector, start the session.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from tritonbisect.core.errors import InputError
from tritonbisect.domains.triton.triton_options import build_from_options, build_options
from tritonbisect.options.bisect_options import bisect_settings, common_bisect_options, wants_json
from tritonbisect.options.launch import resolve_test, start_session

_dir = click.Path(file_okay=False, path_type=Path)


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
@build_options
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
        torch_dir, good, bad, test={}, build=build_from_options(kwargs), triton_dir=triton_dir,
        use=parse_use_flags(use), first_parent=settings.search.first_parent, llvm_dir=llvm_dir,
        device=device,
    )
    bisector.history.candidates(bisector.good, bisector.bad, first_parent=settings.search.first_parent)
    bisector.test = resolve_test(settings, bisector.history, bisector.bad)
    if not wheel_index:
        start_session(settings, [bisector.phase()], json_out=wants_json(kwargs))
        return
    from tritonbisect.domains.torch.nightly_workflow import WORKFLOW

    phases = [bisector.phase()]
    if wheels_mode != "off":
        from tritonbisect.domains.wheels.nightly_phases import nightly_phases

        phases = nightly_phases(bisector, phases[0], settings, wheel_index, wheel_package, wheels_mode)

    def save(session):  # the JSON and the report then say which steps were installs
        session.extra["wheels_mode"] = wheels_mode
        session.save()

    start_session(settings, phases, workflow=WORKFLOW, before_run=save, json_out=wants_json(kwargs))


COMMANDS: list[click.Command] = [torch_cmd]
