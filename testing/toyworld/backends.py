"""The LLVMs of late-2026 Triton besides upstream llvm-project, for the toy world.

* The fork (`make_world(fork=True)`): Triton's core pin moves to a commit of
  triton-lang/llvm-project: upstream new_llvm plus a local revert of an upstream change
  that breaks Triton's test (the APInt subtraction off by one). The fork commit is written
  into the toy llvm-project as the remote-tracking branch `triton-lang/main` (as a
  `git fetch` of the fork leaves it); upstream is `main`.
* ROCm's LLVM (`make_world(amd_backend=True)`): a second LLVM repository, the one
  cmake/amd-llvm-info.json pins; Triton's AMD code generator (third_party/amd/codegen) is a
  shared library built against it and loaded at run time. Its history has a regression of
  its own (add folding off by one) and, later, the fix.
"""

from __future__ import annotations

from pathlib import Path

from testing.toyworld import cuda_toolchain, llvm_repo, triton_repo
from testing.toyworld.gitstream import CommitSpec, add_commit, write_history

FORK = "triton-lang/llvm-project"
FORK_REF = "refs/remotes/triton-lang/main"
REVERTED_SUBJECT = "[ADT] Compute APInt subtraction with a single carry-in"
ROCM_AUTHORS = (("Ada Amdgpu", "ada@rocm.example"), ("Ben Wavefront", "ben@rocm.example"))


def fork_revert(state: llvm_repo.LLVMState, reverted: str, *, timestamp: int) -> CommitSpec:
    """The fork's local commit on top of upstream `state`: the revert of `reverted`."""
    return CommitSpec(
        tree=llvm_repo.render(state.with_(sub_regression=False)),
        subject=f'Revert "{REVERTED_SUBJECT}"',
        body=f"This reverts commit {reverted}.\n\nIt breaks Triton's elementwise sub kernel; "
             "kept local until upstream fixes it.",
        author=("Triton LLVM Bot", "llvm-bot@triton.example"),
        timestamp=timestamp,
    )


def rocm_plan(commits: int) -> list[tuple[llvm_repo.LLVMState, str, str, str]]:
    """ROCm's llvm-project, oldest first: (state, subject, body, kind). Kinds: "initial",
    "filler", "old" (what the first AMD pin names), "regression", "new" (the bumped pin, after
    the regression), "fix", "fixed" (the pin after the fix)."""
    if commits < 10:
        raise ValueError("too few ROCm LLVM commits: give at least 10")
    old, regression, fix = 2, commits // 2, commits - 2
    state = llvm_repo.LLVMState()
    fillers = llvm_repo._FillerCycle()
    plan = [(state, "Initial import of the toy ROCm llvm-project", "", "initial")]
    for i in range(1, commits):
        if i == regression:
            state = state.with_(regression=True)
            plan.append((state, "[AMDGPU] Fold uniform adds through the scalar carry chain",
                         "Saves a VALU instruction on wave64.", "regression"))
        elif i == fix:
            state = state.with_(regression=False)
            plan.append((state, "[AMDGPU] Fix the carry seed of uniform add folding", "", "fix"))
        else:
            state, subject, body = fillers.next(state)
            kind = {old: "old", fix - 1: "new", commits - 1: "fixed"}.get(i, "filler")
            plan.append((state, subject.replace("[Support]", "[AMDGPU]"), body, kind))
    return plan


def amd_positions(regression_fix: int, bump: int) -> dict[int, str]:
    """Where the AMD backend's events go in the Triton history: after the Triton regression
    is fixed and before the core LLVM bump, so that each range has one culprit."""
    codegen, fix = regression_fix + 3, bump - 1
    if fix - codegen < 2:
        raise ValueError("too few commits for the AMD backend: give at least 40 Triton commits")
    return {codegen: "amd-codegen", (codegen + fix) // 2: "amd-bump", fix: "amd-fix"}


def amd_step(kind: str, state, pins: dict[str, str]):
    """The Triton state and subject of an AMD event (pins: ROCm "old", "new", "fixed")."""
    if kind == "amd-codegen":
        return (state.with_(amd_hash=pins["old"]),
                f"[AMD] Build AMD code generation against its own LLVM ({pins['old'][:12]})")
    if kind == "amd-bump":
        return (state.with_(amd_hash=pins["new"]),
                f"[AMD] Bump the AMD LLVM to ROCm/llvm-project@{pins['new'][:12]}")
    return (state.with_(amd_hash=pins["fixed"]),
            f"[AMD] Bump the AMD LLVM to ROCm/llvm-project@{pins['fixed'][:12]}")


def write_fork(llvm_dir: Path, upstream: llvm_repo.LLVMState, base: str, reverted: str,
               timestamp: int) -> str:
    """The fork's commit (base + the revert of `reverted`) in the toy llvm-project, under
    FORK_REF; its sha."""
    return add_commit(llvm_dir, FORK_REF, base, fork_revert(upstream, reverted, timestamp=timestamp))


def write_rocm(path: Path, commits: int, t0: int) -> dict:
    """ROCm's toy llvm-project at `path`; its truth keys."""
    plan = rocm_plan(commits)
    specs = [CommitSpec(tree=llvm_repo.render(st), subject=subject, body=body,
                        author=ROCM_AUTHORS[i % len(ROCM_AUTHORS)], timestamp=t0 + i * 3600)
             for i, (st, subject, body, _k) in enumerate(plan)]
    shas = write_history(path, specs, branch="amd-staging")
    at = {kind: shas[i] for i, (*_r, kind) in enumerate(plan) if kind != "filler"}
    return {"rocm_order": shas, "rocm_old": at["old"], "rocm_new": at["new"], "rocm_fixed": at["fixed"],
            "rocm_regression": at["regression"], "rocm_fix": at["fix"]}


def later_step(kind: str, state, amd_pins: dict[str, str]):
    """An AMD backend or NVIDIA toolchain event of the Triton history: (state, subject)."""
    if kind.startswith("nv-"):
        return cuda_toolchain.toolchain_step(kind, state)
    return amd_step(kind, state, amd_pins)


def later_truth(triton: list[str], kinds: list[str], states: list) -> dict:
    """Truth keys of the AMD backend's and the NVIDIA toolchain's events (by their kind):
    amd_codegen, amd_bump, amd_fix, amd_bump_range (its only culprit is amd_bump),
    triton_amd_pins, and then the core bump's llvm_bump_range (after the AMD fix);
    nv_toolchain, nv_toolchain_bump (to the ptxas that miscompiles sub), nv_toolchain_fix."""
    at = {kind.replace("-", "_"): triton[i] for i, kind in enumerate(kinds) if kind.startswith(("amd-", "nv-"))}
    if "amd_codegen" in at:
        at.update(amd_bump_range=[at["amd_codegen"], triton[kinds.index("amd-fix") - 1]],
                  llvm_bump_range=[at["amd_fix"], triton[-1]],
                  triton_amd_pins={sha: st.amd_hash or None for sha, st in zip(triton, states, strict=True)},
                  amd_repository=triton_repo.AMD_REPOSITORY)
    return at
