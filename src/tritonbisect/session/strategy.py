"""What the search loop asks of a search strategy (the classic search, the flake-aware one): a
plan for what to do next from the evidence in the journal, and what to make of the steps
that run."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

from tritonbisect.search.classic import Found, Inconclusive
from tritonbisect.session.step_queue import InFlight


@dataclass(frozen=True)
class CasesFound:
    """The answer of a search over several cases: each case's culprit (Found) or candidates."""

    answers: Mapping[str, Found | Inconclusive]


@dataclass(frozen=True)
class Plan:
    """What a strategy wants done now; an empty plan waits for a running step."""

    test: tuple[str, ...] = ()  # commits to start, best first, as many as workers are free
    answer: Found | Inconclusive | CasesFound | None = None  # the search is over
    again: bool = False  # the strategy changed its own view: ask it again before waiting
    switch: bool = False  # the test looks flaky: the flake-aware search takes over
    seen: object = None  # the pure search's own action, named when nothing moves


@dataclass(frozen=True)
class Switched:
    """The classic search handed over to the flake-aware one."""


class Strategy(Protocol):
    label: str  # how an error names it ("search", "flake-aware search")

    def plan(self, *, free: int, flying: frozenset[str], live: int, cached: frozenset[str]) -> Plan:
        """The next action, with `free` idle workers, `flying` commits running (`live` steps)
        and `cached` commits whose build costs nothing."""

    def progress(self) -> tuple[int, int]:
        """(culprits still possible, rounds of tests left), for the display."""

    def open_cases(self) -> tuple[str, ...]:
        """The cases still searched, for the display (none: the search has one answer)."""

    def switch_after(self) -> bool:
        """After new verdicts: whether the flake-aware search must take over."""

    def useless(self, steps: Sequence[InFlight]) -> list[InFlight]:
        """Running steps whose verdict can no longer change anything."""

    def keep(self) -> tuple[str, ...]:
        """Commits whose builds are worth keeping for the confirmation."""

    def corrected(self) -> None:
        """A person took an answer back: forget what the strategy made of the old verdicts."""
