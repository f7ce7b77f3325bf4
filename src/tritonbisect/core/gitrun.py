"""Every git process the tool starts, from one place.

A build or a test may write anything in the checkout it runs in, its `.git` included: a
`.git` file rewritten to name a repository the build made (with hooks, an fsmonitor command
or objects borrowed through `alternates`), or a folder the user keeps secrets in. So git runs:

* with hooks off (`core.hooksPath=/dev/null`), no fsmonitor command, and no bare repository
  found by walking up from a folder (`safe.bareRepository=explicit`; one the tool runs in is
  named with `--git-dir`), whatever any config says (options on the command line win over
  every config file);
* without the variables that point git elsewhere (`GIT_DIR`, `GIT_WORK_TREE`...: set while
  `git bisect run` or a hook runs us), and never asking on a terminal;
* in a checkout the tool made (a worker's worktree, a helper worktree, a submodule clone),
  with `--git-dir`/`--work-tree` naming the git folder the tool recorded for it when it made
  it or read from the repository's own records (`pin`, `pin_worktree`): the checkout's `.git`
  is never read, and it is rewritten to name that folder before git runs there.

The user's own checkout is trusted as it is when the tool starts: `pin_checkout` records its
git folder before anything untrusted runs in it.
"""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, overload

from tritonbisect.core.errors import TritonBisectError

# Options that win over every config file a repository may carry.
SAFE_OPTIONS = (
    "-c", "core.hooksPath=/dev/null",
    "-c", "core.fsmonitor=false",
    "-c", "safe.bareRepository=explicit",
)

# Variables that would point git at another repository than the one meant (set e.g. while
# `git bisect run` or a git hook runs us).
LOCATION_VARS = (
    "GIT_DIR",
    "GIT_WORK_TREE",
    "GIT_INDEX_FILE",
    "GIT_OBJECT_DIRECTORY",
    "GIT_ALTERNATE_OBJECT_DIRECTORIES",
    "GIT_COMMON_DIR",
    "GIT_PREFIX",
    "GIT_CEILING_DIRECTORIES",
    "GIT_DISCOVERY_ACROSS_FILESYSTEM",
    "GIT_NAMESPACE",
    "GIT_CONFIG",
    "GIT_CONFIG_PARAMETERS",
    "GIT_CONFIG_COUNT",
)


def without_location(env: Mapping[str, str]) -> dict[str, str]:
    """A copy of `env` without the variables that redirect git."""
    out = dict(env)
    for name in LOCATION_VARS:
        out.pop(name, None)
    for name in [k for k in out if k.startswith(("GIT_CONFIG_KEY_", "GIT_CONFIG_VALUE_"))]:
        out.pop(name)
    return out


@dataclass(frozen=True)
class Pinned:
    """A checkout and the git folder the tool knows to be its own."""

    tree: Path
    git_dir: Path  # the checkout's own git folder (a linked worktree's admin folder)
    common_dir: Path  # the repository's (objects, refs, config)
    made: bool = True  # a checkout the tool made: its `.git` is the tool's to rewrite


_PINNED: dict[Path, Pinned] = {}
_LOCK = threading.Lock()


def _key(path: Path) -> Path:
    """A checkout's folder as git records it (links in the folders above resolved)."""
    return Path(os.path.realpath(path))


def pinned(path: Path) -> Pinned | None:
    """The pinned checkout `path` lies in (itself or a folder inside it), if any."""
    with _LOCK:
        for form in (Path(os.path.abspath(path)), _key(path)):
            for candidate in (form, *form.parents):
                found = _PINNED.get(candidate)
                if found is not None:
                    return found
    return None


def all_pinned() -> list[Pinned]:
    with _LOCK:
        return list(_PINNED.values())


def pin(tree: Path, git_dir: Path, *, write_dotgit: bool = True) -> Pinned:
    """Record `git_dir` as the git folder of `tree`; every later git command there uses it.
    With `write_dotgit` (a checkout the tool made), `tree/.git` is (re)written to name it now
    and before every git command there, so that git run by a build inside the checkout finds
    the right repository."""
    tree = _key(tree)
    git_dir = Path(os.path.realpath(git_dir))
    common = _common_of(git_dir)
    found = Pinned(tree, git_dir, common, made=write_dotgit)
    if write_dotgit:
        restore_dotgit(found)
    with _LOCK:
        _PINNED[tree] = found
    return found


def unpin(tree: Path) -> None:
    with _LOCK:
        _PINNED.pop(_key(tree), None)


def _common_of(git_dir: Path) -> Path:
    """The common folder of a git folder, from the files git itself keeps there (a linked
    worktree's admin folder names it in `commondir`)."""
    try:
        text = (git_dir / "commondir").read_text(encoding="utf-8").strip()
    except OSError:
        return git_dir
    return Path(os.path.realpath(git_dir / text)) if text else git_dir


def restore_dotgit(p: Pinned) -> None:
    """Make `tree/.git` the file that names the pinned git folder, whatever stands there now
    (nothing when the pinned folder is `tree/.git` itself)."""
    dotgit = p.tree / ".git"
    if p.git_dir == dotgit:
        return
    want = f"gitdir: {p.git_dir}\n".encode()
    try:
        st = os.lstat(dotgit)
    except FileNotFoundError:
        st = None
    if st is not None and stat.S_ISREG(st.st_mode) and st.st_size == len(want):
        fd = os.open(dotgit, os.O_RDONLY | os.O_NOFOLLOW)
        try:
            if os.read(fd, len(want) + 1) == want:
                return
        finally:
            os.close(fd)
    if st is not None:
        if stat.S_ISDIR(st.st_mode):
            shutil.rmtree(dotgit)
        else:
            os.unlink(dotgit)
    fd = os.open(dotgit, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644)
    try:
        os.write(fd, want)
    finally:
        os.close(fd)


def worktree_admin_dir(common_dir: Path, tree: Path) -> Path | None:
    """The admin folder (`<common>/worktrees/<name>`) of the linked worktree at `tree`, found
    in the repository's own records (each admin folder's `gitdir` file names its checkout's
    `.git`), never in the checkout."""
    admin_root = Path(common_dir) / "worktrees"
    want = _key(tree) / ".git"  # never resolved through the `.git` itself
    try:
        entries = sorted(admin_root.iterdir())
    except OSError:
        return None
    for entry in entries:
        try:
            named = (entry / "gitdir").read_text(encoding="utf-8").strip()
        except OSError:
            continue
        if named and _key(Path(named).parent) / ".git" == want:
            return entry
    return None


def claimed_repository(tree: Path) -> Path | None:
    """The common folder of the repository whose linked worktree `tree` says it is, when that
    repository's own record names `tree` back; None otherwise. For deciding what a folder is
    (whose worktree to leave alone, where to unregister it): read, never run git with it."""
    dotgit = Path(tree) / ".git"
    if dotgit.is_symlink() or not dotgit.is_file():
        return None
    try:
        text = dotgit.read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError):
        return None
    if not text.startswith("gitdir:"):
        return None
    admin = Path(text.split(":", 1)[1].strip())
    if not admin.is_absolute() or admin.parent.name != "worktrees":
        return None
    common = admin.parent.parent
    if not ((common / "HEAD").is_file() and (common / "objects").is_dir()):
        return None
    found = worktree_admin_dir(common, tree)
    return Path(os.path.realpath(common)) if found is not None and _key(found) == _key(admin) else None


def pin_worktree(common_dir: Path, tree: Path) -> Pinned | None:
    """Pin the linked worktree `tree` of the repository whose common folder is `common_dir`;
    None when that repository has no worktree there."""
    admin = worktree_admin_dir(common_dir, tree)
    return pin(tree, admin) if admin is not None else None


def pin_checkout(tree: Path) -> Pinned | None:
    """Pin the user's own checkout at `tree` as git finds it now (before anything untrusted
    ran in it); None when it is not a git checkout."""
    proc = run_git(["rev-parse", "--path-format=absolute", "--absolute-git-dir", "--show-toplevel"], cwd=tree)
    lines = proc.stdout.splitlines()
    if proc.returncode != 0 or len(lines) < 2:
        return None
    return pin(Path(lines[1]), Path(lines[0]), write_dotgit=False)


def _subcommand(args: Sequence[str]) -> str:
    words = [str(a) for a in args]
    i = 0
    while i < len(words) and words[i].startswith("-"):
        i += 2 if words[i] in ("-c", "-C") else 1
    return words[i] if i < len(words) else ""


def git_argv(args: Sequence[str], *, cwd: Path | None = None) -> list[str]:
    """The command line of `git args` run in `cwd`."""
    argv = ["git", *SAFE_OPTIONS]
    if cwd is None or _subcommand(args) in ("clone", "init"):
        return [*argv, *(str(a) for a in args)]
    found = pinned(cwd)
    if found is not None:
        argv += [f"--git-dir={found.git_dir}", f"--work-tree={found.tree}"]
    elif _is_bare(Path(cwd)):
        # a bare repository the tool chose to run in (a mirror, a bundle's shadow): named
        # explicitly, as safe.bareRepository asks
        argv.append(f"--git-dir={cwd}")
    return [*argv, *(str(a) for a in args)]


def _is_bare(folder: Path) -> bool:
    return (folder / "HEAD").is_file() and (folder / "objects").is_dir() and not (folder / ".git").exists()


# what git has no use for and a hook or a helper it runs could print (a Ray worker's cluster token)
_SECRET_VARS = ("RAY_AUTH_TOKEN",)


def git_env(base: Mapping[str, str] | None = None, extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment of a git process: `base` (default: ours) without the variables that
    redirect git (nor a secret git has no use for), never prompting on a terminal, plus `extra`."""
    env = without_location(os.environ if base is None else base)
    for name in _SECRET_VARS:
        env.pop(name, None)
    env["GIT_TERMINAL_PROMPT"] = "0"
    env.update(extra or {})
    return env


def run_git(
    args: Sequence[str],
    *,
    cwd: Path,
    env: Mapping[str, str] | None = None,
    extra_env: Mapping[str, str] | None = None,
    input: str | bytes | None = None,
    text: bool = True,
    timeout: float | None = None,
    errors: str | None = None,
) -> subprocess.CompletedProcess:
    """Run git (see the module docstring) and return the finished process, whatever its
    exit status. `env`: the environment to start from (default: ours)."""
    argv = git_argv(args, cwd=cwd)
    if not Path(cwd).is_dir():  # as `git -C <missing>` would answer
        why = f"fatal: cannot change to '{cwd}': No such file or directory\n"
        return subprocess.CompletedProcess(argv, 128, "" if text else b"", why if text else why.encode())
    found = pinned(cwd)
    if found is not None and found.made:
        restore_dotgit(found)
    return subprocess.run(
        argv, cwd=str(cwd), env=git_env(env, extra_env), input=input,
        capture_output=True, text=text, errors=errors if text else None, timeout=timeout, check=False,
    )


class GitError(TritonBisectError):
    """A git command the tool ran failed, or git could not do what the tool asked: one line
    (the command and the last line git said), exit 2 where it reaches the command line.
    `status` is git's exit code when git ran."""

    def __init__(self, message: str, *, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


def _said(out: str | bytes) -> str:
    text = out.decode("utf-8", "replace") if isinstance(out, bytes) else out
    lines = text.strip().splitlines()
    return lines[-1] if lines else ""


def failed(proc: subprocess.CompletedProcess, args: Sequence[str], cwd: Path | None = None) -> GitError:
    """The GitError of a finished git process that exited non-zero."""
    where = f" in {cwd}" if cwd is not None else ""
    said = _said(proc.stderr) or _said(proc.stdout) or f"exit {proc.returncode}"
    return GitError(f"git {' '.join(str(a) for a in args[:3])} failed{where}: {said}", status=proc.returncode)


@overload
def git(args: Sequence[str], *, cwd: Path, check: bool = ..., input: str | None = ...,
        env: Mapping[str, str] | None = ..., extra_env: Mapping[str, str] | None = ...,
        timeout: float | None = ..., text: Literal[True] = ..., where: bool = ...) -> str: ...


@overload
def git(args: Sequence[str], *, cwd: Path, check: bool = ..., input: bytes | None = ...,
        env: Mapping[str, str] | None = ..., extra_env: Mapping[str, str] | None = ...,
        timeout: float | None = ..., text: Literal[False], where: bool = ...) -> bytes: ...


@overload
def git(args: Sequence[str], *, cwd: Path, check: bool = ..., input: str | bytes | None = ...,
        env: Mapping[str, str] | None = ..., extra_env: Mapping[str, str] | None = ...,
        timeout: float | None = ..., text: bool, where: bool = ...) -> str | bytes: ...


def git(args: Sequence[str], *, cwd: Path, check: bool = True, input: str | bytes | None = None,
        env: Mapping[str, str] | None = None, extra_env: Mapping[str, str] | None = None,
        timeout: float | None = None, text: bool = True, where: bool = False) -> str | bytes:
    """What git printed (see the module docstring for how it runs); GitError when it fails and
    `check` (`where`: the message names the folder). Text is decoded leniently: what a
    repository holds need not be UTF-8."""
    proc = run_git(args, cwd=Path(cwd), env=env, extra_env=extra_env, input=input, text=text,
                   timeout=timeout, errors="replace")
    if check and proc.returncode != 0:
        raise failed(proc, args, Path(cwd) if where else None)
    return proc.stdout


def git_common_dir(path: Path) -> Path | None:
    """The repository a checkout or worktree at `path` belongs to; None when it is none."""
    try:
        out = git(["rev-parse", "--path-format=absolute", "--git-common-dir"], cwd=path).strip()
    except (GitError, OSError):
        return None
    return Path(out).resolve() if out else None


__all__ = ["LOCATION_VARS", "GitError", "failed", "git", "git_common_dir", "SAFE_OPTIONS", "Pinned", "all_pinned", "claimed_repository", "git_argv", "git_env", "pin",
           "pin_checkout", "pin_worktree", "pinned", "restore_dotgit", "run_git", "unpin",
           "without_location", "worktree_admin_dir"]
