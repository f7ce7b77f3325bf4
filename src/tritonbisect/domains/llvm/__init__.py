"""LLVM: its build, the bisector through Triton (`tritonbisect llvm`, `pairs`), the descent
from a Triton LLVM bump, the compatibility map."""
