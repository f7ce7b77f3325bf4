"""Triton: its wheel recipe, its bisector and `tritonbisect triton`, its LLVM pin, nightlies as
free builds, its hunt target."""
