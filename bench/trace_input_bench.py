"""Crafted traces as a user meets them: one huge line, and a decompression bomb.

`tritonbisect info` (a subprocess, as a user runs it) on a trace whose compilation record is one
line of SIZE MB (the IR of a huge kernel, or a crafted one), plain and gzip: its wall time
and peak memory at 50, 100 and 200 MB, beside the time the line assembly the reader had
before (`buf += chunk`, then split the whole buffer at every 1 MiB chunk) takes on the same
bytes in this process. Then gzip and zstd bombs (kilobytes that decompress to 16 GiB of zeros,
or of empty lines): the time and peak memory `info` needs to refuse them. Writes its section
of bench/RESULTS.md.

    python bench/trace_input_bench.py [--sizes 50,100,200] [--no-write]
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
import zlib
from pathlib import Path

import zstandard

sys.path.insert(0, str(Path(__file__).resolve().parent))
from results_md import write_section  # noqa: E402

CHUNK = 1 << 20
TITLE = "Untrusted trace input: one huge line, decompression bombs"


def _record_line(mb: int) -> bytes:
    ttir = "module {\n" + "// " + "x" * (mb << 20) + "\n}\n"
    record = {"event_type": "compilation", "payload": {"metadata": {"hash": "h", "name": "k"},
                                                     "file_content": {"k.ttir": ttir}}}
    return (json.dumps(record) + "\n").encode()


def _info(path: Path, env: dict[str, str] | None = None) -> tuple[float, float, int, str]:
    """(wall seconds, peak RSS MiB, exit code, last stderr line) of `tritonbisect info PATH`."""
    script = ("import resource, subprocess, sys, time\n"
              "t = time.monotonic()\n"
              "p = subprocess.run([sys.executable, '-m', 'tritonbisect.cli', 'info', sys.argv[1]],"
              " capture_output=True, text=True)\n"
              "print(time.monotonic() - t, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024,"
              " p.returncode, repr((p.stderr.strip().splitlines() or [''])[-1]))\n")
    out = subprocess.run([sys.executable, "-c", script, str(path)], capture_output=True, text=True, check=True,
                         env=env).stdout.split(" ", 3)
    return float(out[0]), float(out[1]), int(out[2]), eval(out[3])  # noqa: S307 - our own repr


def _quadratic_assembly(path: Path) -> float:
    """The line assembly the reader had before, on the file's bytes: seconds."""
    start = time.monotonic()
    buf = b""
    with path.open("rb") as fh:
        while chunk := fh.read(CHUNK):
            buf += chunk
            *complete, buf = buf.split(b"\n")
    return time.monotonic() - start


def _bomb(kind: str, gib: int, byte: bytes) -> bytes:
    block = byte * (64 << 20)
    if kind == "gzip":
        member = gzip.compress(block, compresslevel=9)
        return member * (gib * 16)
    cctx = zstandard.ZstdCompressor(level=19)
    frame = cctx.compress(block)
    return frame * (gib * 16)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="50,100,200")
    parser.add_argument("--no-write", action="store_true")
    args = parser.parse_args()
    rows = ["| line | trace | `info` wall time | `info` peak memory | the old line assembly alone |",
            "| --- | --- | --- | --- | --- |"]
    with tempfile.TemporaryDirectory() as tmp:
        for mb in (int(s) for s in args.sizes.split(",")):
            line = _record_line(mb)
            plain = Path(tmp) / f"line{mb}.ndjson"
            plain.write_bytes(line)
            packed = Path(tmp) / f"line{mb}.ndjson.gz"
            packed.write_bytes(gzip.compress(line, compresslevel=1))
            old = _quadratic_assembly(plain)
            for path, kind in ((plain, "plain"), (packed, "gzip")):
                seconds, rss, code, _ = _info(path)
                assert code == 0, f"info failed on {path}"
                rows.append(f"| {mb} MB | {kind} | {seconds:.1f} s | {rss:.0f} MiB | "
                            f"{f'{old:.1f} s' if kind == 'plain' else '—'} |")
                print(rows[-1], flush=True)
        rows += ["", "| bomb | file size | decompresses to | `info` refuses after | peak memory | its message |",
                 "| --- | --- | --- | --- | --- | --- |"]
        for kind in ("gzip", "zstd"):
            for byte, what in ((b"\0", "one line of zeros"), (b"\n", "empty lines")):
                path = Path(tmp) / f"bomb.{kind}.ndjson"
                path.write_bytes(_bomb(kind, 16, byte))
                seconds, rss, code, line = _info(path, env={k: v for k, v in os.environ.items()
                                                            if k != "TRITONBISECT_TRACE_LIMIT"})
                assert code == 2, f"the {kind} bomb was not refused"
                said = line[line.index(str(path)) + len(str(path)):].lstrip(":0123456789 ")
                rows.append(f"| {kind}, {what} | {path.stat().st_size // 1024} KiB | 16 GiB | {seconds:.1f} s | "
                            f"{rss:.0f} MiB | `{said.split(' (')[0]}` |")
                print(rows[-1], flush=True)
    body = "\n".join([
        f"`python bench/trace_input_bench.py` on {platform.node()} ({os.cpu_count()} cores, shared with other "
        f"jobs), zlib {zlib.ZLIB_VERSION}, zstandard {zstandard.__version__}. `info` is the whole command in a "
        "subprocess: start-up, reading and joining the line, JSON, the listing. The old line assembly is the "
        "reader's loop before this change (`buf += chunk; *complete, buf = buf.split(b\"\\n\")`), timed on "
        "the same file alone: it copies the growing buffer at every 1 MiB chunk, so its time grows with the "
        "square of the line. A bomb stops at the default limits (`TRITONBISECT_TRACE_LIMIT`): 4 GiB of "
        "decompressed text per file, and a line of at most a quarter of that, which is the memory a bomb of one "
        "endless line costs before it is refused; each decompression step returns at most one 1 MiB gzip "
        "piece or one 4 KiB zstd slice's output.",
        "",
        *rows,
    ])
    print(body)
    if not args.no_write:
        write_section(TITLE, body)


if __name__ == "__main__":
    main()
