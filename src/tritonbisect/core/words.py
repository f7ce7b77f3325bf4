"""How the tool's messages count things: `1 search round`, `2 search rounds`."""

from __future__ import annotations


def counted(n: object, word: str, plural: str | None = None) -> str:
    """`n word` in agreement with n (`plural` where adding an s is wrong); a count that is not
    a number (a report of an older session may lack it) is shown as it is, with the plural."""
    return f"{n} {word if n == 1 else (plural or word + 's')}"
