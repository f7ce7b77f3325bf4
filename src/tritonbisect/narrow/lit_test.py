"""The lit test a Triton maintainer writes by hand for a fix, from narrowing's answer:

    // RUN: triton-opt %s -tritongpu-coalesce | FileCheck %s
    <the IR just before the first pass whose output differs (the same for both Tritons)>
    // CHECK-LABEL: @kernel
    // CHECK: <a line the good Triton's output has and the culprit's lacks>
    // CHECK-NOT: <a line only the culprit's output has>

The CHECK lines come from a diff of the two outputs after the pass (values compared renumbered,
so printer naming does not count), each hunk led by its last unchanged line as context; value
names and block labels become FileCheck patterns and FileCheck's own `[[`/`{{` are escaped. Pure:
text in, text out.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass

from tritonbisect.mlir.normalise import drop_locations, renumber_values
from tritonbisect.mlir.passes import PassDump
from tritonbisect.mlir.signature import kernel_function

MAX_CHECKS = 40
_VALUE = re.compile(r"%[\w$.#-]+")
_BLOCK = re.compile(r"\^bb\d+")


@dataclass
class LitTest:
    pass_arg: str
    run: str
    text: str
    checks: int
    notes: list[str]


def _masked(line: str) -> str:
    return _BLOCK.sub("^bb", _VALUE.sub("%", line.strip()))


def _lines(ir: str) -> list[str]:
    return [line.rstrip() for line in drop_locations(ir).splitlines() if line.strip()]


def check_pattern(line: str) -> str:
    """One IR line as a FileCheck pattern: literal, but for value names and block labels."""
    text = line.strip().replace("[[", "\0L").replace("{{", "\0B")
    out, last = [], 0
    for m in re.finditer(f"{_VALUE.pattern}|{_BLOCK.pattern}", text):
        out.append(text[last:m.start()])
        out.append("%{{[A-Za-z0-9_$.#-]+}}" if m.group(0).startswith("%") else "^bb{{[0-9]+}}")
        last = m.end()
    out.append(text[last:])
    return "".join(out).replace("\0L", "{{\\[\\[}}").replace("\0B", "{{\\{\\{}}")


def _run_line(dump: PassDump) -> str:
    options = dump.options.strip()
    flag = f"-{dump.arg or dump.name}"
    if options.startswith("{") and options.endswith("}") and options[1:-1].strip():
        flag += f'="{options[1:-1].strip()}"'
    return f"// RUN: triton-opt %s {flag} | FileCheck %s"


def lit_test(before: PassDump, good_output: str, bad_output: str) -> LitTest | None:
    """The lit test of pass `before` (its input `before.ir`), checking what the good Triton's
    output has that the bad one's does not; None when the two outputs do not differ."""
    good, bad = _lines(good_output), _lines(bad_output)
    if renumber_values("\n".join(good)) == renumber_values("\n".join(bad)):
        return None
    # diffed with every value name masked: one argument more renumbers every later value, which
    # must not make every line a difference (the CHECK patterns match any name anyway)
    good_n, bad_n = [_masked(line) for line in good], [_masked(line) for line in bad]
    notes: list[str] = []
    checks: list[str] = []
    func = kernel_function(before.ir)  # the kernel (the input's first function), not a libdevice declaration
    func_line = next((i for i, line in enumerate(good) if func and re.search(rf"\.func\b.*@{re.escape(func)}\(", line)),
                     None)
    good_set = set(good_n)
    matcher = difflib.SequenceMatcher(a=good_n, b=bad_n, autojunk=False)
    first_hunk = None
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            continue
        first_hunk = i1 if first_hunk is None else first_hunk
        if i1 > 0 and good[i1 - 1].strip() not in ("}", "{"):
            context = f"// CHECK: {check_pattern(good[i1 - 1])}"
            if not checks or checks[-1] != context:
                checks.append(context)
        # a CHECK-NOT only for what the good output has nowhere: it must not trip on the good output
        for line in bad[j1:j2]:
            rule = f"// CHECK-NOT: {check_pattern(line)}"
            if line.strip() not in ("}", "{") and _masked(line) not in good_set and rule not in checks:
                checks.append(rule)
        checks.extend(f"// CHECK: {check_pattern(line)}" for line in good[i1:i2] if line.strip() not in ("}", "{"))
    if len(checks) > MAX_CHECKS:
        notes.append(f"{len(checks) - MAX_CHECKS} more CHECK lines left out: the first {MAX_CHECKS} kept")
        checks = checks[:MAX_CHECKS]
        while checks and checks[-1].startswith("// CHECK-NOT"):  # a trailing CHECK-NOT would run to the end
            checks.pop()
    if func_line is not None and first_hunk is not None and first_hunk > func_line + 1:
        checks.insert(0, f"// CHECK-LABEL: @{func}(")
    body = drop_locations(before.ir).strip("\n")
    if before.op and before.op != "builtin.module":
        notes.append(f"the pass ran on a {before.op}: its input is that op alone, wrapped in a module without the "
                     "original module's attributes; add them if the pass needs them")
        body = "module {\n" + body + "\n}"
    run = _run_line(before)
    header = [run, f"// The first pass whose output differs ({before.label}); the input is the IR just before it,",
              "// the CHECK lines what the good Triton's output has and the culprit's lacks (CHECK-NOT: what only",
              "// the culprit's has). Written by tritonbisect narrow."]
    text = "\n".join(header) + "\n\n" + body + "\n\n" + "\n".join(checks) + "\n"
    return LitTest(pass_arg=before.arg or before.name, run=run, text=text, checks=len(checks), notes=notes)
