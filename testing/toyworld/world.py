"""make_world: generate the toy llvm-project, triton (and optionally pytorch) git repos.

The world is deterministic: the same parameters give the same commit shas every time.

llvm-project (llvm_commits commits, oldest first):
    0 initial import, 1 filler, 2 = old_llvm, ... , N-3 = new_llvm, N-2, N-1 fillers.
    Between old_llvm and new_llvm, evenly spaced: the behaviour regression (add folding off by
    one), `api_breaks` API breaks (each its own first-incompatible commit), and an LLVM-internal
    broken commit (its own build fails) fixed by the next commit; fillers elsewhere.
triton (triton_commits commits): pinned at old_llvm; a Triton regression (the vectorized
    elementwise loop drops the last element), a commit that does not compile fixed by the next
    one, the fix of the regression, the LLVM bump to new_llvm that adapts to every API break,
    fillers. The test fails after the bump because of the LLVM regression.

Truth keys (all shas full 40-hex):
    params                   the parameters of make_world
    llvm_order               every llvm-project commit, oldest first
    old_llvm, new_llvm       the bump's old and new pins
    llvm_api_breaks          per break, in order: commit, last_compatible (its parent), header,
                             file (the Triton source to fix), old, new (the exact replacement),
                             old_symbol, new_symbol, key, subject
    llvm_last_compatible     [b["last_compatible"] for b in llvm_api_breaks]
    llvm_regression          the commit from which add folding is off by one
    llvm_broken              [the commit whose own LLVM build fails]; llvm_broken_fix: the next
    llvm_cmake_args          the contract's cmake -D arguments (argv form)
    triton_order             every triton commit, oldest first
    triton_regression        the commit that drops the last element of the kernel's tail
    triton_regression_fix    the commit that fixes it
    triton_regression_range  [good, bad]: a range whose only culprit is triton_regression
                             (it also holds triton_broken)
    triton_broken            [the commit that does not compile]; triton_broken_fix: the next
    bump, bump_parent        the LLVM bump (pins new_llvm, adapts to every break) and its parent
    good_triton              = triton_regression_fix: passes, pinned at old_llvm
    bad_triton_llvm          the last triton commit: fails only through the LLVM regression
    llvm_bump_range          [good_triton, bad_triton_llvm]: its only culprit is the bump
    triton_llvm_pins         {triton sha: llvm sha it pins}
  eras (make_world(eras=True)):
    era_root_layout          setup.py moves to the top (stub python/pyproject.toml), needs lld
    era_info_json            the pin moves to cmake/llvm-info.json (same LLVM, build 1)
    era_next_build           cmake/llvm-build-info.json appears: new_llvm from a fork, before
                             the bump (the next LLVM being prepared, never the pin)
    era_prebuilt_rebuild     build_number only: another prebuilt of the same LLVM
    triton_pin_files         {triton sha: the file holding its pin}
    triton_build_numbers     {triton sha: build number, None before llvm-info.json}
    triton_test              "python test/test_toy.py" (run in the triton worktree)
    triton_version_prefix    "3.6.0+git" (wheel version: prefix + sha[:8])
  with_torch (+ torch_submodule: torch_submodule = {path, url, commits, bump}):
    torch_order, torch_regression, torch_good, torch_bad, torch_triton_pins
    ({torch sha: pinned triton sha}), torch_test ("python test/test_toytorch.py"),
    torch_pin_file (".ci/docker/ci_commit_pins/triton.txt")
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from pathlib import Path

from testing.toyworld import backends, cuda_toolchain, llvm_repo, torch_repo, triton_repo
from testing.toyworld.apibreaks import BREAKS, MAX_API_BREAKS
from testing.toyworld.gitstream import CommitSpec, write_history

BASE_TIME = 1735689600  # 2025-01-01T00:00:00Z
HOUR = 3600

LLVM_AUTHORS = (
    ("Alice Compiler", "alice@llvm.example"),
    ("Bob Optimizer", "bob@llvm.example"),
    ("Carol Backend", "carol@llvm.example"),
    ("Dan Dialect", "dan@llvm.example"),
)
TRITON_AUTHORS = (
    ("Erin Kernel", "erin@triton.example"),
    ("Frank Frontend", "frank@triton.example"),
    ("Grace Layout", "grace@triton.example"),
)
TORCH_AUTHORS = (
    ("Heidi Inductor", "heidi@pytorch.example"),
    ("Ivan Eager", "ivan@pytorch.example"),
)

# The contract's LLVM configuration, in argv form (no shell quoting around "mlir;lld"): what real
# Triton links against (host, NVPTX and AMDGPU code generators; lld for the AMD backend).
LLVM_CMAKE_ARGS = (
    "-DLLVM_ENABLE_PROJECTS=mlir;lld",
    "-DLLVM_TARGETS_TO_BUILD=host;NVPTX;AMDGPU",
    "-DCMAKE_BUILD_TYPE=Release",
)

FORK = "triton-lang/llvm-project"  # where the next LLVM build comes from (llvm-build-info.json)


@dataclass
class ToyWorld:
    root: Path
    llvm: Path
    triton: Path
    torch: Path | None
    truth: dict = field(default_factory=dict)

    def truth_json(self) -> str:
        return json.dumps(self.truth, indent=2, sort_keys=True)


def _spread(n_events: int, first: int, last: int, what: str, min_gap: int = 3) -> list[int]:
    """Positions of n_events events evenly spread in [first, last], at least min_gap apart."""
    span = last - first + 1
    gap = span / (n_events + 1)
    if gap < min_gap:
        need = min_gap * (n_events + 1) - span
        raise ValueError(f"too few commits for {what}: give at least {need} more")
    return [first - 1 + round((j + 1) * gap) for j in range(n_events)]


def _commits(plan, render, authors, *, start: int, hours_apart: int) -> list[CommitSpec]:
    """The commits of a planned history: (state, subject, body, kind) -> CommitSpec."""
    return [
        CommitSpec(
            tree=render(state),
            subject=subject,
            body=body,
            author=authors[i % len(authors)],
            timestamp=start + i * hours_apart * HOUR,
        )
        for i, (state, subject, body, _kind) in enumerate(plan)
    ]


def _llvm_history(api_breaks: int, llvm_commits: int, extra_sources: int, regression_after_breaks,
                  fork: bool = False):
    old_idx, new_idx = 2, llvm_commits - 3
    events = [f"K{i}" for i in range(api_breaks)]
    events.insert(regression_after_breaks, "R")
    if fork:  # the change the fork reverts comes first: without the revert it is named
        events.insert(events.index("R"), "X")
    events.insert(min(2, len(events)), "B")
    positions = _spread(len(events), old_idx + 1, new_idx - 1, f"{api_breaks} API breaks")
    at = dict(zip(positions, events, strict=True))

    state = llvm_repo.LLVMState(extra_sources=extra_sources)
    fillers = llvm_repo._FillerCycle()
    plan: list[tuple[llvm_repo.LLVMState, str, str, str]] = [
        (state, "Initial import of the toy llvm-project", "", "initial")
    ]
    for i in range(1, llvm_commits):
        event = at.get(i)
        if event == "R":
            state = state.with_(regression=True)
            plan.append(
                (
                    state,
                    "[ConstantFold] Seed the carry chain of add folding from the low bit",
                    "Saves one iteration of the carry loop for odd sums.",
                    "regression",
                )
            )
        elif event == "X":
            state = state.with_(sub_regression=True)
            plan.append((state, backends.REVERTED_SUBJECT, "One add instead of two.", "fork-reverted"))
        elif event == "B":
            state = state.with_(
                broken=True, notes=(*state.notes, "Faster hashing of short strings.")
            )
            plan.append(
                (
                    state,
                    "[Support] Speed up hashing of short strings",
                    "Hash the bytes in one pass.",
                    "broken",
                )
            )
        elif i >= 2 and at.get(i - 1) == "B":
            state = state.with_(broken=False)
            plan.append(
                (
                    state,
                    '[Support] Fix the build after "Speed up hashing of short strings"',
                    "A missing semicolon.",
                    "broken-fix",
                )
            )
        elif event is not None:
            k = int(event[1:])
            state = state.with_(breaks=state.breaks | {k})
            plan.append((state, BREAKS[k].subject, BREAKS[k].body, event))
        else:
            state, subject, body = fillers.next(state)
            plan.append((state, subject, body, "filler"))
    commits = _commits(plan, llvm_repo.render, LLVM_AUTHORS, start=BASE_TIME, hours_apart=3)
    return commits, [kind for *_, kind in plan], old_idx, new_idx, [st for st, *_ in plan]


def _era_positions(triton_commits: int) -> dict[int, str]:
    """Where the later eras start (eras=True): the root setup.py layout with lld, then the
    pin in llvm-info.json (same LLVM), then llvm-build-info.json naming a fork, all before
    the bump; a build-number-only change after it."""
    tr, tb, tf, bump = _spread(4, 1, triton_commits - 2, "the Triton history")
    at = {tb + 2: "era-root-layout", tf + 1: "era-info-json", tf + 2: "era-next-build",
          bump + 2: "era-prebuilt-rebuild"}
    if not (tb + 2 < tf and tf + 2 < bump and bump + 2 <= triton_commits - 1):
        raise ValueError("too few commits for the Triton eras: give at least 36 Triton commits")
    return at


def _triton_history(triton_commits: int, old_llvm: str, new_llvm: str, api_breaks: int, t0: int,
                    version_rule: str = "rev-parse", eras: bool = False, fork_pin: str = "",
                    amd_pins: dict[str, str] | None = None, toolchain: bool = False):
    tr, tb, tf, bump = _spread(4, 1, triton_commits - 2, "the Triton history")
    era_at = _era_positions(triton_commits) if eras else {}
    if amd_pins:
        era_at.update(backends.amd_positions(tf, bump))
    if toolchain:
        era_at.update(cuda_toolchain.toolchain_positions(tr))
    pin = fork_pin or new_llvm  # what the bump pins: the fork's commit, or upstream's
    state = triton_repo.TritonState(llvm_hash=old_llvm, version_rule=version_rule)
    fillers = triton_repo.FillerCycle()
    plan = [(state, "Initial commit of the toy Triton", "", "initial")]
    bump_body = "\n".join(
        f"- {BREAKS[k].old_symbol}: {BREAKS[k].subject.split('] ', 1)[-1]}"
        for k in range(api_breaks)
    )
    for i in range(1, triton_commits):
        era = era_at.get(i)
        if era == "era-root-layout":
            state = state.with_(layout="root", needs_lld=True)
            item = (state, "[BUILD] Move setup.py to the repository root; the AMD backend links lld",
                    "", era)
        elif era == "era-info-json":
            state = state.with_(pin_format="info-json")
            item = (state, "[BUILD] Pin LLVM in cmake/llvm-info.json with its build number", "", era)
        elif era == "era-next-build":
            state = state.with_(next_build_repo=FORK, next_build_hash=pin)
            item = (state, f"[BUILD] Prepare the next LLVM build from {FORK}", "", era)
        elif era == "era-prebuilt-rebuild":
            state = state.with_(build_number=state.build_number + 1)
            item = (state, "[BUILD] Use the rebuilt LLVM prebuilt (build number only)", "", era)
        elif era is not None and era.startswith(("nv-", "amd-")):
            state, subject = backends.later_step(era, state, amd_pins or {})
            item = (state, subject, "", era)
        elif i == tr:
            state = state.with_(vectorized=True, tail_bug=True)
            item = (state, "[BACKEND] Vectorize the elementwise loop by 4", "", "regression")
        elif i == tb:
            state = state.with_(broken=True, pipeline_comment=True)
            item = (state, "[BACKEND] Document the order of the pass pipeline", "", "broken")
        elif i == tb + 1:
            state = state.with_(broken=False)
            item = (
                state,
                "[BACKEND] Fix the build after the pass pipeline change",
                "",
                "broken-fix",
            )
        elif i == tf:
            state = state.with_(tail_bug=False)
            item = (
                state,
                "[BACKEND] Fix the tail of the vectorized elementwise loop",
                "The last element of a tail was never computed.",
                "regression-fix",
            )
        elif i == bump:
            state = state.with_(llvm_hash=pin, fixed=frozenset(range(api_breaks)))
            if fork_pin:  # the build info names the fork this pin comes from
                state = state.with_(next_build_repo=FORK, next_build_hash=pin)
            item = (
                state,
                f"[BACKEND] Bump LLVM to {FORK if fork_pin else 'llvm/llvm-project'}@{pin[:12]}",
                ("Adapt to the API changes:\n" + bump_body) if bump_body else "",
                "bump",
            )
        else:
            state, subject, body = fillers.next(state)
            item = (state, subject, body, "filler")
        plan.append(item)
    commits = _commits(plan, triton_repo.render, TRITON_AUTHORS, start=t0, hours_apart=2)
    pins = [s.llvm_hash for s, *_ in plan]
    return commits, [kind for *_, kind in plan], pins, [s for s, *_ in plan]


def _torch_history(torch_commits: int, pins: list[str], t0: int, kernels: list[str] | None = None,
                   kernels_url: str = ""):
    move1, regression, move2 = _spread(3, 1, torch_commits - 1, "the PyTorch history", 2)
    state = torch_repo.TorchState(triton_pin=pins[0])
    if kernels:
        state = state.with_(kernels=1, kernels_sha=kernels[0], kernels_url=kernels_url)
    bump_kernels = next((i for i in range(move1 + 1, torch_commits) if i not in (regression, move2)), None)
    fillers = torch_repo.FillerCycle()
    plan = [(state, "Initial commit of the toy PyTorch", "", "initial")]
    for i in range(1, torch_commits):
        if kernels and i == bump_kernels:
            state = state.with_(kernels=2, kernels_sha=kernels[1])
            item = (state, "Update the toykernels submodule", "", "submodule")
        elif i == move1:
            state = state.with_(triton_pin=pins[1])
            item = (state, "[CI] Update the triton pin", "", "pin")
        elif i == regression:
            state = state.with_(pairwise_sum=True, drops_odd=True)
            item = (
                state,
                "[inductor] Reduce sum() pairwise with the Triton add kernel",
                "",
                "regression",
            )
        elif i == move2:
            state = state.with_(triton_pin=pins[2])
            item = (state, "[CI] Update the triton pin", "", "pin")
        else:
            state, subject, body = fillers.next(state)
            item = (state, subject, body, "filler")
        plan.append(item)
    commits = _commits(plan, torch_repo.render, TORCH_AUTHORS, start=t0, hours_apart=5)
    commits = [replace(spec, links=torch_repo.links(st)) for spec, (st, *_r) in zip(commits, plan, strict=True)]
    return commits, [kind for *_, kind in plan], [s.triton_pin for s, *_ in plan]


def make_world(
    root: Path,
    *,
    api_breaks: int = 1,
    llvm_commits: int = 40,
    triton_commits: int = 30,
    extra_sources: int = 0,
    with_torch: bool = False,
    torch_commits: int = 12,
    regression_after_breaks: int = 0,
    triton_version_rule: str = "rev-parse",
    eras: bool = False,
    torch_submodule: bool = False,
    fork: bool = False,
    amd_backend: bool = False,
    rocm_commits: int = 12,
    toolchain: bool = False,
) -> ToyWorld:
    """Write the toy world under `root` (llvm-project/, triton/, pytorch/) and return it.

    regression_after_breaks: how many API breaks come before the LLVM behaviour regression
    (0, the default, puts it before all of them: the bump's parent then builds on both sides
    of it, so an LLVM descent works even without a compatibility map).
    triton_version_rule: "rev-parse" (setup.py asks git for the sha), or "git-dir" (only a
    .git directory counts, as in some real Triton releases: worktree builds then come out
    as plain BASE_VERSION, with no +git<sha> suffix).
    eras: the Triton history also goes through real Triton's later eras (see _era_positions;
    needs at least 36 Triton commits).
    torch_submodule: the toy PyTorch has a submodule, third_party/toykernels (a repository
    toykernels/ beside it, its URL a file:// URL), moved to a newer commit after the first
    pin update; the toy setup.py refuses a missing or stale submodule.
    fork, amd_backend, rocm_commits: late-2026 Triton's other LLVMs (backends.py): the bump
    pins a fork commit with a local revert; an AMD backend whose code generator is built
    against ROCm's LLVM (rocm-llvm-project/, rocm_commits commits). toolchain: the NVIDIA
    toolchain pin, moved to a ptxas that miscompiles sub and back (cuda_toolchain.py).
    """
    if not 0 <= api_breaks <= MAX_API_BREAKS:
        raise ValueError(f"api_breaks must be between 0 and {MAX_API_BREAKS}")
    if not 0 <= regression_after_breaks <= api_breaks:
        raise ValueError("regression_after_breaks must be between 0 and api_breaks")
    if extra_sources < 0:
        raise ValueError("extra_sources must be >= 0")
    root = Path(root).resolve()
    llvm_dir, triton_dir = root / "llvm-project", root / "triton"
    torch_dir = root / "pytorch" if with_torch else None
    for d in (llvm_dir, triton_dir, torch_dir):
        if d is not None and d.exists() and any(d.iterdir()):
            raise FileExistsError(f"{d} exists and is not empty")

    llvm_specs, llvm_kinds, old_idx, new_idx, llvm_states = _llvm_history(
        api_breaks, llvm_commits, extra_sources, regression_after_breaks, fork
    )
    t0 = BASE_TIME + llvm_commits * 3 * HOUR
    # Fail on too-small Triton/PyTorch histories before writing anything.
    _spread(4, 1, triton_commits - 2, "the Triton history")
    if eras:
        _era_positions(triton_commits)
    if with_torch:
        _spread(3, 1, torch_commits - 1, "the PyTorch history", 2)

    if amd_backend:
        backends.amd_positions(*_spread(4, 1, triton_commits - 2, "the Triton history")[2:])
        backends.rocm_plan(rocm_commits)

    llvm = write_history(llvm_dir, llvm_specs)
    old_llvm, new_llvm = llvm[old_idx], llvm[new_idx]
    extra: dict = {}
    if fork:
        reverted = llvm[llvm_kinds.index("fork-reverted")]
        fork_pin = backends.write_fork(llvm_dir, llvm_states[new_idx], new_llvm, reverted, t0 - HOUR)
        extra.update(fork_pin=fork_pin, fork_base=new_llvm, fork_reverted=reverted, fork_patches=[fork_pin],
                     fork_repository=backends.FORK, fork_ref=backends.FORK_REF)
    if amd_backend:
        extra.update(backends.write_rocm(root / "rocm-llvm-project", rocm_commits, BASE_TIME))
    if toolchain:
        extra.update(cuda_toolchain.write_toolchains(root))

    triton_specs, triton_kinds, llvm_pins, triton_states = _triton_history(
        triton_commits, old_llvm, new_llvm, api_breaks, t0, triton_version_rule, eras,
        extra.get("fork_pin", ""),
        {k: extra[f"rocm_{k}"] for k in ("old", "new", "fixed")} if amd_backend else None, toolchain,
    )
    triton = write_history(triton_dir, triton_specs)

    def tri(kind: str) -> int:
        return triton_kinds.index(kind)

    def lli(kind: str) -> int:
        return llvm_kinds.index(kind)

    breaks = []
    for k in range(api_breaks):
        idx = lli(f"K{k}")
        brk = BREAKS[k]
        breaks.append(
            {
                "commit": llvm[idx],
                "last_compatible": llvm[idx - 1],
                "header": brk.header,
                "file": brk.file,
                "old": brk.old,
                "new": brk.new,
                "old_symbol": brk.old_symbol,
                "new_symbol": brk.new_symbol,
                "key": brk.key,
                "subject": brk.subject,
            }
        )
    bump = triton[tri("bump")]
    good_triton = triton[tri("regression-fix")]
    bad_triton_llvm = triton[-1]
    truth: dict = {
        "params": {
            "api_breaks": api_breaks,
            "llvm_commits": llvm_commits,
            "triton_commits": triton_commits,
            "extra_sources": extra_sources,
            "with_torch": with_torch,
            "torch_commits": torch_commits if with_torch else 0,
            "regression_after_breaks": regression_after_breaks,
            "triton_version_rule": triton_version_rule,
            "eras": eras,
            "fork": fork,
            "amd_backend": amd_backend,
            "toolchain": toolchain,
        },
        # llvm-project
        "llvm_order": llvm,
        "old_llvm": old_llvm,
        "new_llvm": new_llvm,
        "llvm_api_breaks": breaks,
        "llvm_last_compatible": [b["last_compatible"] for b in breaks],
        "llvm_regression": llvm[lli("regression")],
        "llvm_broken": [llvm[lli("broken")]],
        "llvm_broken_fix": llvm[lli("broken-fix")],
        "llvm_cmake_args": list(LLVM_CMAKE_ARGS),
        # triton
        "triton_order": triton,
        "triton_regression": triton[tri("regression")],
        "triton_regression_fix": triton[tri("regression-fix")],
        "triton_regression_range": [triton[1], triton[tri("regression-fix") - 1]],
        "triton_broken": [triton[tri("broken")]],
        "triton_broken_fix": triton[tri("broken-fix")],
        "bump": bump,
        "bump_parent": triton[tri("bump") - 1],
        "good_triton": good_triton,
        "bad_triton_llvm": bad_triton_llvm,
        "llvm_bump_range": [good_triton, bad_triton_llvm],
        "triton_llvm_pins": dict(zip(triton, llvm_pins, strict=True)),
        "triton_test": triton_repo.TEST_COMMAND,
        "triton_version_prefix": triton_repo.BASE_VERSION + "+git",
    }
    if eras:
        truth.update({kind.replace("-", "_"): triton[i] for i, kind in enumerate(triton_kinds)
                      if kind.startswith("era-")})
        truth["triton_pin_files"] = {
            sha: "cmake/llvm-info.json" if st.pin_format == "info-json" else "cmake/llvm-hash.txt"
            for sha, st in zip(triton, triton_states, strict=True)
        }
        truth["triton_build_numbers"] = {
            sha: st.build_number if st.pin_format == "info-json" else None
            for sha, st in zip(triton, triton_states, strict=True)
        }
    truth.update(extra, **backends.later_truth(triton, triton_kinds, triton_states))

    if with_torch:
        pins = [triton[1], triton[tri("regression") - 1], good_triton]
        kernels, kernels_url = None, ""
        if torch_submodule:
            kernels_dir = root / "toykernels"
            kernels = write_history(kernels_dir, [
                CommitSpec(tree=tree, subject=f"toykernels {v}", author=TORCH_AUTHORS[0],
                           timestamp=t0 + v * HOUR)
                for v, tree in enumerate(torch_repo.kernels_history(2), start=1)
            ])
            kernels_url = kernels_dir.as_uri()
        torch_specs, torch_kinds, torch_pins = _torch_history(
            torch_commits, pins, t0 + triton_commits * 2 * HOUR, kernels, kernels_url
        )
        assert torch_dir is not None  # with_torch
        torch = write_history(torch_dir, torch_specs)
        truth.update(
            {
                "torch_order": torch,
                "torch_regression": torch[torch_kinds.index("regression")],
                "torch_good": torch[1],
                "torch_bad": torch[-1],
                "torch_triton_pins": dict(zip(torch, torch_pins, strict=True)),
                "torch_test": torch_repo.TEST_COMMAND,
                "torch_pin_file": torch_repo.PIN_FILE,
            }
        )
        if torch_submodule:
            truth["torch_submodule"] = {
                "path": torch_repo.KERNELS_PATH, "url": kernels_url, "commits": kernels,
                "bump": torch[torch_kinds.index("submodule")],
            }
    return ToyWorld(root=root, llvm=llvm_dir, triton=triton_dir, torch=torch_dir, truth=truth)
