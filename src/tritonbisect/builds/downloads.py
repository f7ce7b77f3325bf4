"""Triton's build downloads, kept once per content and shared by every worker.

Triton's setup.py downloads into `$TRITON_HOME/.triton/<package>/<name>/` (the prebuilt LLVM
`llvm-<hash8>-<platform>[-<build_number>]`, NVIDIA's ptxas/cuobjdump/nvdisasm/cudart/cupti,
nlohmann json, googletest...), each with a `version.txt` holding the URL it came from; the
name says what the content is. Older versions delete the whole `.triton/<package>` folder
whenever the URL they want is not the one recorded there: with one TRITON_HOME for all
workers, a worker on the other side of an LLVM bump deletes the LLVM a running build links
against, and alternating steps download it again each time.

So every worker builds with its own TRITON_HOME, whose entries are links into one shared
store, `<workdir>/downloads/<package>/<name>`:

* before a build, `link_shared` links every stored entry into the worker's home (setup.py
  finds what it wants there; deleting its package folder removes only links);
* after it, `adopt_downloads` moves what the build downloaded into the store (the first
  worker to finish wins; a second copy is dropped) and puts a link in its place. The names
  it returns are the downloads that step needed.

Stored entries are never deleted by a build; `tritonbisect clean --all` removes them (kept
with --keep-cache).

A sandboxed build has no network: whatever it leaves in its TRITON_HOME was not downloaded,
it was planted (an LLVM of its own, for the next commit's build to link). Its home is kept to
the links into the store before and after each build (`keep_only_shared`), and nothing of it
is adopted. The store itself is read-only inside the sandbox.
"""

from __future__ import annotations

import contextlib
import os
import shutil
from collections.abc import Iterator
from pathlib import Path

from tritonbisect.core.lock import locked

STORE = "downloads"
VERSION_FILE = "version.txt"


def store_dir(workdir: Path) -> Path:
    return Path(workdir) / STORE


def worker_home(workdir: Path, tag: str) -> Path:
    """The TRITON_HOME of one worker (its builds run one at a time)."""
    return Path(workdir) / "triton-home" / tag


def _locked(store: Path) -> contextlib.AbstractContextManager[None]:
    return locked(store / ".lock", mkdir=True)


def _entries(root: Path) -> Iterator[tuple[str, str, Path]]:
    """(package, name, path) of every complete entry (one with a version.txt) under root."""
    if not root.is_dir():
        return
    for package in sorted(p for p in root.iterdir() if p.is_dir() and not p.name.startswith(".")):
        for entry in sorted(package.iterdir()):
            if (entry / VERSION_FILE).is_file():
                yield package.name, entry.name, entry


def link_shared(home: Path, store: Path, *, seeds: tuple[Path, ...] = ()) -> int:
    """Link every stored entry (and those of `seeds`, e.g. the user's own ~/.triton, where
    the store lacks them) into home/.triton; returns how many links were made."""
    made = 0
    triton = Path(home) / ".triton"
    for root in (Path(store), *seeds):
        for package, name, path in _entries(root):
            link = triton / package / name
            if link.is_symlink() or link.exists():
                continue
            link.parent.mkdir(parents=True, exist_ok=True)
            link.symlink_to(path.resolve(), target_is_directory=True)
            made += 1
    return made


def keep_only_shared(home: Path, store: Path) -> list[str]:
    """Remove from home/.triton everything but the links to the store's own entries (what a
    sandboxed build left there); returns what was removed, as paths under home."""
    triton = Path(home) / ".triton"
    removed: list[str] = []
    if triton.is_symlink():
        triton.unlink()
        return [".triton"]
    if not triton.is_dir():
        return removed
    real_store = Path(os.path.realpath(store))
    for package in sorted(triton.iterdir()):
        if package.is_symlink() or not package.is_dir():
            _remove(package)
            removed.append(f".triton/{package.name}")
            continue
        for entry in sorted(package.iterdir()):
            want = real_store / package.name / entry.name
            if entry.is_symlink() and Path(os.readlink(entry)) == want and (want / VERSION_FILE).is_file():
                continue
            _remove(entry)
            removed.append(f".triton/{package.name}/{entry.name}")
    return removed


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)
    else:
        path.unlink(missing_ok=True)


def adopt_downloads(home: Path, store: Path) -> list[str]:
    """Move what a build downloaded into home/.triton (real folders, not links) into the
    store, linking it back; returns "package/name" of each, the step's downloads."""
    triton = Path(home) / ".triton"
    found = [(p, n, path) for p, n, path in _entries(triton) if not path.is_symlink()]
    if not found:
        return []
    adopted = []
    with _locked(Path(store)):
        for package, name, path in found:
            target = Path(store) / package / name
            if not (target / VERSION_FILE).is_file():
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.rmtree(target, ignore_errors=True)  # an incomplete earlier move
                os.replace(path, target)
            else:
                shutil.rmtree(path)  # another worker stored the same content first
            path.symlink_to(target.resolve(), target_is_directory=True)
            adopted.append(f"{package}/{name}")
    return adopted


def find_prebuilt(store: Path, name_prefix: str, suffix: str = "") -> Path | None:
    """A stored prebuilt LLVM whose name starts with name_prefix (llvm-<hash8>-) and ends
    with suffix (-<build_number>, or "" before build numbers): for offline builds."""
    root = Path(store) / "llvm"
    if not root.is_dir():
        return None
    for entry in sorted(root.iterdir()):
        if not (entry / VERSION_FILE).is_file() or not entry.name.startswith(name_prefix):
            continue
        rest = entry.name[len(name_prefix):]
        # before build numbers the name ends with the platform; after, with -<n>
        if suffix and rest.endswith(suffix):
            return entry
        if not suffix and not rest.rsplit("-", 1)[-1].isdigit():
            return entry
    return None


__all__ = ["STORE", "adopt_downloads", "find_prebuilt", "keep_only_shared", "link_shared", "store_dir",
           "worker_home"]
