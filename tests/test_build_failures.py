"""Build failure classification: the commit's fault (build_failed) or the machine's (infra)."""

from __future__ import annotations

import pytest

from tritonbisect.builds.failures import classify_build_output, first_error
from tritonbisect.builds.toolchain import build_requires
from tritonbisect.core.outcome import Kind

COMPILE_ERROR = """\
[3/40] Building CXX object lib/CMakeFiles/toy.dir/Ops.cpp.o
FAILED: lib/CMakeFiles/toy.dir/Ops.cpp.o
/src/lib/Ops.cpp:12:5: error: 'getOldName' was not declared in this scope; did you mean 'getNewName'?
   12 |     getOldName();
ninja: build stopped: subcommand failed.
"""


@pytest.mark.parametrize(
    ("rc", "log", "timed_out", "kind", "words"),
    [
        (0, "all good", False, Kind.PASS, "succeeded"),
        (1, COMPILE_ERROR, False, Kind.BUILD_FAILED, "getOldName"),
        (1, "CMake Error at CMakeLists.txt:3 (add_library):\n  bad", False, Kind.BUILD_FAILED, "CMake Error"),
        (1, "/usr/bin/ld: cannot write: No space left on device", False, Kind.INFRA, "disk full"),
        (1, "g++: fatal error: Killed signal terminated program cc1plus\ncompilation terminated.",
         False, Kind.INFRA, "out of memory"),
        (137, "", False, Kind.INFRA, "137"),
        (-9, "", False, Kind.INFRA, "137"),
        (127, "ninja: command not found", False, Kind.INFRA, "missing tool"),
        (1, "CMake Error: CMake was unable to find a build program corresponding to \"Ninja\".  "
            "CMAKE_MAKE_PROGRAM is not set.", False, Kind.INFRA, "missing build tool"),
        (1, "ModuleNotFoundError: No module named 'pybind11'", False, Kind.INFRA, "pybind11"),
        (1, "urllib.error.URLError: <urlopen error [Errno -3] Temporary failure in name resolution>",
         False, Kind.INFRA, "name resolution"),
        (1, "WARNING: Retrying ... Failed to establish a new connection: [Errno 101]", False,
         Kind.INFRA, "network"),
        (None, "", True, Kind.INFRA, "timeout"),
    ],
)
def test_classify(rc, log, timed_out, kind, words):
    c = classify_build_output(rc, log, timed_out=timed_out)
    assert c.kind is kind, c
    assert words.lower() in c.reason.lower(), c.reason


def test_first_error_prefers_compiler_errors():
    assert first_error(COMPILE_ERROR).startswith("/src/lib/Ops.cpp:12:5: error:")
    assert first_error("FAILED: x.o\nsomething") == "FAILED: x.o"
    assert first_error("nothing to see") == ""


def test_build_requires(tmp_path):
    assert build_requires(tmp_path) == ["setuptools>=40.8.0"]
    (tmp_path / "pyproject.toml").write_text(
        '[project]\nname="x"\n[build-system]\nrequires = ["setuptools>=40.8.0", "cmake>=3.20,<4.0",\n'
        ' "ninja>=1.11.1", "pybind11>=2.13.1"]\nbuild-backend = "setuptools.build_meta"\n'
    )
    assert build_requires(tmp_path) == ["setuptools>=40.8.0", "cmake>=3.20,<4.0", "ninja>=1.11.1", "pybind11>=2.13.1"]
    (tmp_path / "pyproject.toml").write_text("[tool.ruff]\nline-length = 100\n")
    assert build_requires(tmp_path) == ["setuptools>=40.8.0"]
