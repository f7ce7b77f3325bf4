"""A hint about where the culprit is, as a prior over the commits: pure, no I/O.

A user (or `narrow`) says which compiler pass changed, or which files; the commits that touch
the pass's sources are more likely to be the culprit. This module holds the two pure parts:

Finding a pass's sources in texts
---------------------------------
MLIR declares a pass in a TableGen file (Triton: include/triton/Dialect/TritonGPU/Transforms/
Passes.td, third_party/nvidia/include/TritonNVIDIAGPUToLLVM/Passes.td; MLIR itself:
mlir/include/mlir/Transforms/Passes.td):

    def TritonGPUCoalesce : Pass<"tritongpu-coalesce", "mlir::ModuleOp"> { ... }

and implements it in a C++ file that asks TableGen for the pass's base class and derives
from it (Triton's lib/Dialect/TritonGPU/Transforms/Coalesce.cpp):

    #define GEN_PASS_DEF_TRITONGPUCOALESCE
    struct CoalescePass : public impl::TritonGPUCoalesceBase<CoalescePass> { ... }

(older MLIR: `TritonGPUCoalesceBase<CoalescePass>` and a hand-written
`std::unique_ptr<Pass> createTritonGPUCoalescePass() { ... }`). A pass is named by its
TableGen name (what MLIR_ENABLE_DUMP prints, `TritonGPUCoalesce`), its argument
(`tritongpu-coalesce`), or narrow's label (`TritonGPUCoalesce (tritongpu-coalesce)`).
A conversion pass (`Convert...`, argument `convert-...`) works through the
patterns of its folder, so every source file there counts too, and the vendor-neutral
patterns of lib/Conversion/<folder without NVIDIA/AMD> (Triton's TritonGPUToLLVM).

The prior and its strength
--------------------------
Of n commits, m are hinted. A hinted commit weighs r times an other one. The search costs
about -log2 P(culprit) tests, so a hinted culprit costs log2((r m + n - m) / r) tests instead
of log2 n, and a culprit elsewhere log2(r m + n - m) - log2 1 = log2 n + log2(1 + (r-1) m/n):
choosing  r = 1 + (2**B - 1) n / m  bounds what a wrong hint costs to B bits (tests), whatever
m is. B = WRONG_HINT_BITS = 2; bench/prior_bench.py measures both sides.
"""

from __future__ import annotations

import fnmatch
import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

# What a misleading hint may cost, in tests (bits of the prior's extra surprise).
WRONG_HINT_BITS = 2.0
# The hint's verdict at the end: the evidence went against it when the hinted commits keep
# less than this fraction of the mass they started with.
AGAINST_RATIO = 0.1

_PASS_DEF = re.compile(r'^\s*def\s+(\w+)\s*:\s*(?:Interface)?Pass\s*<\s*"([^"]+)"', re.MULTILINE)
_LABEL = re.compile(r"^\s*([\w-]+)(?:\s*\(([\w-]+)\))?")
SOURCE_SUFFIXES = (".cpp", ".cc", ".cxx", ".c", ".h", ".hpp", ".td", ".py")
_VENDOR = re.compile(r"(NVIDIA|AMD|Nvidia|Amd)")


@dataclass(frozen=True)
class PassDecl:
    name: str  # TritonGPUCoalesce
    arg: str  # tritongpu-coalesce
    td: str  # the .td file that declares it

    @property
    def conversion(self) -> bool:
        # MLIR's naming of conversion passes; not the folder: Triton's
        # Conversion/TritonGPUToLLVM/Passes.td also declares AllocateSharedMemory and friends
        return self.name.startswith("Convert") or self.arg.startswith("convert-")


def declared_passes(td_files: Mapping[str, str]) -> list[PassDecl]:
    """Every `def NAME : Pass<"arg", ...>` of the given TableGen texts (path -> text)."""
    out = []
    for path in sorted(td_files):
        for m in _PASS_DEF.finditer(td_files[path]):
            out.append(PassDecl(m.group(1), m.group(2), path))
    return out


def pass_query(text: str) -> str:
    """The name or argument in what the user gave: `TritonGPUCoalesce`, `tritongpu-coalesce`,
    or narrow's label `TritonGPUCoalesce (tritongpu-coalesce)` (its name)."""
    m = _LABEL.match(text)
    return m.group(1) if m else text.strip()


def find_pass(query: str, decls: Iterable[PassDecl]) -> list[PassDecl]:
    """The declarations a query names: by TableGen name or by argument, exact first, then
    case-insensitive (`tritongpucoalesce`), then with a `Pass` suffix dropped."""
    q = pass_query(query)
    decls = list(decls)
    for key in (lambda s: s, str.lower, lambda s: s.lower().removesuffix("pass")):
        hits = [d for d in decls if key(d.name) == key(q) or key(d.arg) == key(q)]
        if hits:
            return hits
    return []


def implementation_markers(name: str) -> list[str]:
    """Fixed strings a file implementing the pass contains (for a fast search of a tree)."""
    return [f"GEN_PASS_DEF_{name.upper()}", f"{name}Base<", f"create{name}"]


def implements(name: str, text: str) -> bool:
    """Whether a source text implements pass `name` (not merely uses it)."""
    if f"GEN_PASS_DEF_{name.upper()}" in text or f"{name}Base<" in text:
        return True
    # a hand-written factory: `std::unique_ptr<...> [ns::]createNAME[Pass](...) {`
    return re.search(
        r"std::unique_ptr<[^;{}]*>\s*(?:[\w:]+::)?create" + re.escape(name) + r"(?:Pass)?\s*\([^;{}]*\)\s*(?:const\s*)?\{",
        text,
    ) is not None


def conversion_files(impl: Iterable[str], tree: Iterable[str]) -> list[str]:
    """For a conversion pass implemented in `impl`: the source files of the same folders, and
    of lib/Conversion/<folder with the vendor dropped> (shared patterns)."""
    folders = {p.rsplit("/", 1)[0] for p in impl if "/" in p}
    shared = set()
    for folder in folders:
        base = folder.rsplit("/", 1)[-1]
        plain = _VENDOR.sub("", base)
        shared.add(f"lib/Conversion/{plain}")
    out = []
    for path in tree:
        if not path.endswith(SOURCE_SUFFIXES) or "/" not in path:
            continue
        folder = path.rsplit("/", 1)[0]
        if folder in folders or folder in shared:
            out.append(path)
    return sorted(out)


def glob_files(patterns: Sequence[str], tree: Iterable[str]) -> dict[str, list[str]]:
    """--prefer-files: each glob's matches in the tree (`**` crosses folders; a pattern without
    a slash matches a file name anywhere; a folder matches everything under it)."""
    tree = list(tree)
    out: dict[str, list[str]] = {}
    for pat in patterns:
        clean = pat.strip().removeprefix("./")
        hits = []
        for path in tree:
            name = path.rsplit("/", 1)[-1]
            if (fnmatch.fnmatchcase(path, clean) or ("/" not in clean and fnmatch.fnmatchcase(name, clean))
                    or path.startswith(clean.rstrip("/") + "/")):
                hits.append(path)
        out[pat] = sorted(hits)
    return out


# --------------------------------------------------------------------------------------------
# The prior.


def hint_ratio(n: int, m: int, bits: float = WRONG_HINT_BITS) -> float:
    """How much more a hinted commit weighs than another (see the module docstring)."""
    if m <= 0 or m >= n:
        return 1.0
    return 1.0 + (2.0 ** bits - 1.0) * n / m


def prior_weights(order: Sequence[str], hinted: Iterable[str], *, bits: float = WRONG_HINT_BITS,
                  ratio: float | None = None) -> list[float]:
    """P(culprit = order[i]) before any test: uniform, the hinted commits `ratio` times heavier
    (default: `hint_ratio`, which bounds a wrong hint's cost to `bits` tests)."""
    hint = set(hinted)
    flags = [c in hint for c in order]
    m = sum(flags)
    r = hint_ratio(len(order), m, bits) if ratio is None else float(ratio)
    w = [r if f else 1.0 for f in flags]
    total = sum(w)
    return [x / total for x in w]


def expected_tests(prior: Sequence[float], i: int) -> float:
    """Roughly what finding order[i] costs under `prior`: its surprise in bits."""
    return -math.log2(prior[i]) if prior[i] > 0 else math.inf


@dataclass
class HintVerdict:
    """What the tests said about the hint."""

    prior_mass: float  # P(culprit is a hinted commit) before any test
    posterior_mass: float  # ... after every verdict
    culprit_hinted: bool | None  # None: no single culprit
    against: bool = field(init=False)

    def __post_init__(self) -> None:
        if self.culprit_hinted is not None:
            self.against = not self.culprit_hinted
        else:
            self.against = self.posterior_mass < AGAINST_RATIO * self.prior_mass

    def sentence(self) -> str:
        moved = f"P(a hinted commit) {self.prior_mass:.2f} before the tests, {self.posterior_mass:.3f} after"
        if self.against:
            return f"the evidence went against the hint: {moved}"
        if self.culprit_hinted:
            return f"the evidence agrees with the hint: the culprit is a hinted commit ({moved})"
        return f"the hint is undecided: {moved}"


def hint_verdict(order: Sequence[str], hinted: Iterable[str], prior: Sequence[float],
                 posterior: Sequence[float], culprit: str | None) -> HintVerdict:
    hint = set(hinted)
    idx = [i for i, c in enumerate(order) if c in hint]
    return HintVerdict(
        prior_mass=sum(prior[i] for i in idx),
        posterior_mass=sum(posterior[i] for i in idx),
        culprit_hinted=None if culprit is None else culprit in hint,
    )


def narrowed_passes(narrowed: Mapping[str, object] | None) -> list[str]:
    """The pass names a narrowing result (narrow/compare.py) points at: the first pass whose
    output differs, else the pass running when the culprit's compile failed; none when the
    IR differs before the first pass (the frontend)."""
    if not narrowed:
        return []
    first = narrowed.get("first_difference")
    label = first.get("pass") if isinstance(first, Mapping) else None
    if not isinstance(label, str) or label.startswith("("):
        label = narrowed.get("running_pass") if isinstance(narrowed.get("running_pass"), str) else None
    if not label:
        return []
    return [pass_query(str(label))]
