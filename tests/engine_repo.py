"""Helpers of the engine tests: real git histories made with `git fast-import`, and a way to
run the real `tritonbisect` command in a subprocess."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

GIT_ENV = {
    "GIT_AUTHOR_NAME": "Test Dev",
    "GIT_AUTHOR_EMAIL": "dev@example.com",
    "GIT_COMMITTER_NAME": "Test Dev",
    "GIT_COMMITTER_EMAIL": "dev@example.com",
    "GIT_CONFIG_NOSYSTEM": "1",
}

# The build copies the state into an ignored build dir; BROKEN commits do not build.
BUILD = "if [ -e BROKEN ]; then echo 'error: does not build' >&2; exit 1; fi; mkdir -p out; cp state out/state"
# The test fails on the regressed state.
TEST = "grep -q ok out/state"
# The test crashes with SIGSEGV on the regressed state.
CRASH_TEST = "if grep -q bad out/state; then echo 'Segmentation fault' >&2; kill -SEGV $$; fi"


def git(repo: Path, *args: str, input: bytes | None = None, check: bool = True) -> str:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update(GIT_ENV)
    proc = subprocess.run(["git", *args], cwd=repo, env=env, input=input, capture_output=True, check=False)
    if check and proc.returncode != 0:
        raise RuntimeError(f"git {args}: {proc.stderr.decode()}")
    return proc.stdout.decode()


@dataclass
class C:
    """A commit to create: `parents` are names of earlier commits (none: the root)."""

    name: str
    parents: Sequence[str] = ()
    bad: bool = False
    broken: bool = False
    files: dict[str, str] = field(default_factory=dict)


def make_history(repo: Path, commits: Sequence[C], *, head: str | None = None) -> dict[str, str]:
    """Create `commits` (in order) in a new repository; return name -> sha. `main` is `head`
    (default: the last commit) and is checked out."""
    repo.mkdir(parents=True, exist_ok=True)
    git(repo, "init", "-q")
    git(repo, "symbolic-ref", "HEAD", "refs/heads/main")
    marks = {c.name: i + 1 for i, c in enumerate(commits)}
    out = []
    for i, c in enumerate(commits):
        when = f"{1_700_000_000 + i * 60} +0000"
        msg = f"{c.name}: change {i}".encode()
        lines = [
            b"commit refs/heads/main\n",
            b"mark :%d\n" % marks[c.name],
            f"author Test Dev <dev@example.com> {when}\n".encode(),
            f"committer Test Dev <dev@example.com> {when}\n".encode(),
            b"data %d\n%s\n" % (len(msg), msg),
        ]
        if c.parents:
            lines.append(b"from :%d\n" % marks[c.parents[0]])
            for p in c.parents[1:]:
                lines.append(b"merge :%d\n" % marks[p])
        else:
            lines.append(b"deleteall\n")
        files = {
            "state": "bad\n" if c.bad else "ok\n",
            f"log/{c.name}": f"{c.name}\n",
            ".gitignore": "out/\n",
            **c.files,
        }
        for name, text in files.items():
            data = text.encode()
            lines.append(f"M 100755 inline {name}\n".encode() + b"data %d\n%s\n" % (len(data), data))
        if c.broken:
            lines.append(b"M 100644 inline BROKEN\ndata 2\nx\n\n")
        else:
            lines.append(b"D BROKEN\n")
        out.append(b"".join(lines) + b"\n")
    head_mark = marks[head or commits[-1].name]
    out.append(b"reset refs/heads/main\nfrom :%d\n\n" % head_mark)
    marks_file = repo / ".git" / "test-marks"
    git(repo, "fast-import", "--quiet", f"--export-marks={marks_file}", input=b"".join(out))
    git(repo, "reset", "-q", "--hard", "main")
    by_mark = {}
    for line in marks_file.read_text().splitlines():
        mark, sha = line.split()
        by_mark[int(mark[1:])] = sha
    marks_file.unlink()
    return {name: by_mark[m] for name, m in marks.items()}


def linear(repo: Path, n: int, culprit: int, *, broken: Sequence[int] = (), files: dict | None = None) -> list[str]:
    """Commits 0..n-1 (0 good, n-1 bad); the regression is commit `culprit`."""
    commits = [
        C(f"c{i}", (f"c{i - 1}",) if i else (), bad=i >= culprit, broken=i in broken, files=dict(files or {}))
        for i in range(n)
    ]
    shas = make_history(repo, commits)
    return [shas[f"c{i}"] for i in range(n)]


def snapshot(repo: Path) -> tuple[str, str, str]:
    """What must not change in the user's checkout: status, refs, HEAD."""
    return (
        git(repo, "status", "--porcelain", "--ignored"),
        git(repo, "for-each-ref", "--format=%(refname) %(objectname)"),
        git(repo, "rev-parse", "HEAD") + git(repo, "symbolic-ref", "-q", "HEAD", check=False),
    )


def env_for(home: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update(GIT_ENV)
    env["TRITONBISECT_HOME"] = str(home)
    env.update(extra)
    return env


def tb(
    *args: str, cwd: Path, home: Path, timeout: float = 60, env: dict | None = None
) -> subprocess.CompletedProcess[str]:
    """Run the real `tritonbisect` command."""
    return subprocess.run(
        [sys.executable, "-m", "tritonbisect.cli", *args],
        cwd=cwd,
        env=env or env_for(home),
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def popen_tb(*args: str, cwd: Path, home: Path, env: dict | None = None) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "tritonbisect.cli", *args],
        cwd=cwd,
        env=env or env_for(home),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def last_json(stdout: str) -> dict:
    return json.loads(stdout.strip().splitlines()[-1])


def journal(home: Path, session: str) -> list[dict]:
    path = home / "sessions" / session / "journal.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
