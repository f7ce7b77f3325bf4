"""The operations of an MLIR text, with the values each one defines and uses.

Read the way Triton's printer writes IR: one operation per line; a line ending in `{` opens a
region of the operation it starts (`scf.for ... {`, `"tt.reduce"(%x) ({`); a line starting
with `}` closes it, and opens the next region of the same operation when it also ends in `{`
(`} else {`, `}, {`); `^bb0(%a: f32):` starts a block. The entry block's arguments of a
pretty-printed region are on the operation's own line: `%x_ptr: !tt.ptr<f32>` (a function),
`%k = %lb` and `iter_args(%acc = %init)` (a loop).

    prog = read_ops(text)
    for op in prog.walk(): op.name, op.start, op.end, op.results, op.regions
    prog.users(value)         # the operations whose lines use a value
    prog.unresolved           # uses of a name defined nowhere in scope (a broken text)

Names are scoped by region, as normalise.py scopes them: a printer may reuse a name in a
sibling region. Pure text: no I/O, no triton import.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field

# `%acc`, `%0`, `%3#1` (the second result of `%3:2`)
VALUE = re.compile(r"%[\w$.-]+(?:#\d+)?")
_RESULTS = re.compile(r"^\s*((?:%[\w$.-]+(?::\d+)?\s*,\s*)*%[\w$.-]+(?::\d+)?)\s*=(?!=)\s*")
_OP_NAME = re.compile(r'"([\w.$-]+)"|([\w.$-]+)')
_STRING = re.compile(r'"(?:[^"\\]|\\.)*"')
# a value named where a region argument is defined: `%x: type` (no space) or `%k = %lb`
_ARG_DEF = re.compile(r":(?!:)|\s*=(?!=)")
CONTAINERS = ("module", "builtin.module", "tt.func", "func.func", "llvm.func")
TERMINATORS = ("scf.yield", "scf.condition", "tt.return", "func.return", "llvm.return", "tt.reduce.return",
               "tt.scan.return", "ttg.warp_yield", "ttg.warp_return", "cf.br", "cf.cond_br")


@dataclass(eq=False)
class Value:
    """A name defined once: an operation's results (`count` of them) or a block argument."""

    name: str  # %acc
    count: int
    line: int
    col: int  # where the defining token starts on its line
    op: Op | None = None  # the defining operation; None for an argument
    block: Block | None = None  # the block of an argument


@dataclass(eq=False)
class Use:
    line: int
    col: int
    end: int
    value: Value
    index: int | None  # `#k`, when the token names one result of several
    op: Op  # the innermost operation whose own lines hold the use

    @property
    def text(self) -> str:
        return self.value.name + (f"#{self.index}" if self.index is not None else "")


@dataclass(eq=False)
class Block:
    owner: Op | None  # the operation whose region holds it (None: the top level)
    label: int | None = None  # the line of its `^bb` label
    args: list[Value] = field(default_factory=list)
    ops: list[Op] = field(default_factory=list)


@dataclass(eq=False)
class Op:
    name: str
    start: int
    end: int
    parent: Block
    results: list[Value] = field(default_factory=list)
    regions: list[list[Block]] = field(default_factory=list)
    lines: list[int] = field(default_factory=list)  # its own lines: the first, and each region's closing one

    @property
    def is_terminator(self) -> bool:
        return self.name in TERMINATORS or self.name.endswith((".yield", ".return"))

    @property
    def is_container(self) -> bool:
        return self.name in CONTAINERS

    @property
    def result_count(self) -> int:
        return sum(v.count for v in self.results)

    def nested(self) -> Iterator[Op]:
        """Every operation inside its regions, outermost first."""
        for region in self.regions:
            for block in region:
                for op in block.ops:
                    yield op
                    yield from op.nested()

    def contains(self, other: Op) -> bool:
        return self.start < other.start and other.end <= self.end


@dataclass
class Program:
    lines: list[str]
    top: Block
    values: list[Value] = field(default_factory=list)
    uses: list[Use] = field(default_factory=list)
    unresolved: list[tuple[int, str]] = field(default_factory=list)  # (line, name)
    _users: dict[int, list[Op]] = field(default_factory=dict)
    _uses: dict[int, list[Use]] = field(default_factory=dict)

    def walk(self) -> Iterator[Op]:
        for op in self.top.ops:
            yield op
            yield from op.nested()

    def users(self, value: Value) -> list[Op]:
        if not self._users:
            for use in self.uses:
                found = self._users.setdefault(id(use.value), [])
                if use.op not in found:
                    found.append(use.op)
        return self._users.get(id(value), [])

    def uses_of(self, value: Value) -> list[Use]:
        if not self._uses:
            for use in self.uses:
                self._uses.setdefault(id(use.value), []).append(use)
        return self._uses.get(id(value), [])

    def body_ops(self) -> list[Op]:
        """The operations inside functions (not the module, the functions themselves)."""
        return [op for op in self.walk() if not op.is_container]

    def op_at(self, line: int) -> Op | None:
        return next((op for op in self.walk() if op.start == line), None)


def masked(line: str) -> str:
    """The line with its string literals blanked (a `%` in a string is no value)."""
    return _STRING.sub(lambda m: '"' + " " * (len(m.group(0)) - 2) + '"', line)


def _results(line: str) -> tuple[list[tuple[str, int, int]], int]:
    """[(name, count, col)] of `%a, %b:2 = ...`, and where the rest of the line starts."""
    m = _RESULTS.match(line)
    if not m:
        return [], 0
    out = []
    for tok in re.finditer(r"(%[\w$.-]+)(?::(\d+))?", m.group(1)):
        out.append((tok.group(1), int(tok.group(2) or 1), m.start(1) + tok.start()))
    return out, m.end()


class _Reader:
    def __init__(self, text: str) -> None:
        self.prog = Program(lines=text.splitlines(), top=Block(owner=None))
        self.scopes: list[dict[str, Value]] = [{}]
        self.open: list[Op] = []  # operations whose regions are being read
        self.block = self.prog.top

    def lookup(self, name: str) -> Value | None:
        for scope in reversed(self.scopes):
            if name in scope:
                return scope[name]
        return None

    def define(self, value: Value) -> None:
        self.prog.values.append(value)
        self.scopes[-1][value.name] = value

    def use_tokens(self, i: int, text: str, op: Op, skip: set[int]) -> None:
        for m in VALUE.finditer(text):
            if m.start() in skip:
                continue
            name, _, index = m.group(0).partition("#")
            value = self.lookup(name)
            if value is None:
                self.prog.unresolved.append((i, m.group(0)))
                continue
            self.prog.uses.append(Use(i, m.start(), m.end(), value, int(index) if index else None, op))

    def open_region(self, op: Op) -> None:
        self.scopes.append({})
        self.block = Block(owner=op)
        op.regions.append([self.block])

    def read(self) -> Program:
        for i, line in enumerate(self.prog.lines):
            text = masked(line)
            s = text.strip()
            if not s or s.startswith(("#", "//")):
                continue
            if s.startswith("}") and self.open:
                self.close(i, text, s)
            elif s.startswith("^"):
                self.label(i, text)
            else:
                self.operation(i, text, s)
        return self.prog

    def close(self, i: int, text: str, s: str) -> None:
        op = self.open[-1]
        self.scopes.pop()
        op.lines.append(i)
        self.use_tokens(i, text, op, set())
        if s.endswith("{"):
            self.open_region(op)
            return
        op.end = i
        self.open.pop()
        self.block = op.parent

    def label(self, i: int, text: str) -> None:
        region = self.block.owner.regions[-1] if self.block.owner is not None else None
        if self.block.ops or self.block.label is not None or self.block.args:
            self.block = Block(owner=self.block.owner)
            if region is not None:
                region.append(self.block)
        self.block.label = i
        for m in VALUE.finditer(text):
            if text[m.end():m.end() + 1] == ":":
                value = Value(m.group(0), 1, i, m.start(), block=self.block)
                self.define(value)
                self.block.args.append(value)

    def operation(self, i: int, text: str, s: str) -> None:
        results, rest = _results(text)
        raw = self.prog.lines[i]  # the name of a generic operation is a string: read it unmasked
        m = _OP_NAME.match(raw, len(text) - len(text[rest:].lstrip()))
        name = (m.group(1) or m.group(2)) if m else "?"
        op = Op(name=name, start=i, end=i, parent=self.block, lines=[i])
        self.block.ops.append(op)
        skip = {col for _, _, col in results}
        opens = s.endswith("{")
        args: list[tuple[str, int]] = []
        if opens:  # the entry block's arguments written on the operation's line
            for tok in VALUE.finditer(text, rest):
                if _ARG_DEF.match(text, tok.end()):
                    args.append((tok.group(0), tok.start()))
                    skip.add(tok.start())
        self.use_tokens(i, text, op, skip)
        for res, count, col in results:
            value = Value(res, count, i, col, op=op)
            op.results.append(value)
            self.define(value)
        if opens:
            self.open.append(op)
            self.open_region(op)
            for arg, col in args:
                value = Value(arg, 1, i, col, block=self.block)
                self.define(value)
                self.block.args.append(value)


def read_ops(text: str) -> Program:
    """The operations of `text` (see the module docstring)."""
    return _Reader(text).read()


def count_ops(text: str) -> int:
    """Operations inside the functions of `text` (terminators included; not the module or the
    functions themselves): what `reduce` reports as `ir_ops`."""
    return len(read_ops(text).body_ops())
