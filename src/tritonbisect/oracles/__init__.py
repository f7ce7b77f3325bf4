"""Reproducer oracles generated from a trace: runtime, compile, IR and whole-program replay; their self-check."""
