"""A crafted trace gets nothing out of the tool: no file from outside its folder in an oracle's
blobs/, no write outside --out, bounded decompression, no terminal escapes on the screen.

Each trace is the real H100 trace of `vadd` (shared/traces) with one thing changed, run through
the CLI as a user would run it on a trace downloaded from an issue.
"""

from __future__ import annotations

import gzip
import json
import os
from pathlib import Path

import pytest
import zstandard

from oracle_support import cli, needs_traces, scenario

pytestmark = needs_traces

SECRET = b"-----BEGIN OPENSSH PRIVATE KEY-----\nnot a real key\n"


def _records(name: str = "vadd") -> list[dict]:
    raw = next((scenario(name) / "logs").glob("*.ndjson"))
    return [json.loads(line) for line in raw.read_text(encoding="utf-8").splitlines() if line.strip()]


def _write(path: Path, records: list[dict]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


def _home_with_a_key(tmp_path: Path) -> tuple[Path, Path]:
    home = tmp_path / "home"
    key = home / ".ssh" / "id_rsa"
    key.parent.mkdir(parents=True)
    key.write_bytes(SECRET)
    return home, key


def _files_holding(root: Path, data: bytes) -> list[Path]:
    return [p for p in root.rglob("*") if p.is_file() and not p.is_symlink() and data in p.read_bytes()]


def _with_blob(blob_path: str) -> list[dict]:
    """vadd's records with the first launch's x_ptr blob recorded at `blob_path`."""
    records = _records()
    launch = next(r for r in records if r.get("event_type") == "launch")
    launch["extracted_args"]["x_ptr"]["blob_path"] = blob_path
    return records


@pytest.mark.parametrize("how", ["bare name", "absolute path", "climbing path", "link in saved_tensors"])
def test_a_crafted_blob_path_brings_no_file_from_outside_the_traces_folder(tmp_path: Path, how: str) -> None:
    home, key = _home_with_a_key(tmp_path)
    downloads = home / "Downloads"  # the trace was saved there, beside nothing else of its own
    blob = {
        "bare name": "id_rsa",
        "absolute path": str(key),
        "climbing path": "/tmp/tb_traces/vadd/logs/saved_tensors/../../../../home/.ssh/id_rsa",
        "link in saved_tensors": "/tmp/tb_traces/vadd/logs/saved_tensors/c1/planted.bin",
    }[how]
    if how == "link in saved_tensors":
        link = downloads / "saved_tensors" / "c1" / "planted.bin"
        link.parent.mkdir(parents=True)
        link.symlink_to(key)
    trace = _write(downloads / "trace.ndjson", _with_blob(blob))
    out = tmp_path / "oracle"
    proc = cli("repro", str(trace), "--kernel", "add_kernel", "--launch-id", "0", "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    assert "blob of 'x_ptr' not found in the trace's own saved_tensors/" in proc.stdout
    assert _files_holding(out, SECRET) == []
    context = json.loads((out / "context.json").read_text())
    x = next(a for a in context["args"] if a["name"] == "x_ptr")
    assert x["init"]["source"] != "blob"


def test_the_traces_own_blobs_are_still_copied(tmp_path: Path) -> None:
    """The control: a blob that is in the trace's saved_tensors/ (a copy of the trace, whose
    records still name the capture machine's paths) is found and copied."""
    home, _key = _home_with_a_key(tmp_path)
    downloads = home / "Downloads"
    trace = _write(downloads / "trace.ndjson", _records())
    recorded = next(r for r in _records() if r.get("event_type") == "launch")["extracted_args"]["x_ptr"]["blob_path"]
    tail = recorded.split("saved_tensors/", 1)[1]
    src = scenario("vadd") / "logs" / "saved_tensors" / tail
    (downloads / "saved_tensors" / tail).parent.mkdir(parents=True)
    (downloads / "saved_tensors" / tail).write_bytes(src.read_bytes())
    out = tmp_path / "oracle"
    proc = cli("repro", str(trace), "--kernel", "add_kernel", "--launch-id", "0", "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    context = json.loads((out / "context.json").read_text())
    x = next(a for a in context["args"] if a["name"] == "x_ptr")
    assert x["init"]["source"] == "blob" and (out / x["init"]["file"]).read_bytes() == src.read_bytes()


def _renamed(name: str) -> list[dict]:
    records = _records()
    for r in records:
        if r.get("event_type") == "compilation":
            r["payload"]["metadata"]["name"] = name
        elif r.get("event_type") == "launch":
            r["name"] = name
            r["compilation_metadata"]["name"] = name
    return records


@pytest.mark.parametrize("stage", ["ttir", "ttgir"])
def test_a_kernel_name_that_climbs_writes_nothing_outside_out(tmp_path: Path, stage: str) -> None:
    trace = _write(tmp_path / "t" / "trace.ndjson", _renamed("../../../escaped"))
    out = tmp_path / "a" / "b" / "oracle"
    proc = cli("repro", str(trace), "--kernel", "../../../escaped", "--from", stage, "--out", str(out))
    outside = [p for p in tmp_path.rglob("*") if p.is_file() and not p.is_relative_to(out)
               and not p.is_relative_to(tmp_path / "t")]
    assert outside == []
    assert proc.returncode == 0, proc.stderr
    assert (out / f"escaped.{stage}").is_file()


def test_escape_sequences_in_kernel_names_never_reach_the_terminal(tmp_path: Path) -> None:
    evil = "add_kernel\x1b]0;owned\x07\x1b[2J\x1b[1A\r"
    trace = _write(tmp_path / "trace.ndjson", _renamed(evil))
    for args in (["info", str(trace)], ["info", str(trace), "--kernel", "nope"],
                 ["repro", str(trace), "--kernel", "nope", "--out", str(tmp_path / "o")]):
        proc = cli(*args)
        assert "Traceback" not in proc.stderr
        for stream in (proc.stdout, proc.stderr):
            assert "\x1b" not in stream and "\r" not in stream and "\x07" not in stream
    proc = cli("info", str(trace))
    assert proc.returncode == 0 and "kernel add_kernel" in proc.stdout


# --- decompression bombs and huge lines -------------------------------------------------


def _bomb(kind: str, size: int, byte: bytes) -> bytes:
    block = byte * (1 << 20)
    if kind == "gzip":
        return gzip.compress(block, compresslevel=9) * (size >> 20)
    return zstandard.ZstdCompressor(level=19).compress(block * (size >> 20))


@pytest.mark.parametrize("kind", ["gzip", "zstd"])
@pytest.mark.parametrize("byte,said", [(b"\0", ("a line longer than 4.0 MiB", "decompresses to more than 16.0 MiB")),
                                       (b"\n", ("decompresses to more than 16.0 MiB",))])
def test_a_decompression_bomb_is_stopped_at_the_limit(tmp_path: Path, kind: str, byte: bytes,
                                                      said: tuple[str, ...]) -> None:
    """Kilobytes that decompress to 64 MiB: one endless line stops at a quarter of the limit (so
    it is never held whole; one zstd slice may already pass the limit), many lines at the limit."""
    path = tmp_path / "bomb.ndjson.gz"
    path.write_bytes(_bomb(kind, 64 << 20, byte))
    assert path.stat().st_size < 1 << 20
    proc = cli("info", str(path), env={**os.environ, "TRITONBISECT_TRACE_LIMIT": "16M"})
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and any(s in lines[0] for s in said), proc.stderr
    assert "TRITONBISECT_TRACE_LIMIT=" in lines[0]
    bad = cli("info", str(path), env={**os.environ, "TRITONBISECT_TRACE_LIMIT": "lots"})
    assert bad.returncode == 2 and "TRITONBISECT_TRACE_LIMIT=lots" in bad.stderr and "Traceback" not in bad.stderr


def test_a_compressed_trace_under_the_limit_reads_as_before(tmp_path: Path) -> None:
    path = tmp_path / "vadd.ndjson.zst"
    text = "".join(json.dumps(r) + "\n" for r in _records())
    cctx = zstandard.ZstdCompressor()
    path.write_bytes(cctx.compress(text[: len(text) // 2].encode()) + cctx.compress(text[len(text) // 2 :].encode()))
    proc = cli("info", str(path), env={**os.environ, "TRITONBISECT_TRACE_LIMIT": "16M"})
    assert proc.returncode == 0, proc.stderr
    assert "zstd compression" in proc.stdout and "2 launches" in proc.stdout


def test_a_line_of_many_chunks_is_read_whole(tmp_path: Path) -> None:
    """A record longer than many read chunks (the IR of a huge kernel) joins into one line,
    in a gzip trace too; the time this takes is in bench/trace_line_bench.py."""
    records = _records()
    comp = next(r for r in records if r.get("event_type") == "compilation")
    ttir = comp["payload"]["file_content"]["add_kernel.ttir"]
    comp["payload"]["file_content"]["add_kernel.ttir"] = ttir + "// " + "x" * (24 << 20) + "\n"
    text = "".join(json.dumps(r) + "\n" for r in records).encode()
    path = tmp_path / "big.ndjson.gz"
    path.write_bytes(gzip.compress(text, compresslevel=1))
    out = tmp_path / "o"
    proc = cli("repro", str(path), "--kernel", "add_kernel", "--from", "ttir", "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    written = (out / "add_kernel.ttir").read_text()
    assert written.startswith(ttir) and written.endswith("x" * 1000 + "\n")
