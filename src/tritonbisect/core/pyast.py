"""Thread-safe parsing of Python source.

CPython 3.11 builds Python AST objects with interpreter-wide recursion bookkeeping that
threads can corrupt: two threads parsing at once fail with `SystemError: AST constructor
recursion depth mismatch` (python/cpython#106905). Oracles are generated and self-checked
from thread pools, so every parse that yields AST objects goes through one lock.
"""

from __future__ import annotations

import ast
import symtable
import threading
from typing import Any

_LOCK = threading.Lock()


def parse(source: str) -> ast.Module:
    with _LOCK:
        return ast.parse(source)


def literal_eval(text: str) -> Any:
    with _LOCK:
        return ast.literal_eval(text)


def symbol_table(source: str, filename: str) -> symtable.SymbolTable:
    with _LOCK:
        return symtable.symtable(source, filename, "exec")
