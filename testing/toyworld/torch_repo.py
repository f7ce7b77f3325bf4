"""Sources of the toy pytorch repo: the pure-Python package `toytorch` (never `torch`: the
real one may be installed), with PyTorch's pin of Triton in .ci/docker/ci_commit_pins/triton.txt.
Its functions run Triton kernels, so its test needs the pinned triton installed.
"""

from __future__ import annotations

import textwrap
from dataclasses import dataclass, replace

TEST_COMMAND = "python test/test_toytorch.py"
PIN_FILE = ".ci/docker/ci_commit_pins/triton.txt"


def _t(text: str, **subs: object) -> str:
    out = textwrap.dedent(text).lstrip("\n")
    for key, value in subs.items():
        out = out.replace(f"@{key}@", str(value))
    return out


@dataclass(frozen=True)
class TorchState:
    triton_pin: str
    pairwise_sum: bool = False  # sum() reduces in pairs with the Triton add kernel
    drops_odd: bool = False  # ... and loses the odd element (the regression)
    notes: tuple[str, ...] = ()
    ops: tuple[int, ...] = ()
    # the submodule third_party/toykernels (make_world(torch_submodule=True)): the version its
    # sources need (0: no submodule), the commit recorded for it, the URL in .gitmodules
    kernels: int = 0
    kernels_sha: str = ""
    kernels_url: str = ""

    def with_(self, **changes) -> TorchState:
        return replace(self, **changes)


SETUP_PY = '''
"""Toy PyTorch's build: a pure-Python package; its Triton comes from the pinned commit.

As PyTorch's setup.py: a source build's version is version.txt + "+git<sha7>"; a nightly
build sets PYTORCH_BUILD_VERSION (e.g. 2.10.0.dev20251101+cpu), which carries no sha, and
the commit goes into toytorch/version.py as `git_version`; PYTORCH_EXTRA_INSTALL_REQUIREMENTS
("triton==3.6.0+gitabcdef12 | ...") become the wheel's requirements, as for PyTorch's nightlies.
"""

import os
import subprocess

from setuptools import setup
from setuptools.command.build_py import build_py

HERE = os.path.dirname(os.path.abspath(__file__))


def get_sha():
    try:
        return subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=HERE, capture_output=True, text=True, check=True
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return ""


def get_version(sha):
    if os.environ.get("PYTORCH_BUILD_VERSION"):
        return os.environ["PYTORCH_BUILD_VERSION"]
    with open(os.path.join(HERE, "version.txt")) as f:
        base = f.read().strip()
    return base + ("+git" + sha[:7] if sha else "")


SHA = get_sha()
VERSION = get_version(SHA)
REQUIRES = [r.strip() for r in os.environ.get("PYTORCH_EXTRA_INSTALL_REQUIREMENTS", "").split("|") if r.strip()]


def check_submodules():
    # as PyTorch's setup.py: a build needs its third_party checked out; this one also needs
    # the version the commit records (a stale submodule breaks the build)
    if not os.path.isfile(os.path.join(HERE, ".gitmodules")):
        return
    with open(os.path.join(HERE, "third_party", "required-toykernels.txt")) as f:
        need = f.read().strip()
    version = os.path.join(HERE, "third_party", "toykernels", "VERSION")
    if not os.path.isfile(version):
        raise SystemExit("error: third_party/toykernels is empty: the submodules are not checked out "
                         "(git submodule update --init --recursive)")
    with open(version) as f:
        have = f.read().strip()
    if have != need:
        raise SystemExit("error: third_party/toykernels is at version " + have + ", this commit needs "
                         + need + ": update the submodules (git submodule update --init --recursive)")


check_submodules()


class build_py_with_version(build_py):
    def run(self):
        super().run()
        target = os.path.join(self.build_lib, "toytorch", "version.py")
        with open(target, "w") as f:
            f.write("__version__ = %r\\ngit_version = %r\\n" % (VERSION, SHA or "Unknown"))


setup(
    name="toytorch",
    version=VERSION,
    description="A toy PyTorch for tritonbisect's tests",
    packages=["toytorch"],
    python_requires=">=3.9",
    install_requires=REQUIRES,
    cmdclass={"build_py": build_py_with_version},
)
'''

PYPROJECT = """
[build-system]
requires = ["setuptools>=64"]
build-backend = "setuptools.build_meta"
"""

INIT_PY = '''
"""toytorch: tritonbisect's miniature of PyTorch; its ops run toy Triton kernels."""

from importlib import metadata as _metadata

try:
    __version__ = _metadata.version("toytorch")
except _metadata.PackageNotFoundError:
    __version__ = "@VERSION@"


def _libtriton():
    from triton._C import libtriton

    return libtriton


def add(x, y):
    return _libtriton().run_elementwise("add", list(x), list(y))


def mul(x, y):
    return _libtriton().run_elementwise("mul", list(x), list(y))


def sum(x):
@SUM@

def dot(x, y):
    return sum(mul(x, y))
@OPS@'''

SUM_SIMPLE = """
    total = 0
    for value in x:
        total = _libtriton().run_elementwise("add", [total], [value])[0]
    return total
"""

SUM_PAIRWISE = """
    # Pairwise reduction with the Triton add kernel: log2(n) kernel launches.
    values = list(x)
    while len(values) > 1:
        half = len(values) // 2
        merged = add(values[:half], values[half : 2 * half])
        values = @REST@
    return values[0] if values else 0
"""

TEST_PY = '''
"""Toy PyTorch's test: exit 0 when toytorch's ops are right, 1 otherwise.

    python test/test_toytorch.py
"""

import sys


def main():
    try:
        import toytorch
    except ImportError as exc:
        print("test_toytorch: ERROR: cannot import toytorch: %s" % exc, file=sys.stderr)
        return 2
    x = list(range(1, 12))
    y = [2 * v - 5 for v in x]
    checks = [
        ("add", toytorch.add(x, y), [a + b for a, b in zip(x, y)]),
        ("sum", toytorch.sum(x), 66),
        ("dot", toytorch.dot(x, y), sum(a * b for a, b in zip(x, y))),
    ]
    failed = [(name, got, want) for name, got, want in checks if got != want]
    for name, got, want in failed:
        print("test_toytorch: FAIL: %s: got %r, expected %r" % (name, got, want))
    if failed:
        return 1
    print("test_toytorch: PASS (toytorch %s)" % toytorch.__version__)
    return 0


if __name__ == "__main__":
    sys.exit(main())
'''

README = """
# Toy PyTorch

tritonbisect's miniature of PyTorch. The Triton it needs is the commit pinned in
.ci/docker/ci_commit_pins/triton.txt.

    pip wheel --no-build-isolation --no-deps -w dist .
    pip install dist/toytorch-*.whl     # with the pinned triton installed
    python test/test_toytorch.py
"""

VERSION = "2.10.0a0"


def render(state: TorchState) -> dict[str, str]:
    if state.pairwise_sum:
        rest = "merged" if state.drops_odd else "merged + values[2 * half :]"
        body = _t(SUM_PAIRWISE, REST=rest)
    else:
        body = _t(SUM_SIMPLE)
    body = textwrap.indent(body, "    ")
    ops = "".join(
        f"\n\ndef scale_{n}(x):\n    return [v * {n + 2} for v in x]\n" for n in state.ops
    )
    return {
        "README.md": _t(README) + "".join(f"\n{note}\n" for note in state.notes),
        ".gitignore": "build/\ndist/\n*.egg-info/\n__pycache__/\n",
        "version.txt": VERSION + "\n",
        "setup.py": _t(SETUP_PY),
        "pyproject.toml": _t(PYPROJECT),
        PIN_FILE: state.triton_pin + "\n",
        "toytorch/__init__.py": _t(INIT_PY, VERSION=VERSION, SUM=body, OPS=ops),
        "test/test_toytorch.py": _t(TEST_PY),
        **_submodule_files(state),
    }


def _submodule_files(state: TorchState) -> dict[str, str]:
    if not state.kernels:
        return {}
    return {
        ".gitmodules": (f'[submodule "{KERNELS_PATH}"]\n\tpath = {KERNELS_PATH}\n'
                        f"\turl = {state.kernels_url}\n"),
        "third_party/required-toykernels.txt": f"{state.kernels}\n",
    }


def links(state: TorchState) -> dict[str, str]:
    """The gitlinks of the tree (submodule path -> recorded commit)."""
    return {KERNELS_PATH: state.kernels_sha} if state.kernels else {}


KERNELS_PATH = "third_party/toykernels"


def kernels_history(versions: int) -> list[dict[str, str]]:
    """The trees of the toykernels repository (the submodule), one per version."""
    return [{"VERSION": f"{v}\n", "kernels.py": f"VERSION = {v}\n"} for v in range(1, versions + 1)]


class FillerCycle:
    KINDS = ("ops", "docs")

    def __init__(self) -> None:
        self.counter = 0

    def next(self, state: TorchState) -> tuple[TorchState, str, str]:
        n = self.counter
        self.counter += 1
        if self.KINDS[n % len(self.KINDS)] == "ops":
            return state.with_(ops=(*state.ops, n)), f"[inductor] Add toytorch.scale_{n}", ""
        return (
            state.with_(notes=(*state.notes, f"Note {n}.")),
            f"[docs] Update the README ({n})",
            "",
        )
