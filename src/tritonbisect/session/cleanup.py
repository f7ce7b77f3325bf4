"""What a run leaves behind, and `tritonbisect clean`.

Workers keep their git worktrees (`<workdir>/worktrees/<repo>/w<i>`) and target venvs
(`<workdir>/venvs/<repo>-w<i>`) between steps and sessions, so that the next build of the
same repository is incremental. A worktree is registered in the user's repository (`git
worktree list` shows it) until it is removed with `git worktree remove`, which is what
`clean` does; a worktree whose folder is already gone is pruned (`git worktree prune`).

    clean SESSION      the session's folder, the worktrees and venvs of the repositories it
                       bisected (made again on demand), and the cached builds of the commits
                       it built (unless --keep-cache)
    clean --all        every session, worktree and venv of the workdir, the step logs,
                       oracles and kernel caches, and the artifact cache, LLVM build
                       folders, Triton's downloads and the submodule mirrors (unless
                       --keep-cache)

A worktree locked by a running worker, and a session being run, are left alone.
"""

from __future__ import annotations

import contextlib
import os
import shutil
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tritonbisect.core.errors import InputError
from tritonbisect.core.gitrun import claimed_repository, git, git_common_dir
from tritonbisect.core.lock import FileLock

if TYPE_CHECKING:  # pragma: no cover
    from tritonbisect.session.session import Session

# Folders of the workdir that --all removes; the cache ones survive --keep-cache.
_SCRATCH = ("step-logs", "oracles", "triton-cache")
# (triton-home: each worker's TRITON_HOME; downloads: what Triton's builds downloaded, shared;
# mirrors: the submodules' local mirrors; ccache-sandboxed: the sandboxed builds' ccache)
_CACHES = ("cache", "llvm-build", "triton-home", "downloads", "mirrors", "ccache-sandboxed")


@dataclass(frozen=True)
class KeptWorktree:
    path: Path
    common_dir: Path | None  # the .git folder of the repository it is registered in

    @property
    def repo(self) -> Path | None:
        """The repository's folder (the .git folder's parent; a bare repository itself)."""
        if self.common_dir is None:
            return None
        return self.common_dir.parent if self.common_dir.name == ".git" else self.common_dir


@dataclass
class CleanReport:
    removed_worktrees: list[Path] = field(default_factory=list)
    pruned_repos: list[Path] = field(default_factory=list)
    removed: list[Path] = field(default_factory=list)  # sessions, venvs, folders
    cache_entries: int = 0
    kept: list[str] = field(default_factory=list)  # what was left alone, and why


def kept_worktrees(workdir: Path) -> list[KeptWorktree]:
    """Every worktree folder under <workdir>/worktrees, with the repository it belongs to."""
    root = Path(workdir) / "worktrees"
    out: list[KeptWorktree] = []
    if not root.is_dir():
        return out
    for group in sorted(p for p in root.iterdir() if p.is_dir()):
        for path in sorted(p for p in group.iterdir() if p.is_dir() and not p.is_symlink()):
            # the repository that records it (git never runs with what its `.git` says: a
            # build may have written it); one inside the workdir is no user's
            common = claimed_repository(path)
            if common is not None and Path(os.path.realpath(workdir)) in common.parents:
                common = None
            out.append(KeptWorktree(path, common))
    return out


def session_repos(session: Session) -> set[Path]:
    """The .git folders of the repositories a session's phases worked in (the bisected ones,
    and those their recipes build from, e.g. a Triton or LLVM checkout)."""
    paths: list[Path] = []
    for phase in session.phases():
        paths.append(Path(phase.spec.repo))
        paths.extend(_paths_in(phase.spec.recipe_config))
    commons = set()
    for path in paths:
        if path.is_dir() and (path / ".git").exists():
            common = git_common_dir(path)
            if common is not None:
                commons.add(common)
    return commons


def _paths_in(value: Any) -> Iterator[Path]:
    if isinstance(value, str) and value.startswith("/"):
        yield Path(value)
    elif isinstance(value, dict):
        for item in value.values():
            yield from _paths_in(item)
    elif isinstance(value, (list, tuple)):
        for item in value:
            yield from _paths_in(item)


def session_worktrees(session: Session, workdir: Path) -> list[KeptWorktree]:
    repos = session_repos(session)
    return [wt for wt in kept_worktrees(workdir) if wt.common_dir in repos]


@contextlib.contextmanager
def _slot_lock(path: Path) -> Iterator[bool]:
    """Hold the worker slot's lock (w<i>.lock beside w<i>) while removing; False when a
    running worker holds it."""
    path = path.parent / f"{path.name}.lock"
    if not path.exists():
        yield True
        return
    lock = FileLock(path, create=False)
    try:
        if not lock.acquire(wait=False):
            yield not path.exists()  # gone meanwhile: nobody holds it
            return
        yield True
        with contextlib.suppress(OSError):
            path.unlink()
    finally:
        lock.release()


def remove_worktrees(worktrees: Iterable[KeptWorktree], workdir: Path, report: CleanReport) -> None:
    """`git worktree remove --force` each (registered in its repository), its venvs too."""
    for wt in worktrees:
        with _slot_lock(wt.path) as free:
            if not free:
                report.kept.append(f"{wt.path} (a running worker uses it)")
                continue
            if wt.common_dir is not None and wt.common_dir.is_dir():
                git(["--git-dir", str(wt.common_dir), "worktree", "remove", "--force", "--force",
                     str(wt.path)], cwd=wt.common_dir, check=False)
            if wt.path.exists():
                shutil.rmtree(wt.path, ignore_errors=True)
            if wt.common_dir is not None and wt.common_dir.is_dir():
                git(["--git-dir", str(wt.common_dir), "worktree", "prune"], cwd=wt.common_dir, check=False)
            report.removed_worktrees.append(wt.path)
            for venv in _venvs_of(wt.path, workdir):
                shutil.rmtree(venv, ignore_errors=True)
                report.removed.append(venv)
        with contextlib.suppress(OSError):
            wt.path.parent.rmdir()  # the repository's folder, once empty


def _venvs_of(worktree: Path, workdir: Path) -> list[Path]:
    """The per-worker venvs named after a worktree (builds/venv_pool.py): <group>-w<i>[-…]."""
    venvs = Path(workdir) / "venvs"
    if not venvs.is_dir():
        return []
    stem = f"{worktree.parent.name}-{worktree.name}"
    return [p for p in venvs.iterdir() if p.name == stem or p.name.startswith(stem + "-")]


def prune(commons: Iterable[Path], report: CleanReport) -> None:
    """Forget registrations whose folder is gone (a workdir deleted by hand)."""
    for common in sorted(set(commons)):
        if common.is_dir():
            git(["--git-dir", str(common), "worktree", "prune"], cwd=common, check=False)
            report.pruned_repos.append(common)


def clean_session(session: Session, workdir: Path, *, keep_cache: bool) -> CleanReport:
    """See the module docstring. InputError when the session is running."""
    report = CleanReport()
    if session.lock.is_locked_elsewhere():
        raise InputError(f"session {session.id} is running; stop it first, then clean it")
    commits = {str(r.get("commit")) for r in session.records()
               if (r.get("build") or {}).get("performed") or (r.get("build") or {}).get("cached")}
    repos = session_repos(session)
    remove_worktrees(session_worktrees(session, workdir), workdir, report)
    prune(repos, report)
    if not keep_cache and commits:
        report.cache_entries = _forget_builds(workdir, commits)
    shutil.rmtree(session.dir, ignore_errors=True)
    report.removed.append(session.dir)
    return report


def clean_unreadable(workdir: Path, session_id: str, why: InputError) -> CleanReport:
    """Remove the folder of a session whose session.json cannot be read: only a folder named
    SESSION under <workdir>/sessions, not running; `why` is raised again otherwise."""
    from tritonbisect.session.journal import LOCK_FILE, SessionLock

    sessions = Path(workdir) / "sessions"
    if "/" in session_id or session_id in ("", ".", "..") or not sessions.is_dir():
        raise why
    matches = [p for p in sessions.iterdir() if p.name.startswith(session_id)]
    folder = matches[0] if len(matches) == 1 else sessions / session_id
    if folder.is_symlink() or not folder.is_dir():
        raise why
    if SessionLock(folder / LOCK_FILE, folder.name).is_locked_elsewhere():
        raise InputError(f"session {session_id} is running; stop it first, then clean it")
    report = CleanReport()
    shutil.rmtree(folder, ignore_errors=True)
    report.removed.append(folder)
    report.kept.append("its worktrees, if any: the session no longer says whose they are (`tritonbisect clean "
                       "--all` removes every one)")
    return report


def _forget_builds(workdir: Path, commits: set[str]) -> int:
    cache_root = Path(workdir) / "cache"
    if not cache_root.is_dir():
        return 0
    from tritonbisect.builds.cache import ArtifactCache

    cache = ArtifactCache(cache_root)
    n = 0
    for commit in sorted(commits):
        n += len(cache.remove_commit(commit))
        n += len(cache.forget_failures(commit))
    return n


def clean_all(workdir: Path, *, keep_cache: bool) -> CleanReport:
    """Everything tritonbisect made in the workdir but compat-builder's state (and the
    caches with keep_cache)."""
    from tritonbisect.session.journal import LOCK_FILE, SessionLock
    from tritonbisect.session.session import Session

    workdir = Path(workdir)
    report = CleanReport()
    sessions = workdir / "sessions"
    running = []
    repos: set[Path] = set()  # also those whose worktree folders are already gone
    if sessions.is_dir():
        for sdir in sorted(p for p in sessions.iterdir() if p.is_dir()):
            if SessionLock(sdir / LOCK_FILE, sdir.name).is_locked_elsewhere():
                running.append(sdir.name)
            with contextlib.suppress(InputError, OSError):
                repos |= session_repos(Session.open(workdir, sdir.name))
    if running:
        raise InputError(f"session(s) {', '.join(running)} are running; stop them first, then clean")
    worktrees = kept_worktrees(workdir)
    remove_worktrees(worktrees, workdir, report)
    prune(repos | {wt.common_dir for wt in worktrees if wt.common_dir is not None}, report)
    names = ["sessions", "venvs", *_SCRATCH, *(() if keep_cache else _CACHES)]
    for name in names:
        path = workdir / name
        if path.exists():
            shutil.rmtree(path, ignore_errors=True)
            report.removed.append(path)
    if not keep_cache:
        (workdir / "ccache-sandboxed.conf").unlink(missing_ok=True)
    wroot = workdir / "worktrees"
    if wroot.is_dir() and not any(p.is_dir() for p in wroot.glob("*/*")):
        shutil.rmtree(wroot, ignore_errors=True)  # only lock files are left
    if keep_cache:
        report.kept.append(f"the build caches ({', '.join(_CACHES)}): --keep-cache")
    if (workdir / "compat").exists():
        report.kept.append(f"{workdir / 'compat'} (compat-builder's state; remove it by hand)")
    return report


def describe(session: Session, workdir: Path) -> list[str]:
    """For `status`: the worktrees kept for the session's repositories, and how to remove them."""
    kept = session_worktrees(session, workdir)
    if not kept:
        return []
    lines = ["  worktrees kept for incremental builds (`git worktree list` in the repository shows them):"]
    for wt in kept:
        lines.append(f"    {wt.path}  (registered in {wt.repo})")
    return lines
