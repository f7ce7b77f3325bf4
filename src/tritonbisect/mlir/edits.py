"""Smaller versions of an MLIR text, one edit at a time, for reducing IR (reduce/ir_pass.py).

Each edit takes the text and says which operation by the line it starts on; it returns the
edited text, or None when the edit does not apply there:

    without_ops(text, [12, 13])    those operations gone, with every operation using their results
    without_dead_ops(text)         every operation whose results nobody uses, until none is left
    with_constant(text, 12)        an operation replaced by `arith.constant` of its result's type
    with_operand(text, 12, 1)      an operation replaced by its second operand (`%x + %y` by `%y`)
    loop_skipped(text, 20)         an `scf.for` that runs no iteration: its results are its inits
    loop_once(text, 20)            an `scf.for` that runs one: its body in its place
    branch_taken(text, 30, 0)      an `scf.if` replaced by its `then` (0) or `else` (1) region
    without_argument(text, 5, 2)   the kernel's third argument, unused, gone
    tidied(text)                   locations and attribute aliases nobody uses dropped

An edit keeps the text well formed as far as names go (every use still has a definition in
scope; names moved out of a region are renamed where they would clash); whether a Triton
still parses and verifies it is for the Triton to say. Pure text.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from tritonbisect.mlir.normalise import drop_locations
from tritonbisect.mlir.ops import Op, Program, Use, Value, read_ops
from tritonbisect.mlir.signature import FUNC_HEAD, kernel_function, split_top
from tritonbisect.mlir.typed_constants import constant, result_type, types_of

_ALIAS_DEF = re.compile(r"^(#[\w$.-]+)\s*=", re.MULTILINE)


@dataclass
class _Rewrite:
    """Line-level changes to a program's text, applied together by `text()`."""

    prog: Program
    dropped: set[int] = field(default_factory=set)
    replaced: dict[int, str] = field(default_factory=dict)
    tokens: dict[tuple[int, int], tuple[int, str]] = field(default_factory=dict)  # (line, col) -> (end, new)
    dedent: dict[int, int] = field(default_factory=dict)

    def drop(self, op: Op) -> None:
        self.dropped.update(range(op.start, op.end + 1))

    def use(self, use: Use, new: str) -> None:
        self.tokens[(use.line, use.col)] = (use.end, new)

    def rename(self, value: Value, new: str) -> None:
        self.tokens[(value.line, value.col)] = (value.col + len(value.name), new)
        for use in self.prog.uses_of(value):
            self.use(use, new + (f"#{use.index}" if use.index is not None else ""))

    def text(self) -> str:
        by_line: dict[int, list[tuple[int, int, str]]] = {}
        for (at, col), (end, new) in self.tokens.items():
            by_line.setdefault(at, []).append((col, end, new))
        out = []
        for i, line in enumerate(self.prog.lines):
            if i in self.replaced:
                out.append(self.replaced[i])
                continue
            if i in self.dropped:
                continue
            for col, end, new in sorted(by_line.get(i, []), reverse=True):
                line = line[:col] + new + line[end:]
            cut = self.dedent.get(i, 0)
            if cut and line[:cut].strip() == "":
                line = line[cut:]
            out.append(line)
        return "\n".join(out) + "\n"


def _closure(prog: Program, ops: list[Op]) -> list[Op] | None:
    """`ops` and every operation using their results, transitively; a terminator using one
    takes its region's operation with it. None when that would reach a function or a module."""
    todo, out, seen = list(ops), [], set()
    while todo:
        op = todo.pop()
        if id(op) in seen:
            continue
        seen.add(id(op))
        if op.is_container:
            return None
        if op.is_terminator:
            owner = op.parent.owner
            if owner is None or owner.is_container:
                return None
            todo.append(owner)
            continue
        out.append(op)
        for value in op.results:
            todo.extend(prog.users(value))
    return [op for op in out if not any(other is not op and other.contains(op) for other in out)]


def without_ops(text: str, starts: list[int]) -> str | None:
    prog = read_ops(text)
    ops = [op for op in (prog.op_at(s) for s in starts) if op is not None]
    if not ops or len(ops) != len(starts):
        return None
    gone = _closure(prog, ops)
    if gone is None:
        return None
    edit = _Rewrite(prog)
    for op in gone:
        edit.drop(op)
    return edit.text()


def _inside(op: Op, others: list[Op]) -> bool:
    return any(other is op or other.contains(op) for other in others)


def without_dead_ops(text: str) -> str | None:
    prog = read_ops(text)
    dead: list[Op] = []
    changed = True
    while changed:
        changed = False
        for op in prog.body_ops():
            if op.is_terminator or not op.results or _inside(op, dead):
                continue
            if all(_inside(user, dead) for value in op.results for user in prog.users(value)):
                dead.append(op)
                changed = True
    if not dead:
        return None
    edit = _Rewrite(prog)
    for op in dead:
        edit.drop(op)
    return edit.text()


def with_constant(text: str, start: int, one: bool = False) -> str | None:
    prog = read_ops(text)
    op = prog.op_at(start)
    if op is None or op.is_container or op.is_terminator or op.name == "arith.constant" or op.result_count != 1:
        return None
    kind = result_type(op.name, prog.lines[op.start], prog.lines[op.end] if op.regions else "")
    const = constant(kind, one) if kind else None
    if const is None:
        return None
    line = prog.lines[op.start]
    edit = _Rewrite(prog)
    edit.drop(op)
    edit.replaced[op.start] = f"{line[:len(line) - len(line.lstrip())]}{op.results[0].name} = {const}"
    return edit.text()


def with_operand(text: str, start: int, which: int) -> str | None:
    """Where the operand's type is the result's as far as the line says: every operand of an
    operation written with one type (`arith.addf %a, %b : f32`), or the operand whose type in
    the list is the result's (`tt.addptr %p, %o : !tt.ptr<f32>, i32`: %p)."""
    prog = read_ops(text)
    op = prog.op_at(start)
    if op is None or op.regions or op.is_terminator or op.result_count != 1:
        return None
    operands = _operands(prog, op)
    kind = result_type(op.name, prog.lines[op.start])
    types = types_of(prog.lines[op.start])
    if which >= len(operands) or kind is None or types is None or "->" in types:
        return None
    if op.name == "arith.select" and which == 0:
        return None  # the condition: written with no type of its own when it is a scalar
    listed = split_top(types)
    if not (listed == [kind] or (len(listed) == len(operands) and listed[which] == kind)):
        return None
    edit = _Rewrite(prog)
    if not _results_to(edit, op, [operands[which].text]):
        return None
    edit.drop(op)
    return edit.text()


def _slot(op: Op, use: Use) -> int:
    """Which of `op`'s results (counting every result of `%x:N`) a use names."""
    before = 0
    for value in op.results:
        if value is use.value:
            return before + (use.index or 0)
        before += value.count
    raise ValueError("not a result of this operation")


def _operands(prog: Program, op: Op) -> list[Use]:
    """The uses on an operation's first line, in order."""
    return sorted((u for u in prog.uses if u.line == op.start and u.op is op), key=lambda u: u.col)


def _results_to(edit: _Rewrite, op: Op, texts: list[str]) -> bool:
    """Every use of `op`'s results becomes the text of the same position in `texts`."""
    if len(texts) != op.result_count:
        return False
    for value in op.results:
        for use in edit.prog.uses_of(value):
            edit.use(use, texts[_slot(op, use)])
    return True


def loop_skipped(text: str, start: int) -> str | None:
    prog = read_ops(text)
    op = prog.op_at(start)
    if op is None or op.name != "scf.for":
        return None
    inits = [u.text for u in _operands(prog, op)[3:]]  # lower bound, upper bound, step, then the inits
    edit = _Rewrite(prog)
    if not _results_to(edit, op, inits):
        return None
    edit.drop(op)
    return edit.text()


def _inline(prog: Program, op: Op, region: int, args: list[str]) -> str | None:
    """`op` replaced by the operations of its region's one block, the block's arguments by
    `args`, `op`'s results by what the block's terminator yields."""
    if region >= len(op.regions) or len(op.regions[region]) != 1:
        return None
    block = op.regions[region][0]
    if not block.ops or not block.ops[-1].is_terminator or len(block.args) != len(args):
        return None
    edit = _Rewrite(prog)
    for value, text in zip(block.args, args, strict=True):
        for use in prog.uses_of(value):
            edit.use(use, text)
    moved = block.ops[:-1]
    names = {v.name for v in prog.values}
    outside = {v.name for v in prog.values if not (op.start <= v.line <= op.end)}
    for inner in (v for v in prog.values if any(m.start <= v.line <= m.end for m in moved)):
        if inner.name in outside:
            k = 1
            while f"{inner.name}_{k}" in names:
                k += 1
            names.add(f"{inner.name}_{k}")
            edit.rename(inner, f"{inner.name}_{k}")
    yielded = []
    for use in _operands(prog, block.ops[-1]):
        new = edit.tokens.get((use.line, use.col))
        yielded.append(new[1] if new is not None else use.text)
    if not _results_to(edit, op, yielded):
        return None
    keep = {line for m in moved for line in range(m.start, m.end + 1)}
    edit.dropped.update(line for line in range(op.start, op.end + 1) if line not in keep)
    indent = len(prog.lines[op.start]) - len(prog.lines[op.start].lstrip())
    first = prog.lines[moved[0].start] if moved else ""
    cut = len(first) - len(first.lstrip()) - indent
    edit.dedent.update(dict.fromkeys(keep, max(cut, 0)))
    return edit.text()


def loop_once(text: str, start: int) -> str | None:
    prog = read_ops(text)
    op = prog.op_at(start)
    if op is None or op.name != "scf.for":
        return None
    operands = [u.text for u in _operands(prog, op)]
    if len(operands) < 3:
        return None
    return _inline(prog, op, 0, [operands[0], *operands[3:]])  # the induction variable is the lower bound


def branch_taken(text: str, start: int, which: int) -> str | None:
    prog = read_ops(text)
    op = prog.op_at(start)
    if op is None or op.name != "scf.if":
        return None
    return _inline(prog, op, which, [])


def without_argument(text: str, func_start: int, index: int) -> str | None:
    """The kernel's (the public function's) argument `index`, when nothing uses it."""
    prog = read_ops(text)
    op = prog.op_at(func_start)
    if op is None or not op.name.endswith("func") or not op.regions:
        return None
    head = FUNC_HEAD.search(prog.lines[op.start])
    if head is None or head.group("name").strip('"') != kernel_function(text):
        return None
    args = op.regions[0][0].args
    if index >= len(args) or prog.uses_of(args[index]):
        return None
    line = prog.lines[op.start]
    open_at = head.end() - 1
    depth, close_at = 0, open_at
    for close_at in range(open_at, len(line)):
        depth += {"(": 1, ")": -1}.get(line[close_at], 0)
        if depth == 0:
            break
    parts = split_top(line[open_at + 1:close_at])
    if len(parts) != len(args):
        return None
    del parts[index]
    edit = _Rewrite(prog)
    edit.replaced[op.start] = line[:open_at + 1] + ", ".join(parts) + line[close_at:]
    return edit.text()


def tidied(text: str) -> str | None:
    out = drop_locations(text)
    while True:
        unused = [m for m in _ALIAS_DEF.finditer(out)
                  if not re.search(re.escape(m.group(1)) + r"(?![\w$.-])", out[:m.start()] + out[m.end():])]
        if not unused:
            break
        drop = {m.group(1) for m in unused}
        out = "\n".join(line for line in out.splitlines()
                        if not ((m := _ALIAS_DEF.match(line)) and m.group(1) in drop)) + "\n"
    out = "\n".join(line.rstrip() for line in out.splitlines() if line.strip()) + "\n"
    return None if out == text else out
