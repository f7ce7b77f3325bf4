"""Sources of the toy triton: a Python package with a C extension built against toy LLVM.

Layout like Triton's: cmake/llvm-hash.txt (the pinned llvm-project commit), python/setup.py,
python/triton/__init__.py, the extension `triton._C.libtriton` from python/src/*.c, and the
test test/test_toy.py (exit 0 when the kernels compute the right values).
"""

from __future__ import annotations

import textwrap
from dataclasses import dataclass, replace

from tritonbisect.toyworld.apibreaks import apply_fixes

BASE_VERSION = "3.6.0"
TEST_COMMAND = "python test/test_toy.py"


def _t(text: str, **subs: object) -> str:
    out = textwrap.dedent(text).lstrip("\n")
    for key, value in subs.items():
        out = out.replace(f"@{key}@", str(value))
    return out


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

    def with_(self, **changes) -> TritonState:
        return replace(self, **changes)


SETUP_PY = '''
"""Toy Triton's build: a setuptools C extension against a toy LLVM install.

LLVM comes from LLVM_SYSPATH (an install prefix with include/ and lib/), or from
LLVM_INCLUDE_DIRS + LLVM_LIBRARY_DIR. Knobs honoured like the real Triton's:
TRITON_BUILD_WITH_CCACHE=true (ccache as the compiler launcher), MAX_JOBS, DEBUG=1
(-O0 -g, assertions on), TRITON_HOME (where downloads would be kept),
TRITON_WHEEL_VERSION_SUFFIX (used when the source tree is not a git checkout).
"""

import os
import shutil
import subprocess

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

BASE_VERSION = "@BASE_VERSION@"
HERE = os.path.dirname(os.path.abspath(__file__))
LLVM_LIBRARY = "ToyLLVM"
WERROR = [
    "-Werror=implicit-function-declaration",
    "-Werror=incompatible-pointer-types",
    "-Werror=int-conversion",
    "-Werror=return-type",
]


def get_version():
    try:
        sha = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=HERE, capture_output=True, text=True, check=True
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        sha = ""
    if sha:
        return BASE_VERSION + "+git" + sha[:8]
    return BASE_VERSION + os.environ.get("TRITON_WHEEL_VERSION_SUFFIX", "")


def env_flag(name):
    return os.environ.get(name, "").strip().lower() in ("1", "true", "on", "yes")


def llvm_paths():
    syspath = os.environ.get("LLVM_SYSPATH")
    if syspath:
        includes = [os.path.join(syspath, "include")]
        libdir = os.path.join(syspath, "lib")
        origin = "LLVM_SYSPATH=" + syspath
    else:
        include_dirs = os.environ.get("LLVM_INCLUDE_DIRS", "")
        libdir = os.environ.get("LLVM_LIBRARY_DIR", "")
        if not include_dirs or not libdir:
            raise SystemExit(
                "error: toy Triton needs an LLVM install: set LLVM_SYSPATH to its prefix "
                "(with include/ and lib/), or set both LLVM_INCLUDE_DIRS and LLVM_LIBRARY_DIR. "
                "The toy world has no prebuilt LLVM to download."
            )
        includes = [p for p in include_dirs.replace(";", os.pathsep).split(os.pathsep) if p]
        origin = "LLVM_INCLUDE_DIRS=" + include_dirs + " LLVM_LIBRARY_DIR=" + libdir
    archive = os.path.join(libdir, "lib" + LLVM_LIBRARY + ".a")
    if not os.path.isfile(archive):
        raise SystemExit("error: " + origin + ": " + archive + " not found (not a toy LLVM install?)")
    if not any(os.path.isfile(os.path.join(d, "mlir", "IR", "Builders.h")) for d in includes):
        raise SystemExit(
            "error: " + origin + ": no mlir/IR/Builders.h in the include directories "
            "(was LLVM built with -DLLVM_ENABLE_PROJECTS=\\"mlir;llvm\\"?)"
        )
    return includes, libdir, origin


class TritonBuildExt(build_ext):
    def finalize_options(self):
        super().finalize_options()
        # The LLVM install may change under an unchanged source tree: always recompile
        # (ccache makes that cheap).
        self.force = True
        jobs = os.environ.get("MAX_JOBS", "")
        if jobs.isdigit() and int(jobs) > 0:
            self.parallel = int(jobs)

    def build_extensions(self):
        includes, libdir, origin = llvm_paths()
        debug = env_flag("DEBUG")
        if debug:
            flags = ["-O0", "-g", "-UNDEBUG", "-DTRITON_DEBUG=1"]
        else:
            flags = ["-O2", "-DNDEBUG"]
        for ext in self.extensions:
            ext.include_dirs = [os.path.join(HERE, "src"), *includes]
            ext.library_dirs = [libdir]
            ext.libraries = [LLVM_LIBRARY]
            ext.extra_compile_args = WERROR + flags
            ext.extra_link_args = ["-g"] if debug else []
        launcher = "off"
        if env_flag("TRITON_BUILD_WITH_CCACHE"):
            ccache = shutil.which("ccache")
            compiler = list(self.compiler.compiler_so)
            if ccache and os.path.basename(compiler[0]) != "ccache":
                self.compiler.set_executable("compiler_so", [ccache, *compiler])
            launcher = "ccache" if ccache else "off (ccache not found)"
        home = os.environ.get("TRITON_HOME")
        if home:
            os.makedirs(os.path.join(home, ".triton"), exist_ok=True)
        print(
            "toy-triton: building " + get_version() + " against " + origin
            + " (debug=" + str(int(debug)) + ", compiler launcher: " + launcher
            + ", jobs=" + str(self.parallel or 1) + ")",
            flush=True,
        )
        super().build_extensions()


setup(
    name="triton",
    version=get_version(),
    description="A toy Triton for tritonbisect's tests",
    packages=["triton"],
    ext_modules=[
        Extension(
            "triton._C.libtriton",
            sources=["src/main.c", "src/ir.c", "src/passes.c", "src/llvm.c", "src/utils.c"],
            depends=["src/triton.h"],
        )
    ],
    cmdclass={"build_ext": TritonBuildExt},
    python_requires=">=3.9",
    zip_safe=False,
)
'''

PYPROJECT = """
[build-system]
requires = ["setuptools>=64"]
build-backend = "setuptools.build_meta"
"""

INIT_PY = '''
"""Toy Triton: tritonbisect's miniature of Triton, a C extension built against toy LLVM."""

from importlib import metadata as _metadata

try:
    __version__ = _metadata.version("triton")
except _metadata.PackageNotFoundError:  # imported from a source tree
    __version__ = "@BASE_VERSION@"

from . import language  # noqa: E402,F401


def run_elementwise(op, x, y):
    """Compile and run the elementwise kernel `op` ("add", "sub", "mul", ...) on x and y."""
    from ._C import libtriton

    return libtriton.run_elementwise(op, list(x), list(y))
'''

LANGUAGE_PY_HEAD = '''
"""triton.language (toy): helpers kernels use."""


def cdiv(a, b):
    return -(-a // b)


def next_power_of_2(n):
    from ._C import libtriton

    return libtriton.next_power_of_2(n)
'''

TRITON_H = """
#ifndef TRITON_TOY_TRITON_H
#define TRITON_TOY_TRITON_H

#include <stdint.h>

#include "llvm/IR/Opcodes.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/MLIRContext.h"

typedef struct {
  MlirContext ctx;
  int opcode;
} TritonKernel;

/* ir.c */
int triton_kernel_init(TritonKernel *kernel, int opcode);
void triton_kernel_destroy(TritonKernel *kernel);
int triton_kernel_eval(TritonKernel *kernel, int64_t x, int64_t y, int64_t *out);
MlirOperation triton_build_binary(MlirContext ctx, int opcode, int64_t lhs, int64_t rhs);
/* passes.c */
int triton_run_passes(MlirContext ctx, MlirOperation op);
/* llvm.c */
int64_t triton_translate_to_llvm(MlirOperation op);
/* utils.c */
int64_t triton_next_power_of_2(int64_t n);

#endif
"""

MAIN_C = """
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "triton.h"
#include "llvm/Config/llvm-config.h"
#include "llvm/Support/Version.h"

static const struct {
  const char *name;
  int opcode;
} kOps[] = {
    {"add", LLVM_OP_ADD}, {"sub", LLVM_OP_SUB}, {"mul", LLVM_OP_MUL}, {"and", LLVM_OP_AND},
    {"or", LLVM_OP_OR},   {"xor", LLVM_OP_XOR}, {"shl", LLVM_OP_SHL},
};

static int opcodeFromName(const char *name) {
  for (size_t i = 0; i < sizeof(kOps) / sizeof(kOps[0]); ++i)
    if (strcmp(kOps[i].name, name) == 0)
      return kOps[i].opcode;
  return -1;
}

static int readInts(PyObject *fast, Py_ssize_t n, int64_t *out) {
  for (Py_ssize_t i = 0; i < n; ++i) {
    long long v = PyLong_AsLongLong(PySequence_Fast_GET_ITEM(fast, i));
    if (v == -1 && PyErr_Occurred())
      return -1;
    out[i] = (int64_t)v;
  }
  return 0;
}

static PyObject *run_elementwise(PyObject *self, PyObject *args) {
  const char *name;
  PyObject *xs, *ys, *xf = NULL, *yf = NULL, *result = NULL;
  int64_t *buffer = NULL;
  (void)self;
  if (!PyArg_ParseTuple(args, "sOO:run_elementwise", &name, &xs, &ys))
    return NULL;
  int opcode = opcodeFromName(name);
  if (opcode < 0)
    return PyErr_Format(PyExc_ValueError, "unknown elementwise op '%s'", name);
  xf = PySequence_Fast(xs, "x must be a sequence of ints");
  yf = xf ? PySequence_Fast(ys, "y must be a sequence of ints") : NULL;
  if (!yf)
    goto done;
  Py_ssize_t n = PySequence_Fast_GET_SIZE(xf);
  if (PySequence_Fast_GET_SIZE(yf) != n) {
    PyErr_SetString(PyExc_ValueError, "x and y differ in length");
    goto done;
  }
  buffer = (int64_t *)PyMem_Calloc(3 * (size_t)(n ? n : 1), sizeof(int64_t));
  if (!buffer) {
    PyErr_NoMemory();
    goto done;
  }
  int64_t *x = buffer, *y = buffer + n, *out = buffer + 2 * n;
  if (readInts(xf, n, x) != 0 || readInts(yf, n, y) != 0)
    goto done;

  TritonKernel kernel;
  if (triton_kernel_init(&kernel, opcode) != 0) {
    PyErr_SetString(PyExc_RuntimeError, "cannot create an MLIR context");
    goto done;
  }
  int status = 0;
@LOOP@
  triton_kernel_destroy(&kernel);
  if (status != 0) {
    PyErr_Format(PyExc_RuntimeError, "the '%s' kernel failed to compile", name);
    goto done;
  }
  result = PyList_New(n);
  for (Py_ssize_t i = 0; result && i < n; ++i)
    PyList_SET_ITEM(result, i, PyLong_FromLongLong((long long)out[i]));

done:
  PyMem_Free(buffer);
  Py_XDECREF(xf);
  Py_XDECREF(yf);
  return result;
}

static PyObject *llvm_version(PyObject *self, PyObject *unused) {
  (void)self;
  (void)unused;
  return PyUnicode_FromString(llvmGetVersionString());
}

static PyObject *build_info(PyObject *self, PyObject *unused) {
  (void)self;
  (void)unused;
#ifdef NDEBUG
  int assertions = 0;
#else
  int assertions = 1;
#endif
#ifdef TRITON_DEBUG
  int debug = 1;
#else
  int debug = 0;
#endif
  return Py_BuildValue("{s:O,s:O,s:s,s:i}", "assertions", assertions ? Py_True : Py_False,
                       "debug", debug ? Py_True : Py_False, "llvm_targets",
                       LLVM_TARGETS_TO_BUILD, "llvm_assertions", LLVM_ENABLE_ASSERTIONS);
}

static PyObject *next_power_of_2(PyObject *self, PyObject *arg) {
  (void)self;
  long long n = PyLong_AsLongLong(arg);
  if (n == -1 && PyErr_Occurred())
    return NULL;
  return PyLong_FromLongLong((long long)triton_next_power_of_2((int64_t)n));
}

static PyMethodDef kMethods[] = {
    {"run_elementwise", run_elementwise, METH_VARARGS,
     "run_elementwise(op, x, y) -> list: compile and run an elementwise kernel"},
    {"llvm_version", llvm_version, METH_NOARGS, "the version of the LLVM Triton was built with"},
    {"build_info", build_info, METH_NOARGS, "how this extension was built"},
    {"next_power_of_2", next_power_of_2, METH_O, "the smallest power of 2 >= n"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef kModule = {
    PyModuleDef_HEAD_INIT, "libtriton", "Toy Triton's compiler core.", -1, kMethods,
    NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit_libtriton(void) { return PyModule_Create(&kModule); }
"""

LOOP_SIMPLE = """
  for (Py_ssize_t i = 0; i < n && status == 0; ++i)
    status = triton_kernel_eval(&kernel, x[i], y[i], &out[i]);
"""

LOOP_VECTORIZED = """
  /* Four lanes at a time, then the tail. */
  Py_ssize_t i = 0;
  for (; i + 4 <= n && status == 0; i += 4)
    for (int lane = 0; lane < 4 && status == 0; ++lane)
      status = triton_kernel_eval(&kernel, x[i + lane], y[i + lane], &out[i + lane]);
  for (; @TAIL@ && status == 0; ++i)
    status = triton_kernel_eval(&kernel, x[i], y[i], &out[i]);
"""

IR_C = """
#include "triton.h"

int triton_kernel_init(TritonKernel *kernel, int opcode) {
  kernel->opcode = opcode;
  kernel->ctx = mlirContextCreate();
  return kernel->ctx ? 0 : -1;
}

void triton_kernel_destroy(TritonKernel *kernel) {
  mlirContextDestroy(kernel->ctx);
  kernel->ctx = NULL;
}

MlirOperation triton_build_binary(MlirContext ctx, int opcode, int64_t lhs, int64_t rhs) {
  return mlirBuildOp(ctx, opcode, lhs, rhs);
}

int triton_kernel_eval(TritonKernel *kernel, int64_t x, int64_t y, int64_t *out) {
  MlirOperation op = triton_build_binary(kernel->ctx, kernel->opcode, x, y);
  if (!op)
    return -1;
  if (triton_run_passes(kernel->ctx, op) != 0)
    return -1;
  *out = triton_translate_to_llvm(op);
  return 0;
}
"""

PASSES_C = """
#include "triton.h"
#include "mlir/Pass/PassManager.h"

int triton_run_passes(MlirContext ctx, MlirOperation op) {
  MlirPassManager pm = mlirPassManagerCreate(ctx);
  if (!pm)
    return -1;
  mlirPassManagerAddCanonicalizer(pm);
@COMMENT@  mlirPassManagerAddVerifier(pm)@SEMI@
  int status = mlirPassManagerRun(pm, op);
  mlirPassManagerDestroy(pm);
  return status;
}
"""

LLVM_C = """
#include "triton.h"
#include "llvm/IR/ConstantFold.h"

int64_t triton_translate_to_llvm(MlirOperation op) {
  int opcode = mlirOperationGetOpcode(op);
  int64_t lhs = mlirOperationGetOperand(op, 0);
  int64_t rhs = mlirOperationGetOperand(op, 1);
  return llvmConstantFold(opcode, lhs, rhs);
}
"""

UTILS_C_HEAD = """
#include "triton.h"

int64_t triton_next_power_of_2(int64_t n) {
  int64_t p = 1;
  while (p < n)
    p <<= 1;
  return p;
}
"""

TEST_TOY = '''
"""Toy Triton's kernel test: exit 0 when the kernels compute the right values, 1 otherwise.

Run with the Python of the environment where the triton wheel is installed:
    python test/test_toy.py
"""

import sys

N = 33  # not a multiple of 4: the vectorized loop has a tail


def main():
    try:
        import triton
        from triton._C import libtriton
    except ImportError as exc:
        print("test_toy: ERROR: cannot import triton: %s" % exc, file=sys.stderr)
        return 2
    x = [3 * i - 17 for i in range(N)]
    y = [(5 * i) % 11 + 1 for i in range(N)]
    kernels = {
        "add": lambda a, b: a + b,
        "sub": lambda a, b: a - b,
        "mul": lambda a, b: a * b,
    }
    where = "triton %s, %s" % (triton.__version__, libtriton.llvm_version())
    failures = []
    for name, reference in kernels.items():
        got = libtriton.run_elementwise(name, x, y)
        want = [reference(a, b) for a, b in zip(x, y)]
        wrong = [i for i in range(N) if got[i] != want[i]]
        if wrong:
            i = wrong[0]
            failures.append(
                "%s kernel: %d of %d elements wrong; first at index %d: got %d, expected %d"
                % (name, len(wrong), N, i, got[i], want[i])
            )
    if failures:
        for line in failures:
            print("test_toy: FAIL: " + line)
        print("test_toy: FAIL (%s)" % where)
        return 1
    print("test_toy: PASS (%s)" % where)
    return 0


if __name__ == "__main__":
    sys.exit(main())
'''

README = """
# Toy Triton

tritonbisect's miniature of Triton: a Python package whose C extension builds against the
toy llvm-project pinned in cmake/llvm-hash.txt.

    cmake -G Ninja -S $LLVM/llvm -B $LLVM/build -DCMAKE_INSTALL_PREFIX=$PREFIX \\
      -DLLVM_ENABLE_PROJECTS="mlir;llvm" -DLLVM_TARGETS_TO_BUILD=X86 -DCMAKE_BUILD_TYPE=Release
    ninja -C $LLVM/build install
    LLVM_SYSPATH=$PREFIX pip wheel --no-build-isolation --no-deps -w dist ./python
    pip install dist/triton-*.whl
    python test/test_toy.py
"""

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
        loop = _t(LOOP_VECTORIZED, TAIL="i + 1 < n" if state.tail_bug else "i < n")
    else:
        loop = _t(LOOP_SIMPLE)
    # _t dedented the loop; put it back at function-body indentation.
    loop = textwrap.indent(loop.rstrip("\n"), "  ")
    sources = {
        "python/src/triton.h": _t(TRITON_H),
        "python/src/main.c": _t(MAIN_C, LOOP=loop),
        "python/src/ir.c": _t(IR_C),
        "python/src/passes.c": _t(
            PASSES_C,
            SEMI="" if state.broken else ";",
            COMMENT=(
                "  /* The verifier runs last so that canonicalization cannot hide invalid IR. */\n"
                if state.pipeline_comment
                else ""
            ),
        ),
        "python/src/llvm.c": _t(LLVM_C),
    }
    utils = [_t(UTILS_C_HEAD)]
    for n in state.utils:
        utils.append(
            f"\nint64_t triton_util_{n}(int64_t x);\n"
            f"int64_t triton_util_{n}(int64_t x) {{ return (x << {n % 5}) + {n}; }}\n"
        )
    sources["python/src/utils.c"] = "".join(utils)
    sources = {path: apply_fixes(text, path, state.fixed) for path, text in sources.items()}

    language = [_t(LANGUAGE_PY_HEAD)]
    for n in state.helpers:
        language.append(f"\n\ndef helper_{n}(x):\n    return x * {n} + 1\n")
    unit = ['"""Unit tests of triton.language (toy)."""\n']
    for n in state.unit_tests:
        unit.append(f"\n\ndef test_helper_{n}():\n    assert {n} * 2 + 1 == {2 * n + 1}\n")

    files = {
        "README.md": _t(README) + "".join(f"\n{note}\n" for note in state.notes),
        ".gitignore": _t(GITIGNORE),
        "cmake/llvm-hash.txt": state.llvm_hash + "\n",
        "python/setup.py": _t(SETUP_PY, BASE_VERSION=BASE_VERSION),
        "python/pyproject.toml": _t(PYPROJECT),
        "python/triton/__init__.py": _t(INIT_PY, BASE_VERSION=BASE_VERSION),
        "python/triton/language.py": "".join(language),
        "test/test_toy.py": _t(TEST_TOY),
        "test/unit/test_language.py": "".join(unit),
        **sources,
    }
    return files


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
