"""Text from someone else (a trace's kernel names, a repository's commit subjects, a test's
output, a session file) made safe where it lands: a terminal, Markdown, a file name.

A terminal obeys the escape sequences it is sent (clear the screen, rewrite a line, set the
title, make a link say one thing and open another), and right-to-left overrides make text read
differently from what it is. So before such text is printed, escape sequences are dropped and
every other control character is shown as `\\xNN`; newlines and tabs are kept where the text
has several lines. A name that becomes a file name keeps only letters, digits, `_` and `-`.
A value read back from a JSON file someone could edit is checked against the type the tool
wrote there (`json_fits`) before anything uses it.
"""

from __future__ import annotations

import re
import types
import typing
from pathlib import Path
from typing import Any

# CSI (colours, cursor moves), OSC (titles, hyperlinks; ended by BEL or ST) and two-byte escapes
_ESCAPES = re.compile(r"\x1b(?:\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(?:\x07|\x1b\\)?|[@-Z\\-_])")
# C0 but tab and newline, DEL and C1, the bidirectional overrides and isolates
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")
_CONTROL_LINE = re.compile("[\x00-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")
_FILE_UNSAFE = re.compile(r"[^A-Za-z0-9_-]+")


def _shown(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def printable(text: object) -> str:
    """`text` with its terminal escape sequences dropped and its other control characters
    shown as `\\xNN`; newlines and tabs are kept (a CRLF is a newline)."""
    plain = _ESCAPES.sub("", str(text)).replace("\r\n", "\n")
    return _CONTROL.sub(_shown, plain)


def one_line(text: object) -> str:
    """`printable`, with newlines and tabs shown as `\\x0a`/`\\x09` too: text that must stay on
    its line (a name, a subject, a line of a generated script's comment)."""
    return _CONTROL_LINE.sub(_shown, _ESCAPES.sub("", str(text)))


def file_component(name: object, fallback: str = "kernel") -> str:
    """A file name made of `name`: its runs of letters, digits, `_` and `-` joined by `_` (no
    `/`, no `..`, no hidden file), at most 100 characters; `fallback` when nothing is left."""
    safe = _FILE_UNSAFE.sub("_", str(name)).strip("_")[:100]
    return safe or fallback


def json_fits(value: Any, hint: Any) -> bool:
    """Whether a value read from JSON fits a dataclass field's type hint (str, int, float,
    bool, Path, None, list[X], dict[K, V] and unions of them; any other hint fits anything)."""
    origin = typing.get_origin(hint)
    args = typing.get_args(hint)
    if origin in (typing.Union, types.UnionType):
        return any(json_fits(value, a) for a in args)
    if hint is type(None):
        return value is None
    if hint is bool:
        return isinstance(value, bool)
    if hint is int:
        return isinstance(value, int) and not isinstance(value, bool)
    if hint is float:
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if hint in (str, Path):
        return isinstance(value, str)
    if origin is list:
        return isinstance(value, list) and all(json_fits(v, args[0]) for v in value)
    if origin is dict:
        return isinstance(value, dict) and all(json_fits(k, args[0]) and json_fits(v, args[1])
                                               for k, v in value.items())
    return True
