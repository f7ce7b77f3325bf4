"""Bounded step logs: what a chatty test costs with and without the log limit.

Runs `run_logged` (the runner every build and test goes through) on a command that prints
SIZE MB, with the default limit and with none (0), and reports the wall time and the size
of the log. Usage: python bench/log_limit_bench.py [--mb 100] [--repeat 3]
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from pathlib import Path

from tritonbisect.core.loglimit import DEFAULT_LOG_LIMIT, LOG_LIMIT_ENV, format_size
from tritonbisect.core.process import run_logged


def measure(mb: int, limit: int, repeat: int) -> tuple[float, int]:
    cmd = f"head -c {mb * 1024 * 1024} /dev/zero | tr '\\0' 'x' | fold -w 100"
    times, size = [], 0
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(repeat):
            log = Path(tmp) / f"test-{i}.log"
            env = dict(os.environ, **{LOG_LIMIT_ENV: str(limit)})
            start = time.monotonic()
            run_logged(cmd, cwd=Path(tmp), env=env, log=log)
            times.append(time.monotonic() - start)
            size = log.stat().st_size
            log.unlink()
    return statistics.median(times), size


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=int, default=100)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    print("| output | limit | median wall time | log size |\n| --- | --- | --- | --- |")
    for limit in (DEFAULT_LOG_LIMIT, 0):
        seconds, size = measure(args.mb, limit, args.repeat)
        shown = format_size(limit) if limit else "none (0)"
        print(f"| {args.mb} MiB | {shown} | {seconds:.2f} s | {format_size(size)} |")


if __name__ == "__main__":
    main()
