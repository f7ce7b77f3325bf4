"""Git facts for the search, read from git's machine-readable output only.

Ranges come from ``git rev-list --topo-order --reverse --parents``, ancestry from
``git merge-base --is-ancestor``, files from ``git diff-tree -z``, commit metadata from
``git log -1 --format`` with NUL separators. Nothing here parses git's English. A revision
may come from a file someone else wrote (a session's journal): it always follows
``--end-of-options``, so one spelled like an option (`--output=FILE`) is only a bad revision.

Plain `git` processes, not GitPython: every bisecting command opens a History at start,
and importing GitPython (with its own `git version` calls) cost about 50 ms of each start.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, overload

from tritonbisect.core.errors import InputError
from tritonbisect.core.gitrun import GitError, git, run_git
from tritonbisect.core.process import clean_env
from tritonbisect.search.classic import Candidates

_SHA = re.compile(r"^[0-9a-f]{40}([0-9a-f]{24})?$")


@dataclass(frozen=True)
class CommitInfo:
    sha: str
    subject: str
    author: str
    email: str
    date: str  # author date, strict ISO 8601


class History:
    """Read-only view of one repository's history."""

    def __init__(self, repo: Path) -> None:
        path = Path(repo).expanduser()
        if not path.is_dir():
            raise InputError(f"{path} is not a git repository")
        # the top level of a worktree, a bare repository's own folder, or (given a .git
        # folder) the checkout around it; from a subfolder git finds its repository above
        proc = run_git(["rev-parse", "--is-bare-repository", "--absolute-git-dir", "--show-toplevel"],
                       cwd=path, env=clean_env())
        lines = proc.stdout.splitlines()
        if len(lines) >= 3:
            root = Path(lines[2])
        elif len(lines) == 2:
            git_dir = Path(lines[1])
            root = git_dir.parent if lines[0] == "false" and git_dir.name == ".git" else git_dir
        else:
            raise InputError(f"{path} is not a git repository")
        self.root = root.resolve()

    @overload
    def _git(self, *args: str, text: Literal[True] = ...) -> str: ...

    @overload
    def _git(self, *args: str, text: Literal[False]) -> bytes: ...

    def _git(self, *args: str, text: bool = True) -> str | bytes:
        return git(args, cwd=self.root, text=text)

    def __repr__(self) -> str:
        return f"History({str(self.root)!r})"

    # ---- revisions --------------------------------------------------------------------------

    def resolve(self, rev: str) -> str:
        """Full sha of the commit `rev` names; InputError when there is none."""
        rev = str(rev).strip()
        if not rev or rev.startswith("-"):
            raise InputError(f"unknown revision '{rev}' in {self.root}")
        try:
            out = self._git("rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}")
        except GitError:
            raise InputError(f"unknown revision '{rev}' in {self.root}") from None
        sha = out.strip()
        if not _SHA.match(sha):
            raise InputError(f"unknown revision '{rev}' in {self.root}")
        return sha

    def is_ancestor(self, a: str, b: str) -> bool:
        """Whether commit a is an ancestor of (or equal to) commit b."""
        try:
            self._git("merge-base", "--is-ancestor", "--end-of-options", a, b)
        except GitError as exc:
            if exc.status == 1:
                return False
            raise InputError(f"cannot compare {a} and {b} in {self.root}") from None
        return True

    def candidates(self, good: str, bad: str, *, first_parent: bool = False) -> Candidates:
        """The commits of ``good..bad`` in topological order, oldest first, bad last."""
        g, b = self.resolve(good), self.resolve(bad)
        if g == b:
            raise InputError(f"good and bad are the same commit ({g[:12]}): nothing to bisect")
        if not self.is_ancestor(g, b):
            if self.is_ancestor(b, g):
                raise InputError(
                    f"good {_rev_named(good, g)} is newer than bad {_rev_named(bad, b)}: swap them, "
                    "or use --regress fixed to find the commit that fixed it"
                )
            raise InputError(
                f"good {_rev_named(good, g)} is not an ancestor of bad {_rev_named(bad, b)}; "
                "pick a good commit on bad's history (e.g. their merge-base), or use "
                "--regress fixed to find a fix"
            )
        args = ["--topo-order", "--reverse", "--parents"]
        if first_parent:
            args.append("--first-parent")
        out = self._git("rev-list", *args, "--end-of-options", b, f"^{g}")
        order: list[str] = []
        all_parents: list[list[str]] = []
        for line in out.splitlines():
            fields = line.split()
            if not fields:
                continue
            order.append(fields[0])
            all_parents.append(fields[1:2] if first_parent else fields[1:])
        if not order:
            raise InputError(f"empty range {good}..{bad} in {self.root}")
        inside = set(order)
        parents = {
            c: tuple(p for p in ps if p in inside) for c, ps in zip(order, all_parents, strict=True)
        }
        if order[-1] != b:  # cannot happen with --topo-order: bad is the only tip
            raise InputError(f"unexpected range {good}..{bad} in {self.root}")
        return Candidates(tuple(order), parents)

    # ---- commits ----------------------------------------------------------------------------

    def parents(self, sha: str) -> tuple[str, ...]:
        fields = self._git("rev-list", "--parents", "-n", "1", "--end-of-options", sha, "--").split()
        return tuple(fields[1:])

    def files_touched(self, sha: str) -> list[str]:
        """Paths changed by the commit, compared with its first parent (all files for a root)."""
        parents = self.parents(sha)
        if parents:
            out = self._git("diff-tree", "-r", "-z", "--name-only", "--no-renames", "--end-of-options", parents[0], sha)
        else:
            out = self._git("diff-tree", "-r", "-z", "--name-only", "--no-commit-id", "--root", "--end-of-options", sha)
        return [p for p in out.split("\0") if p]

    def commit_info(self, sha: str) -> CommitInfo:
        out = self._git(
            "log", "-1", "--no-show-signature", "--format=%H%x00%s%x00%an%x00%ae%x00%aI", "--end-of-options", sha, "--"
        )
        full, subject, author, email, date = out.strip("\n").split("\0")
        return CommitInfo(full, subject, author, email, date)

    def committed_at(self, sha: str) -> str:
        """The committer date (strict ISO 8601): when the commit entered the branch."""
        return self._git("log", "-1", "--no-show-signature", "--format=%cI", "--end-of-options", sha, "--").strip()

    def subjects(self, shas: list[str], *, known_only: bool = False) -> dict[str, str]:
        """{full sha: subject} for many commits with one git call (a report or a phase shows the
        subject of every step; one `git log` per step would cost a process each). `known_only`:
        leave out what is not a commit of this repository (one more call) instead of failing."""
        from tritonbisect.core.gitrun import git

        if known_only and shas:
            checked = git(["cat-file", "--batch-check=%(objectname) %(objecttype)"], cwd=self.root,
                              input="\n".join(shas) + "\n")
            shas = [line.split()[0] for line in checked.splitlines() if line.endswith(" commit")]
        if not shas:
            return {}
        # the shas go on stdin: an LLVM range can have more than a command line holds
        out = git(
            ["log", "--no-show-signature", "--format=%H%x00%s", "--no-walk=unsorted", "--stdin"],
            cwd=self.root,
            input="\n".join(shas) + "\n",
        )
        found: dict[str, str] = {}
        for line in out.splitlines():
            sha, _, subject = line.partition("\0")
            found[sha] = subject
        return found

    def file_at(self, sha: str, path: str) -> str | None:
        """The text of `path` at commit `sha`; None when absent (or not a file) there."""
        path = path.strip("/")
        out = self._git("ls-tree", "-z", "--full-tree", "--end-of-options", sha, "--", path)
        for entry in out.split("\0"):
            if not entry:
                continue
            meta, _, name = entry.partition("\t")
            mode, kind, obj = meta.split()
            if name == path and kind == "blob":
                data = self._git("cat-file", "blob", obj, text=False)
                return data.decode("utf-8", errors="replace")
        return None

    def repo_id(self) -> str:
        """Stable identity of the repository for cache keys (see `root_identity`)."""
        for spec in ("HEAD", "--all"):
            try:
                out = self._git("log", "--max-parents=0", "--format=%ct %H", spec)
            except GitError:
                continue
            if out.strip():
                return oldest_root(out)
        raise InputError(f"{self.root} has no commits")


def oldest_root(log_output: str) -> str:
    """The oldest root commit in `git log --max-parents=0 --format='%ct %H'` output.

    Not the smallest sha: a repository with several roots (llvm-project has many) shows a
    worktree at an old commit only some of them, and a cache key must not depend on where a
    worktree's HEAD is. The project's first commit is reachable from every later commit.
    """
    roots = [line.split() for line in log_output.splitlines() if line.strip()]
    return min((int(stamp), sha) for stamp, sha in roots)[1]


def root_identity(repo: Path, env: dict[str, str] | None = None) -> str | None:
    """`History(repo).repo_id()` without GitPython, for the build layer's hot path."""
    proc = run_git(["log", "--max-parents=0", "--format=%ct %H", "HEAD"], cwd=Path(repo), env=env,
                   timeout=120)
    return oldest_root(proc.stdout) if proc.returncode == 0 and proc.stdout.strip() else None


def _rev_named(rev: str, sha: str) -> str:
    """`main (1a2b3c4d5e6f)`, or only the short sha when the revision is one already."""
    return sha[:12] if sha.startswith(rev.lower()) else f"{rev} ({sha[:12]})"
