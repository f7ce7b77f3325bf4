"""What runs once a session names its culprit (`FollowUps`): the revert check (--verify-revert),
naming the compiler pass (--narrow), shrinking the oracle (--reduce, `ReduceOptions`) and
looking for a change that makes the culprit's build pass (--workaround).

The session runs the revert check itself (session/revert_check.py); the command that drove the
session runs the other two (commands/engine.py). They are kept with the session so that
`resume` runs them too.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class ReduceOptions:
    """--reduce and its --reduce-level/--reduce-jobs/--reduce-timeout; the defaults are
    reduce/levels.py's (a package above this one: tests/test_settings_file.py keeps them equal)."""

    enabled: bool = False
    levels: list[str] = field(default_factory=lambda: ["source", "ir", "inputs"])
    jobs: int = 2  # candidates run at a time
    timeout: float = 120.0  # seconds per candidate run


@dataclass
class FollowUps:
    verify_revert: bool = False  # the culprit reverted at the bad commit (1 build per culprit)
    narrow: bool = False  # the first compiler pass whose output the culprit changed
    reduce: ReduceOptions = field(default_factory=ReduceOptions)
    workaround: bool = False  # the changes that make the culprit's build pass the oracle
