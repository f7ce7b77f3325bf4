"""The domains a bisect can walk: Triton, LLVM, PyTorch, published wheels, and the user's own commands."""
