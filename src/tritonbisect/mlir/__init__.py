"""Readers of Triton's MLIR text (TTIR, TTGIR, the LLVM dialect), shared by every IR tool.

    signature.py        a function's signature: argument names, types, attributes, locations
    normalise.py        IR with locations dropped and names renumbered, scoped by region
    passes.py           MLIR's per-pass dumps (MLIR_ENABLE_DUMP=1) and the alignment of two pipelines
    ops.py              the operations: their lines, results, regions, and the values they use
    typed_constants.py  an operation's result type read from its line; an `arith.constant` of it
    edits.py            smaller versions of an IR (operations removed or made constants, loops
                        unrolled once or skipped, branches taken), for `reduce`

Pure text: no I/O, no triton import.
"""
