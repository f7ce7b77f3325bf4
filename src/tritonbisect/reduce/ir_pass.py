"""IR-level candidates: smaller versions of an IR oracle's TTIR or TTGIR, made by the edits of
mlir/edits.py, likeliest big steps first. Each is a whole new Candidate; which ones the good
Triton still parses and compiles, and the bad one still fails the same way, is for the runner
to say."""

from __future__ import annotations

from collections.abc import Iterator

from tritonbisect.mlir import edits
from tritonbisect.mlir.ops import Block, Op, Program, count_ops, read_ops
from tritonbisect.reduce.context_edit import options, set_option
from tritonbisect.reduce.oracle_io import Candidate


def ir_lines(text: str) -> int:
    """Non-blank lines of the IR's functions: what `kernel_lines` counts for an IR oracle."""
    prog = read_ops(text)
    funcs = [op for op in prog.walk() if op.is_container and op.name != "module" and op.name != "builtin.module"]
    return sum(1 for f in funcs for i in range(f.start, f.end + 1) if prog.lines[i].strip())


def size(text: str) -> dict[str, int]:
    return {"ir_ops": count_ops(text), "kernel_lines": ir_lines(text)}


def cost(text: str, extra: int = 0) -> tuple[int, int, int]:
    """What every accepted step lowers: operations, then operations that are not constants
    (replacing one by a constant), then characters (+ `extra`: the launch configuration)."""
    ops = read_ops(text).body_ops()
    return len(ops), sum(1 for op in ops if op.name != "arith.constant"), len(text) + extra


def _blocks(prog: Program) -> Iterator[Block]:
    """Every block inside a function, outermost first."""
    todo: list[Op] = list(prog.top.ops)
    while todo:
        op = todo.pop(0)
        for region in op.regions:
            for block in region:
                if not op.is_container or op.name.endswith("func"):
                    yield block
                todo.extend(block.ops)


def candidates(cand: Candidate, stage: str = "") -> Iterator[Candidate]:
    """Smaller candidates than `cand` (its source is the IR text), biggest steps first."""
    text = cand.source
    prog = read_ops(text)
    seen = {text}  # different edits often come to the same text (two chunks, one closure)

    def make(new: str | None) -> Candidate | None:
        if new is None or new in seen or read_ops(new).unresolved:
            return None
        seen.add(new)
        return Candidate(new, cand.context)

    funcs = [op for op in prog.walk() if op.name.endswith("func") and op.regions]
    everything = None
    for func in funcs:  # every unused argument at once (one by one at the end)
        for index in reversed(range(len(func.regions[0][0].args))):
            everything = edits.without_argument(everything or text, func.start, index) or everything
    for new in (edits.tidied(text), everything, edits.without_dead_ops(text)):
        if (c := make(new)) is not None:
            yield c
    # loops and branches: no iteration, one iteration, one branch
    for op in prog.walk():
        if op.name == "scf.for":
            tries = [edits.loop_skipped(text, op.start), edits.loop_once(text, op.start)]
        elif op.name == "scf.if":
            tries = [edits.branch_taken(text, op.start, 0), edits.branch_taken(text, op.start, 1)]
        else:
            continue
        for new in tries:
            if (c := make(new)) is not None:
                yield c
    # operations with regions replaced by a constant; operations replaced by an operand (last
    # first); chunks of each block removed with their users (halves, quarters, ... one at a
    # time, last first); single operations replaced by a constant
    body = prog.body_ops()
    for op in sorted((op for op in body if op.regions), key=lambda op: (op.start - op.end, op.start)):
        if (c := make(edits.with_constant(text, op.start))) is not None:
            yield c
    for op in reversed(body):
        for which in range(len([u for u in prog.uses if u.line == op.start and u.op is op])):
            if (c := make(edits.with_operand(text, op.start, which))) is not None:
                yield c
    for block in _blocks(prog):
        ops = [op for op in block.ops if not op.is_terminator]
        step = max(1, len(ops) // 2)
        while ops:
            for first in reversed(range(0, len(ops), step)):
                if (c := make(edits.without_ops(text, [op.start for op in ops[first:first + step]]))) is not None:
                    yield c
            if step == 1:
                break
            step = max(1, step // 2)
    for op in reversed(body):
        if not op.regions and (c := make(edits.with_constant(text, op.start))) is not None:
            yield c
    # the kernel's unused arguments one by one, and (TTIR only: a TTGIR's layouts fix them)
    # the launch configuration lowered
    for func in funcs:
        for index in reversed(range(len(func.regions[0][0].args))):
            if (c := make(edits.without_argument(text, func.start, index))) is not None:
                yield c
    if stage == "ttir":
        for key in ("num_warps", "num_stages"):
            value = options(cand.context).get(key)
            if isinstance(value, int) and value > 1:
                yield Candidate(text, set_option(cand.context, key, 1))
