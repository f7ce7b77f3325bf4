"""What `hunt --torch-dir DIR` tests: PyTorch commits, each built with the Triton it pins, as
`torch` bisects them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from tritonbisect.domains.triton.bisector import TritonBuildOptions
from tritonbisect.domains.triton.triton_options import BUILD_OPTION_NAMES, build_from_options
from tritonbisect.hunt.targets import GitTarget, TargetFactory
from tritonbisect.session.phases import PhaseSpec
from tritonbisect.session.settings import BisectSettings


class TorchTarget(GitTarget):
    """`--torch-dir DIR`: PyTorch commits, each with the Triton it pins, like `torch`."""

    kind = "torch"
    command = "torch"

    def __init__(self, torch_dir: Path, test: dict, *, build: TritonBuildOptions, triton_dir: Path | None,
                 use: dict[str, str], llvm_dir: Path | None, first_parent: bool = False) -> None:
        super().__init__(torch_dir, first_parent=first_parent)
        self.test = test
        self.build = build
        self.triton_dir = triton_dir
        self.use = use
        self.llvm_dir = llvm_dir

    def phase(self, good: str, bad: str) -> PhaseSpec:
        from tritonbisect.domains.torch.bisector import TorchBisector

        return TorchBisector(
            self.repo, good, bad, test=self.test, build=self.build, triton_dir=self.triton_dir,
            use=self.use, first_parent=self.first_parent, llvm_dir=self.llvm_dir,
        ).phase()


def _create(kw: dict[str, Any], settings: BisectSettings) -> TorchTarget:
    from tritonbisect.domains.torch.bisector import parse_use_flags

    return TorchTarget(
        kw["torch_dir"], {}, build=build_from_options(kw), triton_dir=kw.get("triton_dir"),
        use=parse_use_flags(kw.get("use") or ()), llvm_dir=kw.get("llvm_dir"),
        first_parent=settings.search.first_parent,
    )


# --triton-dir goes with it too (the source of the pinned Triton commits): hunt/target_table.py
# tries this target before Triton's
_OPTIONS = (
    click.option("--torch-dir", type=click.Path(file_okay=False, path_type=Path), help="PyTorch bisector: the PyTorch checkout."),
    click.option("--use", "use", multiple=True, metavar="FLAG=VAL", help="PyTorch bisector: a USE_* build flag (repeatable)."),
)

HUNT_TARGET = TargetFactory(
    "torch", lambda kw: kw.get("torch_dir") is not None,
    frozenset({"torch_dir", "triton_dir", "use", "llvm_dir"}) | BUILD_OPTION_NAMES, _create, _OPTIONS,
)
