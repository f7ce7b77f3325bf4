"""Command-line helpers that need neither click nor the bisect machinery: the workdir, --env
and --test checks. `tritonbisect step` imports them on its fast path; commands/options.py
re-exports them for every other command.
"""

from __future__ import annotations

import os
import shlex
from pathlib import Path
from typing import Any

from tritonbisect.errors import InputError

HOME_ENV = "TRITONBISECT_HOME"


def default_workdir() -> Path:
    """TRITONBISECT_HOME, else the platform's user cache dir for tritonbisect."""
    env = os.environ.get(HOME_ENV)
    if env:
        return Path(env).expanduser()
    import platformdirs

    return Path(platformdirs.user_cache_dir("tritonbisect"))


def resolve_workdir(value: str | Path | None) -> Path:
    return (Path(value).expanduser() if value else default_workdir()).resolve()


def parse_env(pairs: tuple[str, ...] | list[str] | None) -> dict[str, str]:
    env: dict[str, str] = {}
    for item in pairs or ():
        key, sep, value = item.partition("=")
        if not sep or not key or not key.replace("_", "a").isalnum() or key[0].isdigit():
            raise InputError(f"--env expects KEY=VALUE, got {item!r}")
        env[key] = value
    return env


_INTERPRETERS = {"python", "python3", "bash", "sh", "zsh"}


def _looks_like_path(word: str) -> bool:
    return "/" in word or word.endswith((".py", ".sh"))


def check_test_command(
    command: str,
    *,
    repo: Path | None = None,
    bad: str | None = None,
    history: Any = None,
    cwd: Path | None = None,
) -> str:
    """Validate the script a --test command names; return the command to run in a worktree.

    A script found in the repository at the bad commit is kept as given (it runs from the
    worktree, at each commit). A script only on disk gets its absolute path. A script found
    in neither is an InputError.
    """
    try:
        words = shlex.split(command)
    except ValueError as exc:
        raise InputError(f"--test {command!r} is not a valid shell command: {exc}") from None
    if not words:
        raise InputError("--test is empty")
    index = 0
    if words[0] in _INTERPRETERS or words[0].startswith("python3."):
        index = 1
        while index < len(words) and words[index].startswith("-"):
            if words[index] in ("-m", "-c"):
                return command  # a module or inline code: nothing to check
            index += 1
        if index >= len(words):
            return command
    word = words[index]
    if not _looks_like_path(word) or word.startswith("$"):
        return command
    cwd = (cwd or Path.cwd()).resolve()
    on_disk = Path(word).expanduser()
    on_disk = on_disk if on_disk.is_absolute() else cwd / on_disk
    if history is not None and bad is not None and repo is not None and not Path(word).is_absolute():
        repo_root = Path(getattr(history, "root", repo)).resolve()
        try:
            rel = os.path.relpath(on_disk.resolve() if on_disk.exists() else on_disk, repo_root)
        except ValueError:
            rel = word
        if not rel.startswith(".."):
            rel_norm = os.path.normpath(rel)
            if history.file_at(bad, rel_norm) is not None:
                # runs from the worktree; make it relative to the repository root
                if os.path.normpath(word) != rel_norm:
                    return _replace_word(command, words, index, "./" + rel_norm)
                return command
    if on_disk.exists():
        if Path(word).is_absolute():
            return command
        return _replace_word(command, words, index, str(on_disk.resolve()))
    where = f" in {repo} at {bad[:12]}" if repo is not None and bad else ""
    raise InputError(f"test script {word} not found{where} nor on disk")


def _replace_word(command: str, words: list[str], index: int, new: str) -> str:
    words = list(words)
    words[index] = new
    return shlex.join(words)
