"""The reducer's levels and defaults, shared by `reduce` and a bisect's `--reduce-*` options
(which must not import the reducer itself to validate them)."""

from __future__ import annotations

from tritonbisect.core.errors import InputError

LEVELS = ("source", "ir", "inputs")
DEFAULT_JOBS = 2
DEFAULT_TIMEOUT = 120.0


def parse_levels(text: str, option: str = "--level") -> tuple[str, ...]:
    """`source,ir,inputs` as a tuple of levels; InputError (one line) for an unknown one."""
    levels = tuple(x.strip() for x in text.split(",") if x.strip())
    unknown = [x for x in levels if x not in LEVELS]
    if unknown or not levels:
        raise InputError(f"{option} {text}: unknown level(s) {', '.join(unknown) or '(none)'}; "
                         f"choose from {','.join(LEVELS)}")
    return levels
