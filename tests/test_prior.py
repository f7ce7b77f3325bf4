"""The pass hint's pure parts (search/prior.py) and the Bayesian search started from a prior.

Facts of the real Triton tree these tests hold the finder to (read from triton-lang/triton):
- passes are declared in TableGen: include/triton/Dialect/TritonGPU/Transforms/Passes.td has
  `def TritonGPUCoalesce: Pass<"tritongpu-coalesce", "mlir::ModuleOp">` (no space before the
  colon in some releases), the NVIDIA conversion in
  third_party/nvidia/include/TritonNVIDIAGPUToLLVM/Passes.td;
- lib/Dialect/TritonGPU/Transforms/Coalesce.cpp implements it with
  `#define GEN_PASS_DEF_TRITONGPUCOALESCE` and
  `struct CoalescePass : public impl::TritonGPUCoalesceBase<CoalescePass>`;
- third_party/nvidia/lib/TritonNVIDIAGPUToLLVM/TritonGPUToLLVM.cpp has
  `struct ConvertTritonGPUToLLVM : public triton::impl::ConvertTritonGPUToLLVMBase<...>`, its
  patterns in the same folder and in lib/Conversion/TritonGPUToLLVM;
- older releases: `class ConvertTritonGPUToLLVM : public ConvertTritonGPUToLLVMBase<...>` and a
  hand-written `std::unique_ptr<OperationPass<ModuleOp>> createConvertTritonGPUToLLVMPass()`;
- python/src/passes.cc only uses the factory: `ADD_PASS_WRAPPER_0("add_coalesce", createTritonGPUCoalesce)`.
"""

from __future__ import annotations

import math
import random

import pytest

from tritonbisect.search import bayes, bayes_step, prior
from tritonbisect.search import classic as search

TD = '''include "mlir/Pass/PassBase.td"

def TritonGPUCoalesce: Pass<"tritongpu-coalesce", "mlir::ModuleOp"> {
  let summary = "coalesce";
}

def TritonGPURemoveLayoutConversions : Pass<"tritongpu-remove-layout-conversions", "mlir::ModuleOp"> {
}
'''
TD_NV = 'def ConvertTritonGPUToLLVM : Pass<"convert-triton-gpu-to-llvm", "mlir::ModuleOp"> {\n}\n'
GPU_TD = "include/triton/Dialect/TritonGPU/Transforms/Passes.td"
NV_TD = "third_party/nvidia/include/TritonNVIDIAGPUToLLVM/Passes.td"


def _decls() -> list[prior.PassDecl]:
    return prior.declared_passes({GPU_TD: TD, NV_TD: TD_NV})


def test_declarations_are_read_as_real_triton_writes_them() -> None:
    decls = {d.name: d for d in _decls()}
    assert decls["TritonGPUCoalesce"].arg == "tritongpu-coalesce"
    assert decls["TritonGPUCoalesce"].td == GPU_TD and not decls["TritonGPUCoalesce"].conversion
    assert decls["ConvertTritonGPUToLLVM"].conversion
    assert decls["TritonGPURemoveLayoutConversions"].arg == "tritongpu-remove-layout-conversions"


@pytest.mark.parametrize("query", ["TritonGPUCoalesce", "tritongpu-coalesce", "TritonGPUCoalesce (tritongpu-coalesce)",
                                   "tritongpucoalesce", "TritonGPUCoalescePass"])
def test_a_pass_is_found_by_name_argument_or_narrow_label(query: str) -> None:
    hits = prior.find_pass(query, _decls())
    assert [d.name for d in hits] == ["TritonGPUCoalesce"]


def test_an_unknown_pass_is_not_found() -> None:
    assert prior.find_pass("TritonGPUPipeline", _decls()) == []


def test_implementation_is_told_from_use() -> None:
    cpp = ('#define GEN_PASS_DEF_TRITONGPUCOALESCE\n#include "triton/Dialect/TritonGPU/Transforms/Passes.h.inc"\n'
           "struct CoalescePass : public impl::TritonGPUCoalesceBase<CoalescePass> {};\n")
    assert prior.implements("TritonGPUCoalesce", cpp)
    old = ("class ConvertTritonGPUToLLVM : public ConvertTritonGPUToLLVMBase<ConvertTritonGPUToLLVM> {};\n")
    assert prior.implements("ConvertTritonGPUToLLVM", old)
    factory = ("std::unique_ptr<OperationPass<ModuleOp>>\nmlir::triton::createConvertTritonGPUToLLVMPass() {\n"
               "  return std::make_unique<X>();\n}\n")
    assert prior.implements("ConvertTritonGPUToLLVM", factory)
    use = 'ADD_PASS_WRAPPER_0("add_coalesce", createTritonGPUCoalesce);\n'
    assert not prior.implements("TritonGPUCoalesce", use)
    assert all(m in cpp or m.startswith("create") for m in prior.implementation_markers("TritonGPUCoalesce"))


def test_a_conversion_pass_brings_its_patterns() -> None:
    tree = [
        "third_party/nvidia/lib/TritonNVIDIAGPUToLLVM/TritonGPUToLLVM.cpp",
        "third_party/nvidia/lib/TritonNVIDIAGPUToLLVM/LoadStoreOpToLLVM.cpp",
        "lib/Conversion/TritonGPUToLLVM/ElementwiseOpToLLVM.cpp",
        "lib/Conversion/TritonGPUToLLVM/CMakeLists.txt",
        "lib/Dialect/TritonGPU/Transforms/Coalesce.cpp",
    ]
    got = prior.conversion_files(["third_party/nvidia/lib/TritonNVIDIAGPUToLLVM/TritonGPUToLLVM.cpp"], tree)
    assert got == sorted(tree[:3])


def test_globs_match_paths_names_and_folders() -> None:
    tree = ["lib/Dialect/TritonGPU/Transforms/Coalesce.cpp", "lib/Dialect/TritonGPU/Transforms/CoalesceUtils.cpp",
            "python/src/passes.cc"]
    got = prior.glob_files(["lib/**/Coalesce*", "passes.cc", "./lib/Dialect", "nothing/*"], tree)
    assert got["lib/**/Coalesce*"] == tree[:2]
    assert got["passes.cc"] == ["python/src/passes.cc"]
    assert got["./lib/Dialect"] == tree[:2]
    assert got["nothing/*"] == []


@pytest.mark.parametrize("n,m", [(600, 30), (600, 1), (600, 300), (50, 7), (4000, 12)])
def test_the_ratio_bounds_a_wrong_hint_to_two_bits(n: int, m: int) -> None:
    order = [f"c{i}" for i in range(n)]
    hinted = order[:m]
    w = prior.prior_weights(order, hinted)
    assert math.isclose(sum(w), 1.0)
    wrong_extra = prior.expected_tests(w, n - 1) - math.log2(n)
    assert wrong_extra <= prior.WRONG_HINT_BITS + 1e-9
    assert math.isclose(wrong_extra, prior.WRONG_HINT_BITS)
    right = prior.expected_tests(w, 0)
    assert right < math.log2(n)


def test_no_hinted_commit_or_all_of_them_is_uniform() -> None:
    order = ["a", "b", "c"]
    assert prior.prior_weights(order, []) == pytest.approx([1 / 3] * 3)
    assert prior.prior_weights(order, order) == pytest.approx([1 / 3] * 3)


def test_the_verdict_says_when_the_evidence_went_against_the_hint() -> None:
    order = ["a", "b", "c", "d"]
    w = prior.prior_weights(order, ["b"])
    against = prior.hint_verdict(order, ["b"], w, [0.0, 0.0, 1.0, 0.0], "c")
    assert against.against and "went against the hint" in against.sentence()
    agrees = prior.hint_verdict(order, ["b"], w, [0.0, 1.0, 0.0, 0.0], "b")
    assert not agrees.against and "agrees" in agrees.sentence()
    undecided = prior.hint_verdict(order, ["b"], w, [0.0, 0.5, 0.5, 0.0], None)
    assert not undecided.against


def test_narrowed_passes_reads_narrows_result() -> None:
    assert prior.narrowed_passes({"first_difference": {"pass": "TritonGPUCoalesce (tritongpu-coalesce)"}}) == [
        "TritonGPUCoalesce"]
    frontend = {"first_difference": {"pass": "(the frontend, before X (x))"}, "running_pass": None}
    assert prior.narrowed_passes(frontend) == []
    crash = {"first_difference": None, "running_pass": "TritonGPURemoveLayoutConversions (tritongpu-remove-layout-conversions)"}
    assert prior.narrowed_passes(crash) == ["TritonGPURemoveLayoutConversions"]


# --- the search from a prior ---------------------------------------------------------------------


def test_the_posterior_starts_from_the_prior() -> None:
    cands = search.Candidates.linear([f"c{i}" for i in range(10)])
    w = prior.prior_weights(cands.order, ["c3"])
    post = bayes.posterior(cands, {}, prior=w)
    assert post.w == pytest.approx(w)
    # a verdict moves it as without a prior: c3 good excludes c0..c3
    after = bayes.posterior(cands, {"c3": (1, 0)}, model=bayes.FlakeModel(p=0.0, q=0.0), prior=w)
    assert sum(after.w[:4]) < 1e-3
    with pytest.raises(ValueError):
        bayes.posterior(cands, {}, prior=[1.0])


def _run(order: list[str], culprit: int, weights: list[float] | None) -> tuple[int, str]:
    cands = search.Candidates.linear(order)
    counts: dict[str, tuple[int, int]] = {order[-1]: (0, 1)}
    tested: set[str] = set()
    model = bayes.FlakeModel(trust=0.9)
    for _ in range(60):
        action = bayes_step.next_step(cands, counts, model=model, cached=frozenset(tested), prior=weights)
        if isinstance(action, search.TestNext):
            c = action.commits[0]
            tested.add(c)
            g, b = counts.get(c, (0, 0))
            counts[c] = (g, b + 1) if order.index(c) >= culprit else (g + 1, b)
            continue
        assert isinstance(action, search.Found)
        return len(tested - {order[-1]}), action.culprit
    raise AssertionError("no answer")


def test_a_right_hint_saves_builds_and_a_wrong_one_costs_little() -> None:
    rng = random.Random(5)
    order = [f"c{i:03d}" for i in range(600)]
    right_saved, wrong_extra = [], []
    for _ in range(12):
        hinted = set(rng.sample(order[:-1], 30))
        w = prior.prior_weights(order, hinted)
        inside = rng.choice(sorted(hinted))
        outside = rng.choice([c for c in order[:-1] if c not in hinted])
        for culprit, bucket in ((inside, right_saved), (outside, wrong_extra)):
            i = order.index(culprit)
            with_hint, found = _run(order, i, w)
            assert found == culprit
            without, found = _run(order, i, None)
            assert found == culprit
            bucket.append(with_hint - without)
    assert sum(right_saved) / len(right_saved) <= -2.5  # ~0.65x of ~9.5 builds
    assert max(wrong_extra) <= 3 and sum(wrong_extra) / len(wrong_extra) <= 2.0


def test_the_prior_never_decides_the_answer() -> None:
    """c5 is hinted, c4 is not; c3 passed and c5 failed. The prior alone makes c5 ~98% likely,
    but nothing has told c4 from c5: the search must test c4, not answer c5."""
    order = [f"c{i}" for i in range(12)]
    cands = search.Candidates.linear(order)
    w = prior.prior_weights(order, ["c5"])
    counts = {"c3": (1, 0), "c5": (0, 1), order[-1]: (0, 1)}
    model = bayes.FlakeModel(trust=0.9)
    assert bayes.posterior(cands, counts, model=model, prior=w).prob("c5") > 0.95
    action = bayes_step.next_step(cands, counts, model=model, prior=w, cached=frozenset(["c3", "c5"]))
    assert isinstance(action, search.TestNext) and action.commits == ("c4",)
    found = bayes_step.next_step(cands, {**counts, "c4": (0, 1)}, model=model, prior=w)
    assert found == search.Found("c4")
