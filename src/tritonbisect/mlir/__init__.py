"""Readers of Triton's MLIR text (TTIR, TTGIR, the LLVM dialect), shared by every IR tool.

    signature.py   a function's signature: argument names, types, attributes, locations
    normalise.py   IR with locations dropped and names renumbered, scoped by region
    passes.py      MLIR's per-pass dumps (MLIR_ENABLE_DUMP=1) and the alignment of two pipelines

Pure text: no I/O, no triton import.
"""
