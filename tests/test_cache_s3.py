"""`--cache-url s3://...` against a real S3-compatible server on 127.0.0.1 (moto's server mode).

Two sessions with separate workdirs (nothing shared but the bucket): the second, over an
overlapping range, builds nothing. Two processes publishing the same key at once leave one
whole entry. The credentials never reach a file the sessions write.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from engine_repo import BUILD, TEST, journal, last_json, linear, tb
from s3_server import SECRET, moto_server

boto3 = pytest.importorskip("boto3")
pytest.importorskip("moto.server")



@pytest.fixture(scope="module")
def s3():
    with moto_server("tbcache") as server:
        yield server


def _env(home: Path, s3env: dict) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update(s3env)
    env["TRITONBISECT_HOME"] = str(home)
    return env


def _files_containing(root: Path, text: str) -> list[Path]:
    found = []
    for p in root.rglob("*"):
        if p.is_file() and not p.is_symlink():
            try:
                if text.encode() in p.read_bytes():
                    found.append(p)
            except OSError:
                continue
    return found


def test_second_session_over_an_overlapping_range_builds_nothing(s3, tmp_path):
    s3env, client = s3
    from engine_repo import env_for

    repo = tmp_path / "repo"
    shas = linear(repo, 24, culprit=15, broken=[9, 10])
    url = "s3://tbcache/runs/a"
    first_home, second_home = tmp_path / "h1", tmp_path / "h2"
    args = ["run", "--repo", str(repo), "--build", BUILD, "--artifact", "out", "--test", TEST,
            "--cache-url", url, "--json"]
    one = tb(*args, "--good", shas[0], "--bad", "main", cwd=repo, home=first_home, timeout=180,
             env={**env_for(first_home), **s3env})
    assert one.returncode == 0, one.stderr[-3000:]
    out1 = last_json(one.stdout)
    assert out1["culprit"] == shas[15] and out1["builds"] > 0
    keys = [o["Key"] for o in client.list_objects_v2(Bucket="tbcache", Prefix="runs/a/")["Contents"]]
    assert any(k.startswith("runs/a/entries/") for k in keys)
    assert not any(k.startswith("runs/a/tmp/") for k in keys)  # staged uploads were published

    # another workdir (no local cache at all), a range that overlaps the first one
    two = tb(*args, "--good", shas[4], "--bad", shas[20], cwd=repo, home=second_home, timeout=180,
             env={**env_for(second_home), **s3env})
    assert two.returncode == 0, two.stderr[-3000:]
    out2 = last_json(two.stdout)
    assert out2["culprit"] == shas[15]
    first = journal(first_home, out1["session"])
    seen = {r["commit"] for r in first}
    recs = journal(second_home, out2["session"])
    again = [r for r in recs if r["commit"] in seen]
    assert len(again) >= 3
    # every commit the first session built or found unbuildable is taken from the bucket
    assert [r["commit"][:8] for r in again if (r.get("build") or {}).get("performed")] == []
    assert all(r["build"]["cached"] for r in again)
    assert out2["builds"] == len({r["commit"] for r in recs if r["build"].get("performed")}) < len(recs)
    for home in (first_home, second_home):
        assert _files_containing(home, SECRET) == []


_PUT = """
import sys, pathlib
from tritonbisect.builds.store import open_cache
store = open_cache(sys.argv[1], workdir=pathlib.Path(sys.argv[2]))
art = pathlib.Path(sys.argv[2]) / "wheel.whl"
art.write_bytes(sys.argv[3].encode() * 400000)
print(store.put("k" * 64, art, {"commit": "abc", "recipe": "t"}))
"""


def test_two_drivers_publishing_one_key_at_once_leave_one_whole_entry(s3, tmp_path):
    s3env, client = s3
    url = "s3://tbcache/race"
    procs = []
    for name in ("a", "b"):
        work = tmp_path / name
        work.mkdir()
        procs.append(subprocess.Popen([sys.executable, "-c", _PUT, url, str(work), "x"],
                                      env=_env(work, s3env), stdout=subprocess.PIPE, text=True))
    assert all(p.wait(timeout=120) == 0 for p in procs)
    third = tmp_path / "c"
    third.mkdir()
    from tritonbisect.builds.s3store import S3Store

    store = S3Store(url, third, client=client)
    got = store.get("k" * 64)
    assert got is not None and got.read_bytes() == b"x" * 400000
    names = [o["Key"] for o in client.list_objects_v2(Bucket="tbcache", Prefix="race/")["Contents"]]
    assert names == [f"race/entries/{'k' * 64}.tar"]


def test_a_failed_build_recorded_by_one_workdir_is_known_to_another(s3, tmp_path):
    _s3env, client = s3
    from tritonbisect.builds.s3store import S3Store

    log = tmp_path / "build.log"
    log.write_text("error: does not build\n")
    one = S3Store("s3://tbcache/fail", tmp_path / "one", client=client)
    two = S3Store("s3://tbcache/fail", tmp_path / "two", client=client)
    key = "f" * 64
    assert two.failure(key) is None
    one.record_failure(key, "build_failed", "exit 1", log, commit="abc123", recipe="command")
    got = two.failure(key)
    assert got is not None and got.kind == "build_failed" and got.commit == "abc123"
    assert got.log is not None and "does not build" in got.log.read_text()
    assert two.forget_failures("abc") == [key]
    assert S3Store("s3://tbcache/fail", tmp_path / "three", client=client).failure(key) is None


def test_bad_cache_urls_are_one_clear_line(tmp_path):
    repo, home = tmp_path / "repo", tmp_path / "home"
    shas = linear(repo, 4, culprit=2)
    for given, says in ((["--cache-url", "gs://b/p"], "only s3:// is supported"),
                        (["--cache-url", "s3://"], "no bucket"),
                        (["--cache-url", "s3://b/p", "--cache-dir", str(tmp_path)], "not both"),
                        (["--repo-url", str(repo)], "only applies with --executor ray")):
        proc = tb("run", "--repo", str(repo), "--good", shas[0], "--bad", "main", "--test", TEST,
                  *given, cwd=repo, home=home)
        assert proc.returncode == 2 and says in proc.stderr, proc.stderr
        assert "Traceback" not in proc.stderr and len(proc.stderr.strip().splitlines()) == 1
