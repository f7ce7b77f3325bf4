"""Bounded step logs: a test that prints 100 MB per run must not fill the disk.

A logged process writes into a pipe; `LogPump` copies the first half of the limit into the
log as it comes, keeps the last half in memory, and at the end writes one line saying how
much was cut, then that tail (where a failure's message usually is, and what the
classifiers read). The limit is per process: `$TRITONBISECT_LOG_LIMIT` (bytes, or a size
such as 16M; 0 keeps everything), which `--log-limit` sets for every build and test.
"""

from __future__ import annotations

import os
import re
import select
import threading
from collections import deque
from collections.abc import Mapping
from typing import BinaryIO

LOG_LIMIT_ENV = "TRITONBISECT_LOG_LIMIT"
DEFAULT_LOG_LIMIT = 16 * 1024 * 1024  # the first 8 MiB and the last 8 MiB of each process

_UNITS = {"": 1, "k": 1024, "m": 1024**2, "g": 1024**3}
_SIZE = re.compile(r"\s*(\d+)\s*([kmg]?)(?:i?b)?\s*", re.IGNORECASE)


def parse_size(text: str) -> int:
    """`16M`, `500k`, `2G`, `1048576` -> bytes; ValueError with the reason."""
    match = _SIZE.fullmatch(str(text))
    if not match:
        raise ValueError(f"expected a size such as 16M, 500k or 0 (no limit), got {text!r}")
    return int(match.group(1)) * _UNITS[match.group(2).lower()]


def log_limit(env: Mapping[str, str] | None = None) -> int:
    """The limit in bytes (0: none) from `env`, else this process's environment; a value that
    does not parse falls back to the default (it was checked where it was given)."""
    for source in (env or {}, os.environ):
        value = source.get(LOG_LIMIT_ENV)
        if value is not None and value.strip():
            try:
                return parse_size(value)
            except ValueError:
                break
    return DEFAULT_LOG_LIMIT


def format_size(n: int) -> str:
    for unit, size in (("GiB", 1024**3), ("MiB", 1024**2), ("KiB", 1024)):
        if n >= size:
            return f"{n / size:.1f} {unit}"
    return f"{n} bytes"


class LogPump:
    """Copies a pipe into `out`, keeping the first and the last `limit // 2` bytes."""

    def __init__(self, fd: int, out: BinaryIO, limit: int) -> None:
        self.fd = fd
        self.out = out
        self.head_left = limit - limit // 2
        self.tail_cap = limit // 2
        self.limit = limit
        self.tail: deque[bytes] = deque()
        self.tail_size = 0
        self.cut = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="log-pump", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while True:
            ready, _, _ = select.select([self.fd], [], [], 0.2)
            if not ready:
                if self._stop.is_set():
                    return  # a grandchild outside the group still holds the pipe: stop reading
                continue
            chunk = os.read(self.fd, 1 << 16)
            if not chunk:
                return
            self._take(chunk)

    def _take(self, chunk: bytes) -> None:
        if self.head_left > 0:
            n = min(self.head_left, len(chunk))
            self.out.write(chunk[:n])
            self.out.flush()
            self.head_left -= n
            chunk = chunk[n:]
        if not chunk:
            return
        self.tail.append(chunk)
        self.tail_size += len(chunk)
        while self.tail_size > self.tail_cap and self.tail:
            extra = self.tail_size - self.tail_cap
            first = self.tail[0]
            if len(first) <= extra:
                self.tail.popleft()
                self.tail_size -= len(first)
                self.cut += len(first)
            else:
                self.tail[0] = first[extra:]
                self.tail_size -= extra
                self.cut += extra

    def finish(self, wait: float = 10.0) -> None:
        """Read what is left (up to `wait` seconds), then write the cut line and the tail."""
        self._thread.join(timeout=wait)
        self._stop.set()
        self._thread.join()
        os.close(self.fd)
        if self.cut:
            self.out.write(
                f"\n# tritonbisect: {format_size(self.cut)} of output cut here; the log keeps the first "
                f"and the last {format_size(self.tail_cap)} (limit {format_size(self.limit)}: "
                f"--log-limit or ${LOG_LIMIT_ENV}, 0 keeps everything)\n".encode()
            )
        for chunk in self.tail:
            self.out.write(chunk)
        self.out.flush()
