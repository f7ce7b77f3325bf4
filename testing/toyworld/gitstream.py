"""Write a linear git history fast and deterministically with `git fast-import`.

A history is a list of full trees (path -> text). Each commit stores only what changed from
the previous tree. Authors and dates are fixed by the caller, and no user or system git
configuration is read, so the same trees always give the same commit shas.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

Tree = Mapping[str, str]


@dataclass(frozen=True)
class CommitSpec:
    tree: Tree  # the full tree of the commit
    subject: str
    body: str = ""
    author: tuple[str, str] = ("Toy Developer", "dev@toy.example")
    timestamp: int = 1735689600  # seconds since the epoch, UTC
    links: Mapping[str, str] = field(default_factory=dict)  # submodule path -> commit (gitlinks)


def git_env() -> dict[str, str]:
    """An environment in which git ignores the user's and the system's configuration."""
    env = dict(os.environ)
    for key in list(env):
        if key.startswith("GIT_"):
            del env[key]
    env.update(
        GIT_CONFIG_GLOBAL=os.devnull,
        GIT_CONFIG_NOSYSTEM="1",
        GIT_TERMINAL_PROMPT="0",
        LC_ALL="C",
    )
    return env


def _git(repo: Path, *args: str, input: bytes | None = None) -> str:
    proc = subprocess.run(
        ["git", *args],
        cwd=repo,
        input=input,
        env=git_env(),
        capture_output=True,
        check=False,
    )
    if proc.returncode != 0:
        raise RuntimeError(
            f"git {' '.join(args[:2])} failed in {repo}: {proc.stderr.decode(errors='replace')}"
        )
    return proc.stdout.decode()


def _data(payload: bytes) -> bytes:
    return b"data %d\n" % len(payload) + payload + b"\n"


def write_history(repo: Path, commits: Sequence[CommitSpec], *, branch: str = "main") -> list[str]:
    """Create a new repository at `repo` holding `commits` (oldest first) on `branch`.

    Returns the commit shas, oldest first. The work tree is checked out at the last commit,
    and the repository gets a local identity so that tools can commit in it.
    """
    repo.mkdir(parents=True, exist_ok=True)
    _git(repo, "init", "-q")
    _git(repo, "symbolic-ref", "HEAD", f"refs/heads/{branch}")
    for key, value in (
        ("user.name", "Toy World"),
        ("user.email", "toy@toy.example"),
        ("commit.gpgsign", "false"),
        ("core.autocrlf", "false"),
    ):
        _git(repo, "config", key, value)

    chunks: list[bytes] = []
    previous: Mapping[str, str] = {}
    previous_links: Mapping[str, str] = {}
    for index, spec in enumerate(commits, start=1):
        name, email = spec.author
        ident = f"{name} <{email}> {spec.timestamp} +0000".encode()
        message = spec.subject + ("\n\n" + spec.body.strip() + "\n" if spec.body.strip() else "\n")
        chunks.append(f"commit refs/heads/{branch}\nmark :{index}\n".encode())
        chunks.append(b"author " + ident + b"\ncommitter " + ident + b"\n")
        chunks.append(_data(message.encode()))
        for path in sorted(previous):
            if path not in spec.tree:
                chunks.append(f"D {path}\n".encode())
        for path in sorted(spec.tree):
            text = spec.tree[path]
            if previous.get(path) != text:
                chunks.append(f"M 100644 inline {path}\n".encode())
                chunks.append(_data(text.encode()))
        for path in sorted(previous_links):
            if path not in spec.links:
                chunks.append(f"D {path}\n".encode())
        for path, sha in sorted(spec.links.items()):
            if previous_links.get(path) != sha:
                chunks.append(f"M 160000 {sha} {path}\n".encode())
        chunks.append(b"\n")
        previous = spec.tree
        previous_links = spec.links

    marks = repo / ".git" / "toyworld-marks"
    _git(repo, "fast-import", "--quiet", f"--export-marks={marks}", input=b"".join(chunks))
    by_mark: dict[int, str] = {}
    for line in marks.read_text().splitlines():
        mark, sha = line.split()
        by_mark[int(mark.lstrip(":"))] = sha
    marks.unlink()
    _git(repo, "reset", "-q", "--hard", branch)
    return [by_mark[i] for i in range(1, len(commits) + 1)]


def add_commit(repo: Path, ref: str, parent: str, spec: CommitSpec) -> str:
    """Write one commit with the full tree `spec.tree` on top of `parent` under `ref` (a
    branch, or refs/remotes/<remote>/<branch> as a fetch leaves it); its sha."""
    name, email = spec.author
    ident = f"{name} <{email}> {spec.timestamp} +0000".encode()
    message = spec.subject + ("\n\n" + spec.body.strip() + "\n" if spec.body.strip() else "\n")
    chunks = [f"commit {ref}\nmark :1\n".encode(), b"author " + ident + b"\ncommitter " + ident + b"\n",
              _data(message.encode()), f"from {parent}\n".encode(), b"deleteall\n"]
    for path in sorted(spec.tree):
        chunks.append(f"M 100644 inline {path}\n".encode())
        chunks.append(_data(spec.tree[path].encode()))
    chunks.append(b"\n")
    marks = repo / ".git" / "toyworld-marks"
    _git(repo, "fast-import", "--quiet", "--force", f"--export-marks={marks}", input=b"".join(chunks))
    sha = marks.read_text().split()[1]
    marks.unlink()
    return sha
