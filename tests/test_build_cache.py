"""ArtifactCache: keys, atomic put, checksum-verified get, failure records, gc, the CLI."""

from __future__ import annotations

import json
import multiprocessing
import os
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from tritonbisect.builds.cache import ArtifactCache, human_size, parse_size
from tritonbisect.commands.artifact_cache import cache_group


def _file(tmp_path: Path, name: str, data: bytes) -> Path:
    p = tmp_path / name
    p.write_bytes(data)
    return p


def _key(commit: str = "a" * 40, **over) -> str:
    args = dict(repo_id="r", commit=commit, recipe="triton", config={"debug": False},
                python_abi="cpython-311", toolchain="gcc 12")
    args.update(over)
    return ArtifactCache.key(**args)


def test_key_is_canonical_and_sensitive():
    k = _key()
    assert len(k) == 64 and int(k, 16) >= 0
    assert k == ArtifactCache.key("r", "a" * 40, "triton", {"debug": False}, "cpython-311", "gcc 12")
    # dict order does not matter, every field does
    assert ArtifactCache.key("r", "c", "x", {"a": 1, "b": 2}, "p", "t") == ArtifactCache.key(
        "r", "c", "x", {"b": 2, "a": 1}, "p", "t")
    others = {_key(commit="b" * 40), _key(recipe="llvm"), _key(config={"debug": True}),
              _key(python_abi="cpython-312"), _key(toolchain="clang 17"), _key(repo_id="s")}
    assert k not in others and len(others) == 6


def test_put_get_file_and_directory(tmp_path):
    cache = ArtifactCache(tmp_path / "cache")
    wheel = _file(tmp_path, "triton-3.6.0+gitabc-cp311-linux_x86_64.whl", b"wheel bytes")
    k = _key()
    assert cache.get(k) is None
    stored = cache.put(k, wheel, {"commit": "a" * 40, "recipe": "triton"})
    assert stored.name == wheel.name and stored.read_bytes() == b"wheel bytes"
    assert wheel.exists()  # copied, not moved
    assert cache.get(k) == stored
    meta = json.loads((stored.parent / "meta.json").read_text())
    assert meta["commit"] == "a" * 40 and meta["size"] == len(b"wheel bytes")
    assert meta["files"]["."]["sha256"]

    prefix = tmp_path / "prefix"
    (prefix / "include" / "llvm").mkdir(parents=True)
    (prefix / "include" / "llvm" / "a.h").write_text("int a;\n")
    (prefix / "lib").mkdir()
    (prefix / "lib" / "libx.a").write_bytes(b"\0" * 1000)
    (prefix / "lib" / "libx.so").symlink_to("libx.a")
    k2 = _key(recipe="llvm")
    got = cache.put(k2, prefix, {"commit": "b" * 40, "recipe": "llvm"}, move=True)
    assert not prefix.exists()  # moved
    assert cache.get(k2) == got
    assert (got / "include" / "llvm" / "a.h").read_text() == "int a;\n"
    assert os.readlink(got / "lib" / "libx.so") == "libx.a"
    sizes = {e.key: e.size for e in cache.entries()}
    assert sizes == {k: 11, k2: 1007}
    assert not list(cache.tmp_dir.iterdir())  # no staging leftovers


def test_corrupt_entry_is_removed_with_a_warning(tmp_path, caplog):
    cache = ArtifactCache(tmp_path / "cache")
    k = _key()
    stored = cache.put(k, _file(tmp_path, "t.whl", b"0123456789"), {"commit": "a" * 40})
    data = bytearray(stored.read_bytes())
    data[3] ^= 0xFF  # flip a byte, same size
    stored.write_bytes(bytes(data))
    with caplog.at_level("WARNING", logger="tritonbisect.builds.cache"):
        assert cache.get(k) is None
    assert "corrupt" in caplog.text and "checksum" in caplog.text
    assert not (cache.entries_dir / k).exists()
    # a directory entry with a missing file, and one with unreadable meta
    d = tmp_path / "d"
    d.mkdir()
    (d / "x").write_text("x")
    (d / "y").write_text("y")
    k2 = _key(recipe="llvm")
    got = cache.put(k2, d, {})
    (got / "y").unlink()
    assert cache.get(k2) is None
    k3 = _key(recipe="z")
    got = cache.put(k3, _file(tmp_path, "z", b"z"), {})
    (got.parent / "meta.json").write_text("{not json")
    assert cache.get(k3) is None and cache.entries() == []


def test_put_existing_key_keeps_intact_entry_and_replaces_corrupt(tmp_path):
    cache = ArtifactCache(tmp_path / "cache")
    k = _key()
    first = cache.put(k, _file(tmp_path, "a.whl", b"first"), {})
    again = cache.put(k, _file(tmp_path, "a.whl", b"second"), {})
    assert again == first and first.read_bytes() == b"first"
    first.write_bytes(b"broken")
    third = cache.put(k, _file(tmp_path, "a.whl", b"third"), {})
    assert third.read_bytes() == b"third" and cache.get(k) == third


def test_failure_records(tmp_path):
    cache = ArtifactCache(tmp_path / "cache")
    k = _key()
    log = _file(tmp_path, "build.log", b"foo.cpp:1: error: nope\n")
    assert cache.failure(k) is None
    cache.record_failure(k, "build_failed", "foo.cpp:1: error: nope", log, commit="a" * 40, recipe="triton")
    rec = cache.failure(k)
    assert rec is not None and rec.kind == "build_failed" and rec.commit == "a" * 40
    assert rec.log is not None and rec.log.read_bytes() == log.read_bytes()
    log.unlink()  # the record keeps its own copy
    assert cache.failure(k).log.exists()
    assert [r.key for r in cache.failures()] == [k]
    cache.forget_failure(k)
    assert cache.failure(k) is None
    cache.record_failure(k, "build_failed", "x", None, commit="a" * 40)
    cache.put(k, _file(tmp_path, "ok.whl", b"ok"), {})  # a later success supersedes it
    assert cache.failure(k) is None
    cache.record_failure(_key(commit="c" * 40), "build_failed", "y", None, commit="c" * 40)
    cache.record_failure(_key(commit="d" * 40), "build_failed", "y", None, commit="d" * 40)
    assert len(cache.forget_failures(commit="cccc")) == 1
    assert len(cache.forget_failures()) == 1


def test_gc_removes_least_recently_used(tmp_path):
    cache = ArtifactCache(tmp_path / "cache")
    keys = []
    for i in range(4):
        k = _key(commit=str(i) * 40)
        keys.append(k)
        cache.put(k, _file(tmp_path, f"{i}.whl", b"x" * 100), {"commit": str(i) * 40})
        os.utime(cache.entries_dir / k / ".last_used", (1000 + i, 1000 + i))
    assert cache.get(keys[0]) is not None  # use the oldest: now the most recent
    removed = cache.gc(250)
    assert removed == [keys[1], keys[2]]
    assert {e.key for e in cache.entries()} == {keys[0], keys[3]}
    assert cache.gc(10**9) == []
    assert cache.remove(keys[3]) and not cache.remove(keys[3])
    assert cache.remove_commit("0000") == [keys[0]]


def _put_worker(root: str, i: int) -> str:
    cache = ArtifactCache(Path(root))
    src = Path(root).parent / f"src{i}"
    src.mkdir()
    for j in range(20):
        (src / f"f{j}").write_bytes(os.urandom(2000))
    cache.put(ArtifactCache.key("r", "same", "llvm", {}, "none", "t"), src, {"commit": "same"})
    return "ok"


def test_concurrent_puts_of_one_key_from_two_processes(tmp_path):
    root = tmp_path / "cache"
    ArtifactCache(root)
    ctx = multiprocessing.get_context("fork")
    with ctx.Pool(4) as pool:
        assert pool.starmap(_put_worker, [(str(root), i) for i in range(4)]) == ["ok"] * 4
    cache = ArtifactCache(root)
    [entry] = cache.entries()
    assert cache.get(entry.key) is not None
    assert not list(cache.tmp_dir.iterdir())


def test_sizes():
    assert parse_size("20G") == 20 << 30 and parse_size("500M") == 500 << 20
    assert parse_size("1.5KiB") == 1536 and parse_size("42") == 42
    with pytest.raises(ValueError):
        parse_size("lots")
    assert human_size(512) == "512 B" and human_size(3 << 30) == "3.0 GiB"


def test_cache_cli(tmp_path):
    cache = ArtifactCache(tmp_path / "cache")
    k1 = _key(commit="1" * 40)
    k2 = _key(commit="2" * 40)
    cache.put(k1, _file(tmp_path, "a.whl", b"a" * 3000), {"commit": "1" * 40, "recipe": "triton"})
    cache.put(k2, _file(tmp_path, "b.whl", b"b" * 5000), {"commit": "2" * 40, "recipe": "triton"})
    os.utime(cache.entries_dir / k1 / ".last_used", (time.time() - 100,) * 2)
    cache.record_failure(_key(commit="3" * 40), "build_failed", "error: x", None, commit="3" * 40, recipe="triton")
    runner = CliRunner()
    base = ["--workdir", str(tmp_path)]
    res = runner.invoke(cache_group, [*base, "list"])
    assert res.exit_code == 0, res.output
    assert "2.9 KiB" in res.output and "4.9 KiB" in res.output and "111111111111" in res.output
    assert "1 recorded build failure" in res.output
    res = runner.invoke(cache_group, [*base, "gc", "--max-size", "6K"])
    assert res.exit_code == 0 and k1[:12] in res.output
    assert [e.key for e in cache.entries()] == [k2]
    res = runner.invoke(cache_group, [*base, "remove", "--commit", "2222222"])
    assert res.exit_code == 0 and cache.entries() == []
    res = runner.invoke(cache_group, [*base, "remove", "f" * 64])
    assert res.exit_code != 0 and "no cache entry" in res.output
    res = runner.invoke(cache_group, [*base, "forget-failures"])
    assert res.exit_code == 0 and "1" in res.output and cache.failures() == []
    res = runner.invoke(cache_group, [*base, "gc", "--max-size", "lots"])
    assert res.exit_code == 2


def test_cache_subcommands_take_workdir_after_their_name(tmp_path):
    """`tritonbisect cache list --workdir D`, like every other command, through the real CLI."""
    import subprocess
    import sys

    cache = ArtifactCache(tmp_path / "cache")
    cache.put(_key(), _file(tmp_path, "w.whl", b"w" * 100), {"commit": "a" * 40, "recipe": "triton"})
    proc = subprocess.run(
        [sys.executable, "-m", "tritonbisect.cli", "cache", "list", "--workdir", str(tmp_path)],
        capture_output=True, text=True, check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert "1 entries" in proc.stdout and str(tmp_path / "cache") in proc.stdout
