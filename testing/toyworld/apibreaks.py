"""The API breaks the toy LLVM can make, and how Triton's sources adapt to each one.

Every break renames a function or changes its signature in a header that Triton includes.
Triton calls the function in exactly one place: `old` occurs once in `file` before the fix,
and replacing it by `new` is the whole fix (`new` never contains `old`).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ApiBreak:
    key: str
    header: str  # LLVM header (path in llvm-project) whose declaration changes
    file: str  # Triton source (path in triton) that must change
    old: str  # exact text in `file` before the fix
    new: str  # exact text after the fix
    old_symbol: str
    new_symbol: str
    subject: str
    body: str


BREAKS: tuple[ApiBreak, ...] = (
    ApiBreak(
        key="create-op",
        header="mlir/include/mlir/IR/Builders.h",
        file="python/src/ir.c",
        old="mlirBuildOp(ctx, opcode, lhs, rhs)",
        new="mlirCreateOp(ctx, opcode, lhs, rhs)",
        old_symbol="mlirBuildOp",
        new_symbol="mlirCreateOp",
        subject="[mlir][IR] Rename mlirBuildOp to mlirCreateOp",
        body="Matches the C++ OpBuilder::create naming. Out-of-tree users must rename their calls.",
    ),
    ApiBreak(
        key="fold-flags",
        header="llvm/include/llvm/IR/ConstantFold.h",
        file="python/src/llvm.c",
        old="llvmConstantFold(opcode, lhs, rhs)",
        new="llvmConstantFold(opcode, lhs, rhs, LLVM_FOLD_DEFAULT)",
        old_symbol="llvmConstantFold",
        new_symbol="llvmConstantFold",
        subject="[ConstantFold] Add a flags parameter to llvmConstantFold",
        body="Callers pass LLVM_FOLD_DEFAULT for the old behaviour, or LLVM_FOLD_NO_WRAP to\n"
        "saturate instead of wrapping.",
    ),
    ApiBreak(
        key="run-on-op",
        header="mlir/include/mlir/Pass/PassManager.h",
        file="python/src/passes.c",
        old="mlirPassManagerRun(pm, op)",
        new="mlirPassManagerRunOnOp(pm, op)",
        old_symbol="mlirPassManagerRun",
        new_symbol="mlirPassManagerRunOnOp",
        subject="[mlir][Pass] Rename mlirPassManagerRun to mlirPassManagerRunOnOp",
        body="The pass manager runs on any operation, not only on modules.",
    ),
    ApiBreak(
        key="context-threading",
        header="mlir/include/mlir/IR/MLIRContext.h",
        file="python/src/ir.c",
        old="mlirContextCreate()",
        new="mlirContextCreateWithThreading(0)",
        old_symbol="mlirContextCreate",
        new_symbol="mlirContextCreateWithThreading",
        subject="[mlir] Make the threading mode of a new MLIRContext explicit",
        body="mlirContextCreate is removed; use mlirContextCreateWithThreading(enable).",
    ),
    ApiBreak(
        key="version-query",
        header="llvm/include/llvm/Support/Version.h",
        file="python/src/main.c",
        old="llvmGetVersionString()",
        new="llvmGetVersion(LLVM_VERSION_FULL)",
        old_symbol="llvmGetVersionString",
        new_symbol="llvmGetVersion",
        subject="[Support] Replace llvmGetVersionString with llvmGetVersion",
        body="llvmGetVersion(LLVM_VERSION_FULL) returns what llvmGetVersionString returned;\n"
        "LLVM_VERSION_SHORT returns only the number.",
    ),
)

MAX_API_BREAKS = len(BREAKS)


def apply_fixes(text: str, path: str, breaks: frozenset[int] | set[int]) -> str:
    """Triton source `text` of `path` adapted to the breaks with these indices."""
    for index in sorted(breaks):
        brk = BREAKS[index]
        if brk.file == path:
            text = text.replace(brk.old, brk.new)
    return text
