"""What runs once a session names its culprit (`FollowUps`): the revert check (--verify-revert),
naming the compiler pass (--narrow), shrinking the oracle (--reduce, `ReduceOptions`) and
looking for a change that makes the culprit's build pass (--workaround).

The session runs the revert check itself (session/revert_check.py); the command that drove the
session runs the other two (commands/engine.py). They are kept with the session so that
`resume` runs them too.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from tritonbisect.core.errors import InputError

# the reducer's levels and defaults, shared by `reduce` and a bisect's --reduce-* options
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


@dataclass
class ReduceOptions:
    """--reduce and its --reduce-level/--reduce-jobs/--reduce-timeout."""

    enabled: bool = False
    levels: list[str] = field(default_factory=lambda: list(LEVELS))
    jobs: int = DEFAULT_JOBS  # candidates run at a time
    timeout: float = DEFAULT_TIMEOUT  # seconds per candidate run


@dataclass
class FollowUps:
    verify_revert: bool = False  # the culprit reverted at the bad commit (1 build per culprit)
    narrow: bool = False  # the first compiler pass whose output the culprit changed
    reduce: ReduceOptions = field(default_factory=ReduceOptions)
    workaround: bool = False  # the changes that make the culprit's build pass the oracle
