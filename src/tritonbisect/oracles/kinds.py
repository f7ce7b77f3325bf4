"""The oracle kinds: one row per kind of test made from a trace, and what each brings.

Every place that asks "which oracle is this" reads this table rather than comparing a kind's
name: the bisectors' --oracle choice, the checks of the options that go with compiling
(--check, --compile-target, --narrow, --workaround-after), the TestSpec a session runs
(session/judging.py), hunt's and the reducer's handling of a folder. A new kind is a row here,
its writer and its standalone script (docs/architecture.md walks through it).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum


class OracleKind(str, Enum):
    """The kinds of oracle, by the name --oracle and an oracle folder's files give."""

    RUNTIME = "runtime"
    COMPILE = "compile"
    IR = "ir"
    REPLAY = "replay"


@dataclass(frozen=True)
class OracleEntry:
    kind: OracleKind
    summary: str
    # cross-compiles the kernel: needs no GPU, and --check, --compile-target, --narrow and
    # --workaround-after go with it
    compiles: bool
    # a bisector's --oracle offers it (the replay oracle is named by --launches instead)
    bisect_choice: bool
    # the module whose function writes the oracle's folder from a trace ...
    writer: str
    # ... and the script in that folder that runs at each commit and says pass / bad / skip
    # through its exit code (docs/exit-codes.md of the oracles)
    judge: str


ORACLES: dict[OracleKind, OracleEntry] = {
    e.kind: e
    for e in (
        OracleEntry(OracleKind.RUNTIME, "runs the launch and compares its outputs with a golden run",
                    compiles=False, bisect_choice=True,
                    writer="tritonbisect.oracles.runtime", judge="repro.py (oracles/runtime_template.py)"),
        OracleEntry(OracleKind.COMPILE, "cross-compiles the traced kernel for the traced GPU",
                    compiles=True, bisect_choice=True,
                    writer="tritonbisect.oracles.compile.folder",
                    judge="compile_repro.py (oracles/compile/standalone/)"),
        OracleEntry(OracleKind.IR, "compiles the recorded TTIR/TTGIR; IR a commit cannot read is a skip",
                    compiles=True, bisect_choice=True,
                    writer="tritonbisect.oracles.compile.ir_oracle",
                    judge="compile_repro.py (oracles/compile/standalone/)"),
        OracleEntry(OracleKind.REPLAY, "replays several recorded launches of a whole program",
                    compiles=False, bisect_choice=False,
                    writer="tritonbisect.oracles.replay", judge="replay.py (oracles/replay_template.py)"),
    )
}

# what a bisector's --oracle offers, in the table's order
BISECT_CHOICES = [k.value for k, e in ORACLES.items() if e.bisect_choice]
DEFAULT = OracleKind.RUNTIME


def oracle_kind(name: str | OracleKind | None) -> OracleKind:
    """The kind of a name (None: the default); ValueError for a name no row has."""
    return DEFAULT if name is None else OracleKind(name)


def compiles(name: str | OracleKind | None) -> bool:
    """Whether the oracle of this kind cross-compiles (False for a name no row has)."""
    try:
        return ORACLES[oracle_kind(name)].compiles
    except ValueError:
        return False
