"""Classifying failed builds: the commit's fault (BUILD_FAILED) or the machine's (INFRA).

Builds on `bisect.outcome.classify_build` and adds what compilers, ninja and pip print when the
machine, not the commit, is at fault: an OOM-killed cc1plus reported by the driver (ninja then
exits 1, not 137), a missing build dependency, pip's network errors. A BUILD_FAILED reason
names the first compiler error so a journal line says why a commit was skipped.
"""

from __future__ import annotations

import re
from pathlib import Path

from tritonbisect.builds.build_process import read_tail
from tritonbisect.core.outcome import Classification, Kind, classify_build

_OOM = re.compile(
    r"Killed signal terminated program|internal compiler error: Killed|"
    r"terminated with signal 9|virtual memory exhausted|out of memory allocating|"
    r"std::bad_alloc|LLVM ERROR: out of memory|c\+\+: fatal error: Killed|cc: fatal error: Killed"
)
_NETWORK = re.compile(
    r"Failed to establish a new connection|HTTPSConnectionPool|HTTPConnectionPool|"
    r"ReadTimeoutError|ConnectTimeoutError|Could not fetch URL|urlopen error|"
    r"Name or service not known|SSL: CERTIFICATE_VERIFY_FAILED|curl: \(\d+\)|"
    r"No matching distribution found"
)
_MISSING = re.compile(
    r"No CMAKE_(?:C|CXX)_COMPILER could be found|CMAKE_(?:C|CXX)_COMPILER not set|"
    r"CMAKE_MAKE_PROGRAM is not set|Could not find CMAKE_MAKE_PROGRAM|"
    r"Unable to find the requested Boost|is not a full path and was not found in the PATH|"
    r"ModuleNotFoundError: No module named '(?:setuptools|wheel|pybind11|cmake|ninja|lit)'|"
    r"BackendUnavailable|Cannot import 'setuptools\.build_meta'|invalid command 'bdist_wheel'|"
    r"ccache: error: Could not find compiler"
)
_DISK = re.compile(r"No space left on device|Disk quota exceeded|ENOSPC")
_ERROR_LINES = (
    # a compiler's located error first: `file:line[:col]: error: ...` / `fatal error:`
    re.compile(r"^\s*\S+:\d+(?::\d+)?: (?:fatal )?error:.*$", re.MULTILINE),
    re.compile(r"^.*(?:CMake Error|undefined reference).*$", re.MULTILINE),
    # any other error line, but not pip's own wrappers around the real one
    re.compile(
        r"^(?!.*(?:subprocess-exited-with-error|metadata-generation-failed|"
        r"Failed building wheel|Failed to build|failed with exit code|This error originates))"
        r".*(?:\berror:|\w+Error:|FAILED:).*$",
        re.MULTILINE,
    ),
)


def classify_build_output(
    returncode: int | None, log_tail: str, *, timed_out: bool = False
) -> Classification:
    """Classify a finished build from its exit status and the tail of its log."""
    if returncode == 0 and not timed_out:
        return Classification(Kind.PASS, "build succeeded")
    if not timed_out:
        for pattern, what in (
            (_DISK, "disk full"),
            (_OOM, "compiler killed, out of memory?"),
            (_NETWORK, "network"),
            (_MISSING, "missing build tool or dependency"),
        ):
            m = pattern.search(log_tail)
            if m:
                return Classification(Kind.INFRA, f"{what}: {_line_of(log_tail, m.start())}")
    base = classify_build(returncode, log_tail, timed_out=timed_out)
    if base.kind is Kind.BUILD_FAILED:
        first = first_error(log_tail)
        if first:
            return Classification(Kind.BUILD_FAILED, f"{base.reason}: {first}")
    return base


def classify_build_log(
    returncode: int | None, log: Path | None, *, timed_out: bool = False
) -> Classification:
    return classify_build_output(returncode, read_tail(log), timed_out=timed_out)


def first_error(text: str) -> str:
    """The first line that looks like a compiler/CMake error, trimmed ("" when none)."""
    for pattern in _ERROR_LINES:
        m = pattern.search(text)
        if m:
            return m.group(0).strip()[:240]
    return ""


def _line_of(text: str, pos: int) -> str:
    start = text.rfind("\n", 0, pos) + 1
    end = text.find("\n", pos)
    return text[start : end if end != -1 else len(text)].strip()[:200]
