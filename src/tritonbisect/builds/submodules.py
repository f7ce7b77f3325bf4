"""A worktree's submodules at the commits it records, from local mirrors.

PyTorch's setup.py initialises the submodules only when all of them are empty and never
updates them: without this, every worktree clones them over the network once and later
steps build with the first commit's third_party. Here, at every step, each submodule of the
tree (recursively) is checked out at the commit the tree records, from a bare mirror under
`<workdir>/mirrors` that is cloned from the submodule's URL once and fetched again only when
it lacks a recorded commit. The checkouts share the mirror's objects (`git clone --shared`).

The user's repository is not touched: no `git submodule init` (which would write its
config); each submodule folder is a plain clone of its mirror, which PyTorch's own check
(folders not empty) accepts. Its git folder lies outside the worktree, under
`<mirrors>/checkouts/`, and every git command there uses it (core.gitrun.pin): a build may
rewrite the submodule's `.git`, never the git the tool runs.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from tritonbisect.core.gitrun import GitError, git, pin, run_git

MIRRORS = "mirrors"
_MIRROR_LOCK = threading.Lock()  # one clone/fetch of a mirror at a time in this process


class SubmoduleError(GitError):
    """A submodule could not be brought to its commit (INFRA: network, a missing commit)."""


@dataclass
class SubmoduleUpdate:
    updated: list[str] = field(default_factory=list)  # paths checked out at a new commit
    fetched: list[str] = field(default_factory=list)  # URLs that needed the network

    def describe(self) -> str:
        if not self.updated and not self.fetched:
            return ""
        parts = [f"submodules: {len(self.updated)} moved"]
        if self.fetched:
            parts.append(f"fetched {', '.join(self.fetched)}")
        return "; ".join(parts)


def _git(cwd: Path, *args: str, env: Mapping[str, str] | None = None) -> str:
    try:
        return git(args, cwd=Path(cwd), env=env, extra_env={"LC_ALL": "C"}, timeout=3600, where=True)
    except GitError as exc:
        raise SubmoduleError(exc.message, status=exc.status) from None


def _has(repo: Path, sha: str, env: Mapping[str, str] | None) -> bool:
    return run_git(["cat-file", "-e", f"{sha}^{{commit}}"], cwd=Path(repo), env=env,
                   extra_env={"LC_ALL": "C"}).returncode == 0


def declared(tree: Path, env: Mapping[str, str] | None = None) -> list[tuple[str, str, str]]:
    """(path, url, recorded commit) of each submodule of the checked-out tree."""
    if not (tree / ".gitmodules").is_file():
        return []
    out = _git(tree, "config", "-f", ".gitmodules", "--get-regexp", r"^submodule\..*\.(path|url)$", env=env)
    by_name: dict[str, dict[str, str]] = {}
    for line in out.splitlines():
        key, _, value = line.partition(" ")
        name, _, attr = key[len("submodule."):].rpartition(".")
        by_name.setdefault(name, {})[attr] = value
    subs = []
    for entry in by_name.values():
        path, url = entry.get("path"), entry.get("url")
        if not path or not url:
            continue
        listing = _git(tree, "ls-tree", "HEAD", "--", path, env=env).split()
        if len(listing) >= 3 and listing[0] == "160000":
            subs.append((path, url, listing[2]))
    return subs


def _resolve_url(url: str, parent_url: str | None) -> str:
    if url.startswith(("./", "../")) and parent_url:
        base = parent_url.rstrip("/")
        for part in url.split("/"):
            if part == "..":
                base = base.rsplit("/", 1)[0]
            elif part not in (".", ""):
                base = f"{base}/{part}"
        return base
    return url


def mirror_for(mirrors: Path, url: str, sha: str, update: SubmoduleUpdate,
               env: Mapping[str, str] | None = None) -> Path:
    """The bare mirror of `url` holding `sha` (cloned or fetched only when it lacks it)."""
    name = url.rstrip("/").rsplit("/", 1)[-1].removesuffix(".git") or "repo"
    path = Path(mirrors) / f"{name}-{hashlib.sha256(url.encode()).hexdigest()[:12]}.git"
    with _MIRROR_LOCK:
        if not path.exists():
            path.parent.mkdir(parents=True, exist_ok=True)
            _git(path.parent, "-c", "protocol.file.allow=always", "clone", "--quiet", "--mirror", url,
                 str(path), env=env)
            update.fetched.append(url)
        elif not _has(path, sha, env):
            _git(path, "-c", "protocol.file.allow=always", "fetch", "--quiet", "--prune", "origin", env=env)
            update.fetched.append(url)
    if not _has(path, sha, env):
        raise SubmoduleError(f"{url} has no commit {sha[:12]}: the superproject records a commit "
                             "its submodule's repository does not have")
    return path


def update_submodules(tree: Path, mirrors: Path, *, env: Mapping[str, str] | None = None,
                      url: str | None = None, depth: int = 0,
                      update: SubmoduleUpdate | None = None) -> SubmoduleUpdate:
    """Check every submodule of `tree` out at its recorded commit (recursively)."""
    update = update if update is not None else SubmoduleUpdate()
    if depth > 8:
        return update
    for path, sub_url, sha in declared(Path(tree), env):
        real_url = _resolve_url(sub_url, url)
        mirror = mirror_for(mirrors, real_url, sha, update, env)
        target = Path(tree) / path
        if target.is_symlink():  # a gitlink's folder, replaced by a link (by a build)
            target.unlink()
        if not Path(os.path.realpath(target)).is_relative_to(os.path.realpath(tree)):
            raise SubmoduleError(f"{target} leads out of {tree} through a link: remove that link")
        git_dir = _checkout_git_dir(mirrors, target)
        if not (git_dir / "HEAD").is_file():
            if (target / ".git").exists() or (target / ".git").is_symlink():
                shutil.rmtree(target)  # a clone made before its git folder moved out of the tree
            elif target.exists() and any(target.iterdir()):
                raise SubmoduleError(f"{target} is not empty and not a checkout: remove it")
            target.mkdir(parents=True, exist_ok=True)
            shutil.rmtree(git_dir, ignore_errors=True)
            git_dir.parent.mkdir(parents=True, exist_ok=True)
            _git(git_dir.parent, "clone", "--quiet", "--shared", "--no-checkout",
                 f"--separate-git-dir={git_dir}", str(mirror), str(target), env=env)
        pin(target, git_dir)
        if not _has(target, sha, env):
            _git(target, "fetch", "--quiet", "origin", env=env)
        current = _git(target, "rev-parse", "HEAD", env=env).strip() if _head_exists(target, env) else ""
        if current != sha:
            _git(target, "checkout", "--quiet", "--detach", "--force", sha, env=env)
            update.updated.append(path)
        _git(target, "clean", "-fdq", env=env)
        update_submodules(target, mirrors, env=env, url=real_url, depth=depth + 1, update=update)
    return update


def _head_exists(repo: Path, env: Mapping[str, str] | None) -> bool:
    return run_git(["rev-parse", "--verify", "-q", "HEAD"], cwd=Path(repo), env=env,
                   extra_env={"LC_ALL": "C"}).returncode == 0


def _checkout_git_dir(mirrors: Path, target: Path) -> Path:
    """Where the git folder of the submodule checkout at `target` is kept (outside the tree)."""
    digest = hashlib.sha256(os.path.realpath(target).encode()).hexdigest()[:24]
    return Path(mirrors) / "checkouts" / f"{digest}.git"


__all__ = ["MIRRORS", "SubmoduleError", "SubmoduleUpdate", "declared", "mirror_for", "update_submodules"]
