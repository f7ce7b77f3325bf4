"""The PyTorch bisector: bisect PyTorch commits with the "torch" recipe.

At each PyTorch commit the recipe builds the wheel (with the user's USE_* flags) and installs
the Triton pinned in `.ci/docker/ci_commit_pins/triton.txt` at that commit, built once from
`--triton-dir` and taken from the artifact cache afterwards.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from tritonbisect.core.errors import InputError
from tritonbisect.core.history import History
from tritonbisect.domains.triton.bisector import TritonBuildOptions
from tritonbisect.session.session import PhaseSpec

TORCH_RECIPE = "torch"
TRITON_PIN = ".ci/docker/ci_commit_pins/triton.txt"


def parse_use_flags(items: Iterable[str]) -> dict[str, str]:
    """`--use FLAG=VAL` items as {"USE_FLAG": "VAL"} (the USE_ prefix is optional)."""
    flags: dict[str, str] = {}
    for item in items:
        name, sep, value = item.partition("=")
        name = name.strip().upper()
        if not sep or not name or not value:
            raise InputError(f"--use {item!r}: expected FLAG=VALUE, e.g. --use CUDA=0")
        if not name.startswith("USE_"):
            name = f"USE_{name}"
        flags[name] = value
    return flags


@dataclass
class TorchBisector:
    torch_dir: Path
    good: str
    bad: str
    test: dict
    build: TritonBuildOptions
    triton_dir: Path | None = None
    use: dict[str, str] = field(default_factory=dict)
    first_parent: bool = False
    llvm_dir: Path | None = None  # build the LLVM each pinned Triton pins, from this checkout
    device: str = "cuda"  # which pin file: triton.txt, triton-rocm.txt, triton-xpu.txt

    def __post_init__(self) -> None:
        self.history = History(self.torch_dir)
        self.good = self.history.resolve(self.good)
        self.bad = self.history.resolve(self.bad)
        self.triton = History(self.triton_dir) if self.triton_dir is not None else None

    def phase(self) -> PhaseSpec:
        return PhaseSpec(
            name="torch",
            repo=self.history.root,
            good=self.good,
            bad=self.bad,
            recipe_name=TORCH_RECIPE,
            recipe_config={
                **self.build.recipe_config(self.test),
                "triton_dir": str(self.triton.root) if self.triton else None,
                "use": self.use,
                **({"device": self.device} if self.device != "cuda" else {}),
                # the torch recipe is a TritonRecipe: with llvm_dir it builds the LLVM the
                # pinned Triton commit pins (llvmpin), cached by LLVM commit
                **({"llvm_dir": str(Path(self.llvm_dir).resolve())} if self.llvm_dir else {}),
            },
            first_parent=self.first_parent,
        )
