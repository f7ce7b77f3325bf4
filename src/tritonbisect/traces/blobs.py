"""Where a launch's tensor blob is on this machine, confined to the trace's own folder.

A trace records each blob with the capture machine's absolute path
(`/tmp/x/logs/saved_tensors/ab/<hash>.bin`). The blob is looked for under the trace's own
`saved_tensors/` folders only: the oracle copies what it finds into `blobs/`, the folder users
attach to issues, so a crafted path (a bare `id_rsa`, `../../.ssh/id_rsa`, an absolute path, a
link in the trace's folder pointing out of it) must never bring in a file from elsewhere.
"""

from __future__ import annotations

import os
from pathlib import Path

BLOB_FOLDER = "saved_tensors"
# tritonparse writes `logs/` (the raw trace and its saved_tensors/) and `parsed/` side by side:
# a trace given as one of them owns the folder above
_SIDE_BY_SIDE = ("logs", "parsed")


def trace_home(root: Path) -> Path:
    """The folder a trace (a file or a folder) owns: blobs are found inside it only."""
    folder = root if root.is_dir() else root.parent
    return folder.parent if folder.name in _SIDE_BY_SIDE else folder


def _inside(candidate: Path, home: Path) -> Path | None:
    """`candidate` when it is a regular file whose real path is under `home`'s, else None."""
    try:
        real = candidate.resolve(strict=True)
    except (OSError, RuntimeError, ValueError):
        return None
    if not real.is_relative_to(home) or BLOB_FOLDER not in real.relative_to(home).parts:
        return None
    return real if real.is_file() else None


def resolve_blob(blob_path: str, trace_file: Path, root: Path) -> Path | None:
    """The blob file a launch record names, inside the trace's own `saved_tensors/` folders
    (beside the trace file, in the trace's folder or its `logs/`); None when it is not there."""
    recorded = Path(blob_path)
    parts = recorded.parts
    tail: tuple[str, ...] = (recorded.name,)
    if BLOB_FOLDER in parts:
        i = len(parts) - 1 - parts[::-1].index(BLOB_FOLDER)
        tail = parts[i + 1 :]
    if not tail or any(p in ("", ".", "..") or "/" in p for p in tail):
        return None
    try:
        home = trace_home(root).resolve(strict=True)
    except (OSError, RuntimeError, ValueError):
        return None
    bases = [trace_file.parent, trace_file.parent.parent / "logs", home, home / "logs"]
    seen: set[Path] = set()
    for base in bases:
        candidate = base / BLOB_FOLDER / Path(*tail)
        if candidate in seen:
            continue
        seen.add(candidate)
        if (found := _inside(candidate, home)) is not None:
            return found
    # a trace whose saved_tensors/ lies deeper in its folder (a folder of several captures)
    for folder, dirs, files in os.walk(home):  # links to folders are not followed
        dirs.sort()
        if tail[-1] in files and (found := _inside(Path(folder) / tail[-1], home)) is not None:
            return found
    return None
