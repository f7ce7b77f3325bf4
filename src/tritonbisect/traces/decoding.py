"""The lines of a trace file: plain text, concatenated gzip members or zstd frames.

The compression of a file is told by its first bytes, never by its name. A trace is input
from someone else (a file attached to an issue): its decompressed text is bounded
(`$TRITONBISECT_TRACE_LIMIT`, 4 GiB by default per file, a line a quarter of it, so a few
kilobytes of zstd cannot fill the memory), each call to a decompressor returns a bounded
piece, and lines are joined from their pieces once (a 200 MB line costs what reading it costs).
"""

from __future__ import annotations

import itertools
import os
import zlib
from collections.abc import Generator, Iterator
from pathlib import Path
from typing import Any

from tritonbisect.core.errors import InputError
from tritonbisect.core.loglimit import format_size, parse_size

GZIP_MAGIC = b"\x1f\x8b"
ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"
LIMIT_ENV = "TRITONBISECT_TRACE_LIMIT"
DEFAULT_LIMIT = 4 * 1024**3
_CHUNK = 1 << 20
# zstd has no output bound per call: a slice of 4 KiB of input expands to at most ~128 MiB
# (its best ratio, RLE blocks, is about 32768:1)
_ZSTD_SLICE = 4096


def trace_limit() -> int:
    """The most decompressed bytes one trace file may hold (0: no limit)."""
    value = os.environ.get(LIMIT_ENV, "").strip()
    if not value:
        return DEFAULT_LIMIT
    try:
        return parse_size(value)
    except ValueError as exc:
        raise InputError(f"{LIMIT_ENV}={value}: {exc}") from None


def sniff(path: Path) -> str:
    with path.open("rb") as fh:
        head = fh.read(4)
    if head.startswith(GZIP_MAGIC):
        return "gzip"
    if head.startswith(ZSTD_MAGIC):
        return "zstd"
    return "none"


class _Framed:
    """Decompressors for concatenated gzip members or zstd frames, one per member."""

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self._zstd = None
        if kind == "zstd":
            try:
                import zstandard
            except ImportError as exc:  # pragma: no cover - zstandard is a dependency
                raise InputError("reading a zstd trace needs the 'zstandard' package") from exc
            self._zstd = zstandard.ZstdDecompressor()

    def new(self) -> Any:
        if self.kind == "gzip":
            return zlib.decompressobj(wbits=31)
        assert self._zstd is not None  # made in __init__ for kind "zstd"
        return self._zstd.decompressobj()

    def feed(self, obj: Any, data: bytes) -> Generator[bytes, None, bytes]:
        """Yield what `data` decompresses to, in pieces of bounded size; return the input left
        over after the member ended (b"" when it goes on)."""
        if self.kind == "gzip":
            out = obj.decompress(data, _CHUNK)
            yield out
            # a full piece may leave input (unconsumed_tail) or output inside zlib
            while not obj.eof and (obj.unconsumed_tail or len(out) == _CHUNK):
                out = obj.decompress(obj.unconsumed_tail, _CHUNK)
                yield out
            return bytes(obj.unused_data) if obj.eof else b""
        for start in range(0, len(data), _ZSTD_SLICE):
            yield obj.decompress(data[start : start + _ZSTD_SLICE])
            if obj.eof:
                return bytes(obj.unused_data) + data[start + _ZSTD_SLICE :]
        return b""


def _decompressed_chunks(path: Path, kind: str, limit: int) -> Iterator[bytes]:
    framed = _Framed(kind)
    obj = framed.new()
    member_start = 0  # byte offset where the current member/frame began
    consumed = 0  # compressed bytes fed so far
    fed_member = False
    total = 0
    with path.open("rb") as fh:
        while chunk := fh.read(_CHUNK):
            data = chunk
            while data:
                pieces = framed.feed(obj, data)
                try:
                    while True:
                        out = next(pieces)
                        total += len(out)
                        if limit and total > limit:
                            raise InputError(
                                f"{path}: its {kind} data decompresses to more than {format_size(limit)} (a "
                                f"decompression bomb, or a trace larger than the limit); to read it anyway, "
                                f"raise the limit: {LIMIT_ENV}={max(2 * limit, 1024**3) // 1024**3}G"
                            )
                        if out:
                            yield out
                except StopIteration as stop:
                    unused: bytes = stop.value
                except InputError:
                    raise
                except Exception as exc:  # zlib.error / zstandard.ZstdError
                    raise InputError(
                        f"{path}: corrupt {kind} data in the member starting at byte {member_start} ({exc})"
                    ) from None
                fed_member = True
                if obj.eof:
                    consumed += len(data) - len(unused)
                    member_start = consumed
                    obj = framed.new()
                    fed_member = False
                    data = unused
                    # padding zeros between members
                    if data and not data.strip(b"\x00"):
                        consumed += len(data)
                        data = b""
                else:
                    consumed += len(data)
                    data = b""
    if fed_member and not obj.eof:
        raise InputError(
            f"{path}: truncated {kind} data: the member starting at byte {member_start} "
            f"ends early at byte {consumed} (the file was cut off)"
        )


def _raw_chunks(path: Path) -> Iterator[bytes]:
    with path.open("rb") as fh:
        while chunk := fh.read(_CHUNK):
            yield chunk


def iter_lines(path: Path, kind: str) -> Iterator[tuple[int, bytes, bool]]:
    """(line number from 1, line bytes, is_last) for each non-empty line of the decompressed
    text. A line may be at most a quarter of the limit (1 GiB by default): a bomb of one endless
    line must not be held whole in memory before the limit stops it."""
    limit = trace_limit()
    longest = limit // 4
    chunks = _raw_chunks(path) if kind == "none" else _decompressed_chunks(path, kind, limit)
    partial: list[bytes] = []  # the pieces of the line not ended yet: joined once, when it ends
    held = 0
    line_no = 0  # the number of the last line ended
    pending: tuple[int, bytes] | None = None
    for chunk in chunks:
        first_nl = chunk.find(b"\n")
        if first_nl < 0:
            partial.append(chunk)
            held += len(chunk)
            if longest and held > longest:
                raise InputError(
                    f"{path}:{line_no + 1}: a line longer than {format_size(longest)} (a decompression bomb, or a "
                    f"record larger than the limit); to read it anyway, raise the limit: "
                    f"{LIMIT_ENV}={max(2 * limit, 1024**3) // 1024**3}G"
                )
            continue
        if not chunk.strip(b"\n"):  # newlines only: empty lines, counted in C
            if partial:
                if pending is not None:
                    yield pending[0], pending[1], False
                pending = (line_no + 1, b"".join(partial))
            line_no += len(chunk)
            partial, held = [], 0
            continue
        pieces = chunk.split(b"\n")
        partial.append(pieces[0])
        ended = [(line_no + 1, b"".join(partial))]
        # the non-empty lines wholly in this chunk, picked in C: gigabytes of empty lines cost no
        # Python step each (pieces[i] is line line_no + 1 + i)
        ended += zip(itertools.compress(range(line_no + 2, line_no + len(pieces)), pieces[1:-1]),
                     filter(None, pieces[1:-1]), strict=True)
        line_no += len(pieces) - 1
        partial = [pieces[-1]] if pieces[-1] else []
        held = len(pieces[-1])
        for number, raw in ended:
            if not raw:
                continue
            if pending is not None:
                yield pending[0], pending[1], False
            pending = (number, raw)
    if partial:
        if pending is not None:
            yield pending[0], pending[1], False
        pending = (line_no + 1, b"".join(partial))
    if pending is not None:
        yield pending[0], pending[1], True
