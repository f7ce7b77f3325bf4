"""Triton: its wheel recipe, its bisector, its LLVM pin, nightlies as free builds."""
