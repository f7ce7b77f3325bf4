"""A file-system failure where the tool reads or writes (a read-only place, no permission, a
full disk, a file where a folder is needed) as one line naming the path and the problem.

The CLI boundary (cli.entry.run_cli) turns every such OSError into this line and its exit
code, wherever it was raised: exit 2 (choose another place), or 4 for a full disk (the run
was aborted; what was recorded is kept, `resume` goes on once there is room).
"""

from __future__ import annotations

import contextlib
import errno
import os
from collections.abc import Iterator

from tritonbisect.core.errors import EXIT_ABORTED, EXIT_USAGE, TritonBisectError

_PROBLEMS = {
    errno.EROFS: "read-only file system; choose a writable place",
    errno.EACCES: "permission denied; choose a place you may write to",
    errno.EPERM: "operation not permitted there; choose another place",
    errno.ENOSPC: "no space left on device; free some space (`tritonbisect clean`) or choose another place",
    errno.EDQUOT: "disk quota exceeded; free some space (`tritonbisect clean`) or choose another place",
    errno.EEXIST: "a file is in the way (a folder is needed there); choose another path",
    errno.ENOTDIR: "a part of the path is a file, not a folder; choose another path",
    errno.EISDIR: "is a folder; give a file name",
    errno.ENOENT: "no such file or folder (or one cannot be made there)",
    errno.ENAMETOOLONG: "the name is too long",
    errno.ELOOP: "too many symbolic links",
}
_FULL = (errno.ENOSPC, errno.EDQUOT)


def place_error(exc: OSError) -> TritonBisectError | None:
    """The one-line error of a file-system failure at a path; None for other OSErrors (they
    are bugs or infrastructure failures, and keep their traceback)."""
    problem = _PROBLEMS.get(exc.errno or 0)
    path = exc.filename
    if problem is None or path is None:
        return None
    if isinstance(path, bytes):
        path = path.decode(errors="replace")
    code = EXIT_ABORTED if exc.errno in _FULL else EXIT_USAGE
    return TritonBisectError(f"{path}: {problem}", exit_code=code)


@contextlib.contextmanager
def at_path(path: str | os.PathLike[str]) -> Iterator[None]:
    """Name `path` in an OSError raised without one (a write that hits a full disk names no
    file), so that `place_error` can say where."""
    try:
        yield
    except OSError as exc:
        if exc.filename is None:
            exc.filename = os.fspath(path)
        raise
