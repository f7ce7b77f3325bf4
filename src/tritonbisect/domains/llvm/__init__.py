"""LLVM: its build recipe, the bisector through Triton, the descent from a Triton LLVM bump, the compatibility map."""
