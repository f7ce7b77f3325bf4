"""Sources of the toy triton: a Python package with a C extension built against toy LLVM.

Layout like Triton's: cmake/llvm-hash.txt (the pinned llvm-project commit), python/setup.py,
python/triton/__init__.py, the extension `triton._C.libtriton` from python/src/*.c, and the
test test/test_toy.py (exit 0 when the kernels compute the right values). The source text
lives in templates/triton/ (see template.py).
"""

from __future__ import annotations

import textwrap
from dataclasses import dataclass, replace

from tritonbisect.toyworld.apibreaks import apply_fixes
from tritonbisect.toyworld.template import _t, load

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
        "cmake/llvm-hash.txt": state.llvm_hash + "\n",
        "python/setup.py": _setup_py(state.version_rule),
        "python/pyproject.toml": _f("python/pyproject.toml"),
        "python/triton/__init__.py": _f(
            "python/triton/__init__.py.tmpl", BASE_VERSION=BASE_VERSION
        ),
        "python/triton/language.py": "".join(language),
        "test/test_toy.py": _f("test/test_toy.py.tmpl"),
        "test/unit/test_language.py": "".join(unit),
        **sources,
    }
    return files


_GIT_DIR_RULE = """def get_version():
    # a checkout is a tree whose top has a .git directory (a git worktree's .git is a file)
    if not os.path.isdir(os.path.join(os.path.dirname(HERE), ".git")):
        return BASE_VERSION + os.environ.get("TRITON_WHEEL_VERSION_SUFFIX", "")
"""


def _setup_py(version_rule: str) -> str:
    text = _f("python/setup.py.tmpl", BASE_VERSION=BASE_VERSION)
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
