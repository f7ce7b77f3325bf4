"""Reduce a failing oracle to a minimal one that still shows the same difference between a
good and a bad Triton (`tritonbisect reduce`)."""
