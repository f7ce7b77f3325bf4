"""Sources of the toy triton: a Python package with a C extension built against toy LLVM.

Layout like Triton's: cmake/llvm-hash.txt (the pinned llvm-project commit), python/setup.py,
python/triton/__init__.py, the extension `triton._C.libtriton` from python/src/*.c, and the
test test/test_toy.py (exit 0 when the kernels compute the right values). The source text
lives in templates/triton/ (see template.py).

The later eras of real Triton, each a state field: `pin_format="info-json"` (the pin in
cmake/llvm-info.json with a build_number; `next_build_repo` adds cmake/llvm-build-info.json
naming the next LLVM and the fork it comes from), `layout="root"` (setup.py at the top with
python/build_helpers.py, building into build/ or TRITON_BUILD_DIR, and a stub
python/pyproject.toml without a build system), `needs_lld` (the AMD backend's
find_package(LLD): the LLVM must be built with lld). Every era needs the NVPTX and AMDGPU
targets in LLVM, as real Triton links their code generators.
"""

from __future__ import annotations

import json
import textwrap
from dataclasses import dataclass, replace

from testing.toyworld.apibreaks import apply_fixes
from testing.toyworld.template import _t, load

BASE_VERSION = "3.6.0"
TEST_COMMAND = "python test/test_toy.py"


def _f(path: str, **subs: object) -> str:
    """The template templates/triton/<path> with its @KEY@ placeholders filled in."""
    return _t(load("triton", path), **subs)


@dataclass(frozen=True)
class TritonState:
    llvm_hash: str
    fixed: frozenset[int] = frozenset()  # API breaks Triton's sources are adapted to
    vectorized: bool = False  # the elementwise loop runs 4 lanes at a time
    tail_bug: bool = False  # ... and drops the last element of the tail (the regression)
    broken: bool = False  # python/src/passes.c has a syntax error
    pipeline_comment: bool = False
    notes: tuple[str, ...] = ()
    helpers: tuple[int, ...] = ()  # triton.language helpers
    utils: tuple[int, ...] = ()  # C helpers in python/src/utils.c
    unit_tests: tuple[int, ...] = ()
    # how setup.py decides it is in a git checkout: "rev-parse" (asks git), or "git-dir"
    # (a .git directory at the top, the rule of some real Triton releases: false in a
    # `git worktree`, so worktree builds get no +git<sha> suffix)
    version_rule: str = "rev-parse"
    pin_format: str = "hash-txt"  # or "info-json" (cmake/llvm-info.json)
    build_number: int = 1  # of the prebuilt, in the info-json era
    next_build_repo: str = ""  # cmake/llvm-build-info.json's repository, when set
    next_build_hash: str = ""  # ... and the LLVM it prepares (not the pin)
    layout: str = "python"  # or "root" (setup.py at the top)
    needs_lld: bool = False
    # the AMD backend's own LLVM (cmake/amd-llvm-info.json), when set: its code generator is a
    # library of its own (third_party/amd/codegen), loaded at run time
    amd_hash: str = ""
    amd_build_number: int = 1
    # the NVIDIA toolchain's ptxas (cmake/nvidia-toolchain-version.json), when set: the NVIDIA
    # backend assembles its PTX with it
    ptxas: str = ""

    def with_(self, **changes) -> TritonState:
        return replace(self, **changes)


GITIGNORE = """
build/
dist/
*.egg-info/
__pycache__/
*.so
"""


def render(state: TritonState) -> dict[str, str]:
    """The full tree of triton in `state`."""
    if state.vectorized:
        loop = _f(
            "python/src/main.loop-vectorized.c", TAIL="i + 1 < n" if state.tail_bug else "i < n"
        )
    else:
        loop = _f("python/src/main.loop-simple.c")
    # _t dedented the loop; put it back at function-body indentation.
    loop = textwrap.indent(loop.rstrip("\n"), "  ")
    sources = {
        "python/src/triton.h": _f("python/src/triton.h"),
        "python/src/main.c": _f("python/src/main.c", LOOP=loop),
        "python/src/ir.c": _f("python/src/ir.c"),
        "python/src/passes.c": _f(
            "python/src/passes.c",
            SEMI="" if state.broken else ";",
            COMMENT=(
                "  /* The verifier runs last so that canonicalization cannot hide invalid IR. */\n"
                if state.pipeline_comment
                else ""
            ),
        ),
        "python/src/llvm.c": _f("python/src/llvm.c"),
    }
    utils = [_f("python/src/utils.head.c")]
    for n in state.utils:
        utils.append(
            f"\nint64_t triton_util_{n}(int64_t x);\n"
            f"int64_t triton_util_{n}(int64_t x) {{ return (x << {n % 5}) + {n}; }}\n"
        )
    sources["python/src/utils.c"] = "".join(utils)
    sources = {path: apply_fixes(text, path, state.fixed) for path, text in sources.items()}

    language = [_f("python/triton/language.head.py.tmpl")]
    for n in state.helpers:
        language.append(f"\n\ndef helper_{n}(x):\n    return x * {n} + 1\n")
    unit = ['"""Unit tests of triton.language (toy)."""\n']
    for n in state.unit_tests:
        unit.append(f"\n\ndef test_helper_{n}():\n    assert {n} * 2 + 1 == {2 * n + 1}\n")

    files = {
        "README.md": _f("README.md") + "".join(f"\n{note}\n" for note in state.notes),
        ".gitignore": _t(GITIGNORE),
        **_pin_files(state),
        **_build_files(state),
        "python/triton/__init__.py": _f(
            "python/triton/__init__.py.tmpl", BASE_VERSION=BASE_VERSION
        ),
        "python/triton/language.py": "".join(language),
        "test/test_toy.py": _f("test/test_toy.py.tmpl"),
        "test/unit/test_language.py": "".join(unit),
        **sources,
        **_amd_files(state),
        **_nvidia_files(state),
    }
    if state.amd_hash or state.ptxas:
        files["python/triton/backends/__init__.py"] = ""
    return files


def _nvidia_files(state: TritonState) -> dict[str, str]:
    if not state.ptxas:
        return {}
    versions = {"ptxas": state.ptxas, "cuobjdump": "12.8.55", "nvdisasm": "12.8.55", "cudacrt": "12.8.61",
                "cudart": "12.8.57", "cupti": "12.8.57"}
    return {
        "cmake/nvidia-toolchain-version.json": json.dumps(versions, indent=2) + "\n",
        "python/triton/backends/nvidia/__init__.py": _f("python/triton/backends/nvidia/__init__.py.tmpl"),
    }


AMD_REPOSITORY = "ROCm/llvm-project"


def _amd_files(state: TritonState) -> dict[str, str]:
    if not state.amd_hash:
        return {}
    info = {"llvm_hash": state.amd_hash, "build_number": state.amd_build_number, "sha256sum": {},
            "bootstrap_llvm": {"build_number": 1, "sha256sum": {}}}
    build = {"llvm_hash": state.amd_hash, "repository": AMD_REPOSITORY, "build_number": state.amd_build_number}
    return {
        "cmake/amd-llvm-info.json": json.dumps(info, indent=2) + "\n",
        "cmake/amd-llvm-build-info.json": json.dumps(build, indent=2) + "\n",
        "third_party/amd/codegen/CMakeLists.txt": load("triton", "third_party/amd/codegen/CMakeLists.txt"),
        "third_party/amd/codegen/codegen.c": load("triton", "third_party/amd/codegen/codegen.c"),
        "python/triton/backends/amd/__init__.py": _f("python/triton/backends/amd/__init__.py.tmpl"),
    }


_GIT_DIR_RULE = """def get_version():
    # a checkout is a tree whose top has a .git directory (a git worktree's .git is a file)
    if not os.path.isdir(os.path.join(REPO, ".git")):
        return BASE_VERSION + os.environ.get("TRITON_WHEEL_VERSION_SUFFIX", "")
"""


REQUIRED_TARGETS = ("NVPTX", "AMDGPU")
PREBUILT_BUILD_NUMBER = 1


def _pin_files(state: TritonState) -> dict[str, str]:
    if state.pin_format == "hash-txt":
        files = {"cmake/llvm-hash.txt": state.llvm_hash + "\n"}
    elif state.pin_format == "info-json":
        info = {"llvm_hash": state.llvm_hash, "build_number": state.build_number,
                "sha256sum": {"toy-x86_64": "0" * 64}}
        files = {"cmake/llvm-info.json": json.dumps(info, indent=2) + "\n"}
    else:
        raise ValueError(f"unknown pin_format {state.pin_format!r} (hash-txt or info-json)")
    if state.next_build_repo:
        nxt = {"llvm_hash": state.next_build_hash or state.llvm_hash, "repository": state.next_build_repo,
               "build_number": state.build_number + 1}
        files["cmake/llvm-build-info.json"] = json.dumps(nxt, indent=2) + "\n"
    return files


def _build_files(state: TritonState) -> dict[str, str]:
    if state.layout == "python":
        return {"python/setup.py": _setup_py(state, to_repo="..", pydir=""),
                "python/pyproject.toml": _f("python/pyproject.toml")}
    if state.layout == "root":
        return {"setup.py": _setup_py(state, to_repo=".", pydir="python"),
                "pyproject.toml": _f("python/pyproject.toml"),
                "python/build_helpers.py": _f("python/build_helpers.py.tmpl"),
                "python/pyproject.toml": _f("python/pyproject.stub.toml")}
    raise ValueError(f"unknown layout {state.layout!r} (python or root)")


def _setup_py(state: TritonState, *, to_repo: str, pydir: str) -> str:
    version_rule = state.version_rule
    text = _f("python/setup.py.tmpl", BASE_VERSION=BASE_VERSION, TO_REPO=to_repo, PYDIR=pydir,
              REQUIRED_TARGETS="".join(f'"{t}", ' for t in REQUIRED_TARGETS).strip(),
              NEEDS_LLD=state.needs_lld)
    if version_rule == "git-dir":
        return text.replace("def get_version():\n", _GIT_DIR_RULE, 1)
    if version_rule != "rev-parse":
        raise ValueError(f"unknown version_rule {version_rule!r} (rev-parse or git-dir)")
    return text


class FillerCycle:
    """Deterministic Triton filler commits: docs, language helpers, C helpers, unit tests."""

    KINDS = ("helper", "docs", "utils", "unit", "helper", "utils")

    def __init__(self) -> None:
        self.counter = 0

    def next(self, state: TritonState) -> tuple[TritonState, str, str]:
        n = self.counter
        self.counter += 1
        kind = self.KINDS[n % len(self.KINDS)]
        if kind == "helper":
            return (
                state.with_(helpers=(*state.helpers, n)),
                f"[FRONTEND] Add tl.helper_{n}",
                "",
            )
        if kind == "docs":
            return (
                state.with_(notes=(*state.notes, f"Tip {n}: set TRITON_CACHE_DIR per run.")),
                f"[DOCS] Add a build tip ({n})",
                "",
            )
        if kind == "utils":
            return (
                state.with_(utils=(*state.utils, n)),
                f"[BACKEND] Add triton_util_{n}",
                "A small helper for the upcoming layout work.",
            )
        return (
            state.with_(unit_tests=(*state.unit_tests, n)),
            f"[TESTS] Cover tl.helper edge cases ({n})",
            "",
        )
