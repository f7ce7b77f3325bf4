"""The LLVM bisector: bisect llvm-project, building at each LLVM commit a Triton that builds
against it.

Which Triton commit is built at an LLVM commit is the *assignment*: from the compatibility
map (`CompatMap.triton_for_llvm`), or one fixed Triton commit (`--triton-commit`, or the
bump's parent in the descent) where some LLVM commits may not build and are skipped.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tritonbisect.core.errors import InputError
from tritonbisect.core.history import History
from tritonbisect.domains.triton.bisector import TritonBuildOptions
from tritonbisect.session.session import PhaseSpec

LLVM_RECIPE = "llvm-triton"


def open_llvm_repo(llvm_dir: Path | None, *, why: str = "") -> History:
    """History of llvm-project; one-line InputError when it is not given or not a repo."""
    if llvm_dir is None:
        raise InputError(f"--llvm-dir DIR (an llvm-project checkout) is required{why}")
    path = Path(llvm_dir)
    if not path.is_dir():
        raise InputError(f"--llvm-dir {path}: no such directory")
    return History(path)


def resolve_llvm(history: History, rev: str, *, what: str, repository: str | None = None) -> str:
    """Full sha of an LLVM revision, or a one-line InputError saying what to fetch (from the
    fork `repository` a pin names, when it is not llvm/llvm-project)."""
    try:
        return history.resolve(rev)
    except InputError:
        from tritonbisect.domains.llvm.fork import missing_pin_message

        raise InputError(missing_pin_message(Path(history.root), rev, what, repository)) from None


def fork_endpoints(history: History, good: str, bad: str):
    """(good, bad, ForkRange | None): when either pin is a fork commit, the upstream bases to
    bisect between and the patch stack to replay (fork.py); else the pins themselves."""
    from tritonbisect.domains.llvm.fork import fork_range

    fork = fork_range(history, good, bad)
    if fork is None:
        return good, bad, None
    return fork.good_base, fork.bad_base, fork


def llvm_order(history: History, good: str, bad: str) -> list[str]:
    """The good endpoint followed by every candidate commit, oldest first."""
    return [good, *history.candidates(good, bad).order]


def load_compat_map(path: Path):
    """Read a commits.csv; errors name the file and line."""
    from tritonbisect.domains.llvm.compat_map import read_map

    if not Path(path).is_file():
        raise InputError(f"--compat-map {path}: no such file")
    return read_map(Path(path))


def check_map_commits(cmap, path: Path, triton: History, llvm: History) -> list[str]:
    """Validate the map against the checkouts; returns the map's LLVM order (old→new).

    Every row's commits must exist, and its LLVM commits must lie in old_llvm..new_llvm in
    order: else one InputError naming the CSV line.
    """
    for row in cmap.rows:
        for sha, hist, what in (
            (row.triton_commit, triton, "Triton commit"),
            (row.llvm_commit_last_compatible, llvm, "LLVM commit"),
        ):
            if not _exists(hist, sha):
                raise InputError(f"{path}:{row.line}: {what} {sha[:12]} not found in {hist.root}")
    for key in ("old_llvm", "new_llvm"):
        if not _exists(llvm, cmap.metadata[key]):
            raise InputError(f"{path}: {key} {cmap.metadata[key][:12]} not found in {llvm.root}")
    order = llvm_order(llvm, cmap.metadata["old_llvm"], cmap.metadata["new_llvm"])
    from tritonbisect.domains.llvm.compat_map import order_problems

    problems = order_problems(cmap, path, order)
    if problems:
        raise InputError(problems[0])
    return order


def _exists(history: History, sha: str) -> bool:
    try:
        history.resolve(sha)
    except InputError:
        return False
    return True


def assign_triton(
    order: Sequence[str], *, cmap=None, map_order: Sequence[str] = (), fixed: str | None = None
) -> dict[str, str]:
    """The Triton commit to build at each LLVM commit of `order` (oldest first).

    With a map, `map_order` is the map's whole LLVM range (old_llvm..new_llvm), which must
    contain `order`.
    """
    if cmap is not None:
        outside = [c for c in (order[0], order[-1]) if c not in set(map_order)]
        if outside:
            raise InputError(
                f"LLVM commit {outside[0][:12]} is outside the compatibility map's range "
                f"{cmap.metadata['old_llvm'][:12]}..{cmap.metadata['new_llvm'][:12]}"
            )
        return {c: cmap.triton_for_llvm(c, map_order) for c in order}
    if fixed is None:
        raise ValueError("assign_triton needs a compat map or a fixed Triton commit")
    return {c: fixed for c in order}


def llvm_recipe_config(
    *,
    triton_dir: Path,
    assignment: dict[str, str],
    default_triton: str,
    test: dict,
    build: TritonBuildOptions,
    llvm: dict,
    fork: Any = None,
) -> dict:
    config = {
        **build.recipe_config(test),
        "triton_dir": str(triton_dir),
        "triton_commits": assignment,
        "triton_commit": default_triton,
        "llvm": llvm,
    }
    if fork is not None:  # a ForkRange: the patch stack replayed at every step
        config["fork"] = fork.config()
    return config


def llvm_phase(bisector: Any, *, name: str, assignment: dict[str, str], default_triton: str,
               **spec: Any) -> PhaseSpec:
    """The "llvm-triton" phase of a bisector over llvm-project (LLVMBisector, PairsBisector):
    its LLVM endpoints, test, build options and LLVM config; `assignment` pins the Triton
    commit built at each LLVM commit. `spec`: further PhaseSpec fields."""
    return PhaseSpec(
        name=name,
        repo=bisector.llvm_history.root,
        good=bisector.good_llvm,
        bad=bisector.bad_llvm,
        recipe_name=LLVM_RECIPE,
        recipe_config=llvm_recipe_config(
            triton_dir=bisector.triton.root,
            assignment=assignment,
            default_triton=default_triton,
            test=bisector.test,
            build=bisector.build,
            llvm=bisector.llvm,
            fork=getattr(bisector, "fork", None),
        ),
        **spec,
    )


@dataclass
class LLVMBisector:
    """`tritonbisect llvm` and the descent: bisect llvm-project with the "llvm-triton" recipe."""

    triton_dir: Path
    llvm_dir: Path | None  # None: a one-line InputError when the phase opens it
    good_llvm: str
    bad_llvm: str
    test: dict
    build: TritonBuildOptions
    compat_map: Path | None = None
    triton_commit: str | None = None  # fixed Triton commit (no map); default: triton HEAD
    bad_triton: str | None = None  # without a map: the Triton commit at the bad endpoint
    llvm: dict = field(default_factory=dict)  # LLVMConfig fields
    name: str = "llvm"

    def __post_init__(self) -> None:
        self.triton = History(self.triton_dir)
        self.llvm_history = open_llvm_repo(self.llvm_dir)
        self.good_llvm = resolve_llvm(self.llvm_history, self.good_llvm, what="good")
        self.bad_llvm = resolve_llvm(self.llvm_history, self.bad_llvm, what="bad")
        self.good_llvm, self.bad_llvm, self.fork = fork_endpoints(self.llvm_history, self.good_llvm,
                                                                  self.bad_llvm)
        self.cmap = None
        self.map_order: list[str] = []
        if self.compat_map is not None:
            self.cmap = load_compat_map(self.compat_map)
            self.map_order = check_map_commits(
                self.cmap, self.compat_map, self.triton, self.llvm_history
            )
        self.fixed = self.triton.resolve(self.triton_commit or "HEAD")

    def assignment(self) -> dict[str, str]:
        order = llvm_order(self.llvm_history, self.good_llvm, self.bad_llvm)
        raw = assign_triton(order, cmap=self.cmap, map_order=self.map_order, fixed=self.fixed)
        if self.cmap is None and self.bad_triton:
            raw[self.bad_llvm] = self.bad_triton
        resolved: dict[str, str] = {}
        full = {}
        for llvm_sha, triton_sha in raw.items():
            if triton_sha not in full:
                full[triton_sha] = self.triton.resolve(triton_sha)
            resolved[llvm_sha] = full[triton_sha]
        return resolved

    def phase(self) -> PhaseSpec:
        assignment = self.assignment()
        return llvm_phase(self, name=self.name, assignment=assignment,
                          default_triton=assignment.get(self.bad_llvm, self.fixed))
