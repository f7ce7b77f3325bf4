"""Parsing from many threads at once.

CPython 3.11 corrupts its AST bookkeeping when a thread switch lands inside a parse (a
finalizer run by the garbage collector is enough); the self-check pool hit it in CI.
"""

import sys
from concurrent.futures import ThreadPoolExecutor

import pytest

from tritonbisect.core import pyast

NESTED = "x = " + "(" * 40 + "1" + ")" * 40 + "\n" + "def f(a):\n    return [[a + b for b in range(3)] for _ in range(2)]\n" * 300


class _Cycle:
    def __del__(self):
        sum(range(50))  # Python code run from the collector: a chance to switch threads


@pytest.fixture
def eager_thread_switches():
    before = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    yield
    sys.setswitchinterval(before)


@pytest.mark.skipif(sys.version_info[:2] != (3, 11), reason="only CPython 3.11 corrupts concurrent parses: "
                    "elsewhere this test could not fail without the lock")
def test_concurrent_parses_all_succeed(eager_thread_switches):
    def work(_):
        for _ in range(30):
            for _ in range(200):
                garbage = _Cycle()
                garbage.self = garbage
            tree = pyast.parse(NESTED)
            assert len(tree.body) == 301
            assert pyast.literal_eval("{'a': (1, 2.5, [3])}") == {"a": (1, 2.5, [3])}
        return True

    with ThreadPoolExecutor(max_workers=8) as pool:
        assert all(pool.map(work, range(16)))
