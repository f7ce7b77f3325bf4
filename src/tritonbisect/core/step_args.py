"""Command-line helpers that need neither click nor the bisect machinery: the workdir, --env
and --test checks. `tritonbisect step` imports them on its fast path; options/bisect_options.py
re-exports them for every other command.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
from pathlib import Path
from typing import Any

from tritonbisect.core.errors import InputError

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


def parse_pass_env(names: tuple[str, ...] | list[str] | None) -> list[str]:
    """--pass-env NAME...: variable names (a secret that builds and tests are to get)."""
    out: list[str] = []
    for name in names or ():
        if not _ENV_NAME.fullmatch(name):
            raise InputError(f"--pass-env expects a variable's name (GITHUB_TOKEN), got {name!r}")
        if name not in out:
            out.append(name)
    return out


_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_INTERPRETERS = {"python", "python3", "bash", "sh", "zsh"}
# Words after which bash does more than run one program: the check cannot follow it there.
_SHELL_WORDS = {"if", "then", "else", "elif", "fi", "for", "while", "until", "do", "done",
                "case", "esac", "function", "{", "}", "!", "[[", "]]", "time", "exec", "eval",
                "source", ".", "coproc", "select"}
_ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*=")


def _looks_like_path(word: str) -> bool:
    return "/" in word or word.endswith((".py", ".sh"))


def _simple_words(command: str) -> list[str] | None:
    """The words of `command` when bash would run it as one plain program with arguments;
    None when it is more (a pipe, a list, a redirection, a subshell, an expansion...), so the
    check says nothing rather than refuse what bash would run."""
    if any(ch in command for ch in "`$\n\\*?["):
        return None
    lexer = shlex.shlex(command, posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    try:
        words = list(lexer)
    except ValueError:
        return None
    if any(w and all(ch in "();<>|&" for ch in w) for w in words):
        return None
    try:
        plain = shlex.split(command)
    except ValueError:
        return None
    if plain != words:  # an operator inside a word, e.g. `a>b`
        return None
    if not plain or _ASSIGNMENT.match(plain[0]) or plain[0] in _SHELL_WORDS:
        return None  # VAR=value before the program: rare in a --test, and run as given
    return plain


def check_test_command(
    command: str,
    *,
    repo: Path | None = None,
    bad: str | None = None,
    history: Any = None,
    cwd: Path | None = None,
) -> str:
    """Validate the script a --test command names; return the command to run in a worktree.

    The test runs from the top of each commit's checkout. A script tracked in the repository
    at the bad commit is found there: by its path from the top of the repository, or, when
    the command is given from inside the repository, from the current directory (the path is
    then rewritten from the top). A script only on disk gets its absolute path. A script found
    nowhere is an InputError. A command that is more than one program with arguments (pipes,
    lists, redirections, subshells, expansions) is run as given: bash is the judge of it.
    """
    if not command.strip():
        raise InputError("--test is empty")
    try:
        shlex.split(command)
    except ValueError as exc:
        raise InputError(f"--test {command!r} is not a valid shell command: {exc}") from None
    words = _simple_words(command)
    if words is None:
        return command
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
    if not _looks_like_path(word):
        return command
    if index == 0 and "/" not in word and shutil.which(word):
        return command  # a program on PATH, as bash would find it
    # bash looks a bare command name up on PATH only: a script there needs a path
    as_run = "./" + word if index == 0 and "/" not in word else word
    cwd = (cwd or Path.cwd()).resolve()
    on_disk = Path(word).expanduser()
    on_disk = on_disk if on_disk.is_absolute() else cwd / on_disk
    tracked = history is not None and bad is not None and repo is not None and not Path(word).is_absolute()
    repo_root = Path(getattr(history, "root", None) or repo or ".").resolve() if tracked else None

    def at_bad(rel: str) -> str | None:
        """The command running `rel` from the top of the checkout, when it is tracked there."""
        if rel.startswith("..") or history.file_at(bad, rel) is None:
            return None
        if os.path.normpath(as_run) == rel and as_run == word:
            return command
        return _replace_word(command, words, index, "./" + rel)

    if tracked and repo_root is not None:
        # given from inside the repository: the path from here, as the shell reads it
        try:
            from_cwd = os.path.relpath(on_disk.resolve() if on_disk.exists() else on_disk, repo_root)
        except ValueError:
            from_cwd = ".."
        found = at_bad(os.path.normpath(from_cwd))
        if found is not None:
            return found
    if on_disk.exists():  # a script of the user's, where the shell would find it
        if Path(word).is_absolute():
            return command
        return _replace_word(command, words, index, str(on_disk.resolve()))
    if tracked:  # given from elsewhere: the path from the top of the repository
        found = at_bad(os.path.normpath(word))
        if found is not None:
            return found
    where = f" in {repo} at {bad[:12]}" if repo is not None and bad else ""
    raise InputError(
        f"test script {word} not found{where} nor in {cwd}: give its path from the top of the "
        "repository (the test runs there) or an absolute path"
    )


def _replace_word(command: str, words: list[str], index: int, new: str) -> str:
    words = list(words)
    words[index] = new
    return shlex.join(words)
