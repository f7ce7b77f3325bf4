"""What `hunt --triton-dir DIR` tests: Triton commits built into wheels (cached), as `triton`
bisects them, with the LLVM descent after a culprit that bumps LLVM."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import click

from tritonbisect.domains.triton.bisector import TritonBuildOptions
from tritonbisect.domains.triton.triton_options import (
    BUILD_OPTION_NAMES,
    build_from_options,
    build_options,
)
from tritonbisect.hunt.targets import GitTarget, TargetFactory
from tritonbisect.options.llvm_options import (
    LLVM_OPTION_NAMES,
    llvm_config_from_options,
    llvm_options,
)
from tritonbisect.session.phases import PhaseSpec
from tritonbisect.session.session import Session
from tritonbisect.session.settings import BisectSettings


@dataclass
class TritonTargetConfig:
    """How the target's Triton is built, and where its LLVM descent goes."""

    build: TritonBuildOptions
    llvm_dir: Path | None = None
    llvm: dict = field(default_factory=dict)
    compat_map: Path | None = None
    descend: bool = True


class TritonTarget(GitTarget):
    """`--triton-dir DIR`: Triton commits built into wheels (cached), like `triton`; a culprit
    that bumps LLVM is followed into llvm-project (the descent workflow)."""

    kind = "triton"
    command = "triton"

    def __init__(self, triton_dir: Path, test: dict, config: TritonTargetConfig, *, first_parent: bool = False) -> None:
        super().__init__(triton_dir, first_parent=first_parent)
        self.test = test
        self.config = config

    def _bisector(self, good: str, bad: str):
        from tritonbisect.domains.triton.bisector import TritonBisector

        return TritonBisector(
            self.repo, good, bad, test=self.test, build=self.config.build,
            first_parent=self.first_parent, llvm_dir=self.config.llvm_dir, llvm=self.config.llvm,
        )

    def _plan(self):
        from tritonbisect.domains.triton.descent_plan import DescentPlan

        c = self.config
        return DescentPlan(
            descend=c.descend,
            llvm_dir=str(Path(c.llvm_dir).resolve()) if c.llvm_dir else None,
            compat_map=str(Path(c.compat_map).resolve()) if c.compat_map else None,
            test=self.test,
            build=asdict(c.build),
            llvm=c.llvm,
        )

    def phase(self, good: str, bad: str) -> PhaseSpec:
        return self._bisector(good, bad).phase()

    def workflow(self) -> str | None:
        from tritonbisect.domains.triton.descent_plan import WORKFLOW

        return WORKFLOW

    def prepare_session(self, session: Session) -> None:
        self._plan().save(session)

    def check_range(self, good: str, bad: str) -> None:
        from tritonbisect.domains.triton.descent_plan import WORKFLOW
        from tritonbisect.session.workflows import preflight

        super().check_range(good, bad)
        preflight(WORKFLOW)(self._bisector(good, bad), self._plan())


def _create(kw: dict[str, Any], settings: BisectSettings) -> TritonTarget:
    config = TritonTargetConfig(
        build=build_from_options(kw), llvm_dir=kw.get("llvm_dir"), llvm=llvm_config_from_options(kw),
        compat_map=kw.get("compat_map"), descend=not kw.get("no_descend_llvm"),
    )
    return TritonTarget(kw["triton_dir"], {}, config, first_parent=settings.search.first_parent)


_dir = click.Path(file_okay=False, path_type=Path)
# --triton-dir, --llvm-dir and the build options go with the PyTorch bisector too
_OPTIONS = (
    click.option("--triton-dir", type=_dir, help="Triton bisector: the Triton checkout (with --torch-dir: the Triton source of the pinned commits)."),
    click.option("--llvm-dir", type=_dir, help="llvm-project checkout (Triton/PyTorch bisectors), as for `triton`/`torch`."),
    click.option("--compat-map", type=click.Path(dir_okay=False, path_type=Path), help="Triton bisector: commits.csv for the LLVM descent."),
    click.option("--no-descend-llvm", is_flag=True, help="Triton bisector: stop at a culprit that bumps LLVM."),
    build_options,
    llvm_options,
)

HUNT_TARGET = TargetFactory(
    "triton", lambda kw: kw.get("triton_dir") is not None,
    frozenset({"triton_dir", "llvm_dir", "compat_map", "no_descend_llvm"}) | BUILD_OPTION_NAMES | LLVM_OPTION_NAMES,
    _create, _OPTIONS,
)
