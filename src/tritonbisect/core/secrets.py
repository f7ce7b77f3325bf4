"""Secrets in the environment: kept from builds and tests, and never written down.

A variable is a secret when its name says so: one of its `_`-separated words is TOKEN, SECRET,
PASSPHRASE or CREDENTIAL(S), ends in PASSWORD/PASSWD, or it holds API_KEY, ACCESS_KEY,
PRIVATE_KEY, SECRET_KEY or SESSION_KEY (GITHUB_TOKEN, GH_TOKEN, ANTHROPIC_API_KEY,
AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN, HF_TOKEN, RAY_AUTH_TOKEN,
PGPASSWORD, GOOGLE_APPLICATION_CREDENTIALS...). `TOKENIZERS_PARALLELISM` is not one.

- Every build's and test's environment starts without them (`without_secrets`), unless the
  user passes one by name (`--pass-env NAME`, `pass_through`): the tool itself keeps them
  (`hunt` files issues with GITHUB_TOKEN, an S3 cache signs with the AWS keys).
- Where the tool writes an environment or a command line down (session.json, reports, the
  artifact cache's meta.json, a hunt issue), a secret's value is `****` (`redact_env`,
  `redact_argv`), and so is the password of any URL (`user:****@host`). A value the tool
  cannot store is taken again from the environment when a session resumes.
- What the tool writes or shows of a test's output (the journal's reasons, session.json,
  reports, issues) has every secret value it knows (its environment's, the --env ones) and
  every URL's password replaced by `****` (`scrub`): a test that prints its environment
  puts no secret into a report.
"""

from __future__ import annotations

import hashlib
import os
import re
import threading
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

SHOWN = "****"
_NAME = re.compile(
    r"(?:^|_)(?:TOKEN|SECRET|PASSPHRASE|CREDENTIALS?)(?:_|$)"
    r"|PASSWORD(?:_|$)|PASSWD(?:_|$)"
    r"|(?:API|ACCESS|PRIVATE|SECRET|SESSION)_?KEY(?:_|$)",
    re.IGNORECASE,
)
# NAME=value, NAME: value, 'NAME': 'value' (the value up to a space, quote, comma or brace),
# where NAME holds a word of a secret's name (checked by is_secret_name)
_ASSIGNMENT = re.compile(
    r"""\b([A-Za-z0-9_]*(?:TOKEN|SECRET|PASSPHRASE|CREDENTIAL|PASSWORD|PASSWD|KEY)[A-Za-z0-9_]*)"""
    r"""(['"]?\s*[:=]\s*['"]?)([^\s'",}]+)""", re.IGNORECASE)
# the pieces of text a secret value is looked for among, by its fingerprint
_PIECES = re.compile(r"""[^\s'",;=:(){}\[\]<>]{12,}""")
_URL_PASSWORD = re.compile(r"(://[^/:@\s]*):[^/@\s]*@")
_URL_TOKEN = re.compile(r"://[^/:@\s*]+@")

# a value shorter than this is not hidden in text: `1` would be starred everywhere
_SHORTEST = 6
_FINGERPRINTED = 12
_passed: set[str] = set()
_hidden: set[str] = set()
_digests: dict[str, set[str]] = {}
_lock = threading.Lock()


def is_secret_name(name: str) -> bool:
    return bool(_NAME.search(name))


def pass_through(names: Iterable[str]) -> None:
    """Let these secrets reach builds and tests (`--pass-env NAME`) in this process."""
    with _lock:
        _passed.update(names)


def passed() -> frozenset[str]:
    with _lock:
        return frozenset(_passed)


def without_secrets(env: Mapping[str, str]) -> dict[str, str]:
    """`env` without its secrets, but those passed through by name."""
    keep = passed()
    return {k: v for k, v in env.items() if k in keep or not is_secret_name(k)}


def redact_urls(text: str) -> str:
    """`text` with the password or token of every URL in it shown as ****."""
    return _URL_TOKEN.sub(f"://{SHOWN}@", _URL_PASSWORD.sub(rf"\1:{SHOWN}@", text))


def redact_value(name: str, value: str) -> str:
    return SHOWN if is_secret_name(name) else redact_urls(value)


def redact_env(env: Mapping[str, str]) -> dict[str, str]:
    """`env` as it may be written down: secrets' values ****, URLs without passwords."""
    return {k: redact_value(k, str(v)) for k, v in env.items()}


def redact_argv(argv: Sequence[str]) -> list[str]:
    """A command line as it may be written down: the value of `--env NAME=VALUE` (or
    `--env=NAME=VALUE`) **** when NAME is a secret, every URL without its password."""
    out: list[str] = []
    after_env = False
    for word in argv:
        if after_env or word.startswith("--env="):
            prefix = "" if after_env else "--env="
            name, sep, value = word[len(prefix):].partition("=")
            word = f"{prefix}{name}{sep}{redact_value(name, value)}" if sep else word
        after_env = word == "--env"
        out.append(redact_urls(word))
    return out


def unstored(env: Mapping[str, str]) -> list[str]:
    """The names whose value was not stored (****): a secret passed with --env."""
    return [k for k, v in env.items() if v == SHOWN and is_secret_name(k)]


def restored(env: Mapping[str, str]) -> dict[str, str]:
    """`env` read back from a session: each secret that was not stored taken from this
    process's environment where it is set there (else left as ****, see `unstored`)."""
    return {k: os.environ.get(k, v) if v == SHOWN and is_secret_name(k) else v for k, v in env.items()}


def hide(values: Iterable[str]) -> None:
    """Remember secret values of this run (a secret's --env value) for `scrub`."""
    with _lock:
        _hidden.update(v for v in values if len(v) >= _SHORTEST)


def secret_values(env: Mapping[str, str]) -> list[str]:
    """The values of the secrets in `env` (those not already ****)."""
    return [v for k, v in env.items() if is_secret_name(k) and v != SHOWN]


def hide_env(env: Mapping[str, str]) -> None:
    """`hide` the values of the secrets in `env`."""
    hide(secret_values(env))


def hidden_values() -> list[str]:
    """The secret values `scrub` hides: those `hide` was given and those of this process's
    environment; the longest first (a value inside another is hidden with it)."""
    with _lock:
        values = set(_hidden)
    values.update(v for k, v in os.environ.items() if is_secret_name(k) and len(v) >= _SHORTEST)
    return sorted(values, key=len, reverse=True)


def _assigned(match: re.Match[str]) -> str:
    name, sep, value = match.groups()
    return f"{name}{sep}{SHOWN}" if is_secret_name(name) and value != SHOWN else match.group()


def fingerprints(values: Iterable[str], salt: str) -> list[str]:
    """Salted digests of the secret values long enough to be tokens (a stored digest of a
    short password could be guessed back): a later process can find them in text by them."""
    return sorted({_digest(v, salt) for v in values if len(v) >= _FINGERPRINTED})


def hide_fingerprints(salt: str, digests: Iterable[str]) -> None:
    """Hide from `scrub` the values whose fingerprints (`fingerprints`) these are: a secret
    given with --env to a session a later process reports on."""
    with _lock:
        _digests.setdefault(salt, set()).update(digests)


def _digest(value: str, salt: str) -> str:
    return hashlib.sha256(f"{salt}\0{value}".encode()).hexdigest()


def _by_fingerprint(text: str) -> str:
    with _lock:
        known = {salt: set(d) for salt, d in _digests.items()}
    if not known:
        return text

    def piece(match: re.Match[str]) -> str:
        word = match.group()
        for candidate in dict.fromkeys((word, word.rstrip(".!?"))):  # a sentence may end after it
            if any(_digest(candidate, salt) in d for salt, d in known.items()):
                return SHOWN + word[len(candidate):]
        return word

    return _PIECES.sub(piece, text)


def scrub(text: str) -> str:
    """`text` with every secret value of this run, every value given to a secret's name
    (`GITHUB_TOKEN=…`, `'HF_TOKEN': '…'`, as `env` or a dict's repr print them: a value this
    process does not know, such as a resumed session's) and every URL's password shown as ****."""
    for value in hidden_values():
        if value in text:
            text = text.replace(value, SHOWN)
    return redact_urls(_ASSIGNMENT.sub(_assigned, _by_fingerprint(text)))


def scrub_data(data: Any) -> Any:
    """`scrub` every string (keys too) of a JSON-like value."""
    if isinstance(data, str):
        return scrub(data)
    if isinstance(data, Mapping):
        return {scrub_data(k): scrub_data(v) for k, v in data.items()}
    if isinstance(data, (list, tuple)):
        return [scrub_data(v) for v in data]
    return data
