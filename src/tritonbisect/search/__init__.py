"""The pure search: candidates and verdicts in, the next commits to test (or the answer) out. No I/O."""
