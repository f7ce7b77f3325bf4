"""The bisected repository on Ray nodes that share no filesystem with the driver.

Node side (`NodeRepo`): each node keeps its own clone of the repository under its node folder
(`node_root()`), one per repository identity, for as long as the cluster's node lives, so a
resumed or later session finds its commits and its worktrees there. A commit a step needs
comes from the driver's own repository when the node sees it at the same path (the driver's
machine, or a shared filesystem), else from `--repo-url` when one is given (fetched on the
node), else from the driver: a
`git bundle` of what the node lacks, put once in Ray's object store (`ray.put`) and fetched by
one worker of that node; the other workers of the node then find the commit present.

Driver side (`bundle_for`): the bundle of `commits` less what the node already has (`tips`),
made in a throwaway repository that borrows the driver's objects (git bundles need refs, and
the user's repository is not ours to add refs to).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

from tritonbisect.core.gitrun import GitError, git
from tritonbisect.core.lock import locked

NODE_DIR_ENV = "TRITONBISECT_NODE_DIR"
_SHIPPED = "refs/tritonbisect/shipped/"
_FROM_URL = "refs/tritonbisect/url/"


def node_root() -> Path:
    """This node's folder for repositories, worktrees, build folders and its local cache:
    $TRITONBISECT_NODE_DIR, else `tritonbisect` beside the Ray session folder of the node
    (node-local, and as long-lived as the node's Ray)."""
    given = os.environ.get(NODE_DIR_ENV)
    if given:
        return Path(given)
    with contextlib.suppress(Exception):
        import ray

        node = ray._private.worker.global_worker.node
        if node is not None:  # None: Ray is not initialised in this process
            return Path(node.get_session_dir_path()).resolve().parent / "tritonbisect"
    return Path(tempfile.gettempdir()) / "tritonbisect-node"


class NodeRepo:
    """This node's clone of one repository (safe to share between the workers of a node)."""

    def __init__(self, root: Path, repo_id: str, url: str | None = None,
                 local: str | None = None) -> None:
        self.path = root / "repos" / repo_id
        self.url = url
        self.local = local  # the driver's repository, used where this node sees it
        self._lock_path = root / "repos" / f"{repo_id}.lock"
        self.path.mkdir(parents=True, exist_ok=True)
        if not (self.path / ".git").exists():
            with self.locked():
                if not (self.path / ".git").exists():
                    git(["init", "-q", str(self.path)], cwd=self.path.parent)

    def locked(self) -> contextlib.AbstractContextManager[None]:
        """The node-wide lock of this clone (git commands that change it take it)."""
        return locked(self._lock_path)

    def has(self, commit: str) -> bool:
        try:
            git(["cat-file", "-e", f"{commit}^{{commit}}"], cwd=self.path)
        except GitError:
            return False
        return True

    def tips(self) -> list[str]:
        out = git(["for-each-ref", "--format=%(objectname)", _SHIPPED, _FROM_URL], cwd=self.path)
        return sorted(set(out.split()))

    def lacks(self, commit: str) -> list[str] | None:
        """None when the node has `commit` (fetching it from the URL first, when there is
        one); else the commits the node has, for the driver to bundle what it lacks."""
        with self.locked():
            for source in self._sources():
                if self.has(commit):
                    break
                self._fetch_from(source, commit)
            if self.has(commit):
                self._pin_head(commit)
                return None
            return self.tips()

    def _sources(self) -> list[str]:
        found = []
        if self.local and (Path(self.local, ".git").exists() or Path(self.local, "objects").is_dir()):
            found.append(str(self.local))
        if self.url:
            found.append(self.url)
        return found

    def _fetch_from(self, source: str, commit: str) -> None:
        refspecs = [f"+refs/heads/*:{_FROM_URL}heads/*", f"+refs/tags/*:{_FROM_URL}tags/*"]
        with contextlib.suppress(GitError):
            git(["fetch", "-q", "--no-tags", source, *refspecs], cwd=self.path)
        if not self.has(commit):  # a commit no branch names: servers that allow it serve it
            with contextlib.suppress(GitError):
                git(["fetch", "-q", "--no-tags", source,
                     f"+{commit}:{_FROM_URL}commits/{commit}"], cwd=self.path)

    def receive(self, data: bytes) -> None:
        """Fetch a bundle made by `bundle_for` (every ref it carries is kept as a tip)."""
        with self.locked(), tempfile.NamedTemporaryFile(
                dir=self.path.parent, suffix=".bundle", delete=False) as f:
            f.write(data)
            f.close()
            try:
                git(["fetch", "-q", "--no-tags", f.name, f"+{_SHIPPED}*:{_SHIPPED}*"], cwd=self.path)
            finally:
                os.unlink(f.name)
            tips = self.tips()
            if tips:
                self._pin_head(tips[0])

    def _pin_head(self, commit: str) -> None:
        """Give the clone a HEAD (worktrees are added from it) once it has a commit (called
        with the lock held)."""
        try:
            git(["rev-parse", "-q", "--verify", "HEAD^{commit}"], cwd=self.path)
        except GitError:
            git(["update-ref", "--no-deref", "HEAD", commit], cwd=self.path)


def bundle_for(repo: Path, commits: Sequence[str], tips: Sequence[str]) -> tuple[bytes, float]:
    """(the bundle of `commits` and their history less what `tips` reach, seconds taken).
    Tips the driver's repository does not know (fetched by a node from a URL) are ignored."""
    t0 = time.monotonic()
    common = Path(git(["rev-parse", "--path-format=absolute", "--git-common-dir"], cwd=repo).strip())
    tmp = Path(tempfile.mkdtemp(prefix="tb-bundle-"))
    try:
        git(["init", "-q", "--bare", str(tmp / "r.git")], cwd=tmp)
        alternates = tmp / "r.git" / "objects" / "info" / "alternates"
        alternates.write_text(str(common / "objects") + "\n")
        shadow = tmp / "r.git"
        for commit in commits:
            git(["update-ref", f"{_SHIPPED}{commit}", commit], cwd=shadow)
        known = [t for t in tips if _has(shadow, t)]
        git(["bundle", "create", "-q", str(tmp / "b.bundle"),
             *[f"{_SHIPPED}{c}" for c in commits], *[f"^{t}" for t in known]], cwd=shadow)
        return (tmp / "b.bundle").read_bytes(), time.monotonic() - t0
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _has(repo: Path, commit: str) -> bool:
    try:
        git(["cat-file", "-e", f"{commit}^{{commit}}"], cwd=repo)
    except GitError:
        return False
    return True
