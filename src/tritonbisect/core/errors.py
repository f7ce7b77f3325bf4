"""Errors the CLI turns into one clear line and a documented exit code."""

from __future__ import annotations

import contextlib
import traceback
from collections.abc import Iterator
from pathlib import Path

# Exit codes of `tritonbisect run/triton/llvm/torch/pairs/resume` (documented in README.md).
EXIT_FOUND = 0
EXIT_INCONCLUSIVE = 1
EXIT_USAGE = 2
EXIT_ENDPOINTS_INVALID = 3
EXIT_ABORTED = 4
EXIT_NEW_REGRESSION = 5  # hunt: a new regression was found (and its culprit named)
# a culprit is named, but its confirmation disagreed or its probability is below --confidence:
# a script must not act on it as on a confirmed one
EXIT_LOW_CONFIDENCE = 6
EXIT_MANUAL_FIX_NEEDED = 10  # compat-builder: state saved, a person must commit a fix
EXIT_INTERRUPTED = 130


class TritonBisectError(Exception):
    """Base class: `message` is shown to the user as one line; `exit_code` is returned."""

    exit_code = EXIT_USAGE

    def __init__(self, message: str, *, exit_code: int | None = None) -> None:
        super().__init__(message)
        self.message = message
        if exit_code is not None:
            self.exit_code = exit_code


class InputError(TritonBisectError):
    """Bad input from the user (unknown rev, missing file, corrupt CSV/trace/journal): exit 2."""

    exit_code = EXIT_USAGE


class AbortError(TritonBisectError):
    """The run cannot go on (infra failure after retry, policy abort): exit 4."""

    exit_code = EXIT_ABORTED


class SessionLockedError(InputError):
    """Another process holds this session's lock."""


@contextlib.contextmanager
def unexpected_shapes(what: str, fix: str) -> Iterator[None]:
    """Code that meets a value of a shape the tool never writes in `what` (a file edited by hand,
    or crafted by someone else) ends in one line naming it, where the tool met it and `fix`,
    with exit 2: not a traceback."""
    try:
        yield
    except (TypeError, ValueError, KeyError, AttributeError, IndexError) as exc:
        frame = traceback.extract_tb(exc.__traceback__)[-1]
        raise InputError(f"{what} holds a value of an unexpected shape ({type(exc).__name__} in "
                         f"{Path(frame.filename).name}:{frame.lineno}: {exc}); {fix}") from None
