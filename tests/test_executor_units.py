"""The executor layer without a cluster: options, the optional Ray extra, the artifact store
interface, `run --artifact`, log copying, and the display of nodes."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from bisectors_world import error_line, run_cli
from engine_repo import BUILD, TEST, env_for, journal, last_json, linear, tb
from tritonbisect.builds.cache import ArtifactCache
from tritonbisect.builds.store import check_location, open_cache, register_store
from tritonbisect.core.errors import InputError
from tritonbisect.executors.choose import check_address, parse_resources
from tritonbisect.executors.logsync import LogMirror, read_new, relocate
from tritonbisect.reports.display import PlainUI, where_of

# --- options ---------------------------------------------------------------------------------


def test_resources_parse_as_json_or_pairs():
    assert parse_resources('{"CPU": 32}', "--build-resources") == {"CPU": 32.0}
    assert parse_resources("builder=1, GPU=0.5", "--test-resources") == {"builder": 1.0, "GPU": 0.5}
    assert parse_resources(None, "--test-resources") is None
    for bad in ("{CPU: 32}", "[1, 2]", "CPU", '{"CPU": -1}', '{"": 1}', "GPU=lots"):
        with pytest.raises(InputError, match="--build-resources"):
            parse_resources(bad, "--build-resources")


def test_ray_address_is_checked():
    assert check_address(None) == "auto"
    assert check_address("local") == "local"
    assert check_address("10.0.0.5:6379") == "10.0.0.5:6379"
    assert check_address("ray://head:10001") == "ray://head:10001"
    for bad in ("head", "head:port", ":6379", "head:70000"):
        with pytest.raises(InputError, match="--ray-address"):
            check_address(bad)


def _run_args(repo: Path, home: Path, good: str, *extra: str) -> list[str]:
    return ["run", "--repo", str(repo), "--good", good, "--bad", "main", "--build", BUILD,
            "--test", TEST, "--workdir", str(home), *extra]


def test_ray_options_without_the_ray_executor_are_refused(tmp_path, capsys):
    repo, home = tmp_path / "repo", tmp_path / "home"
    shas = linear(repo, 4, culprit=2)
    code, _out, err = run_cli(_run_args(repo, home, shas[0], "--test-resources", '{"GPU": 1}'), capsys)
    assert code == 2
    assert "--test-resources only apply with --executor ray" in error_line(err)
    assert not (home / "sessions").exists()  # refused before anything was recorded


def test_executor_ray_without_ray_installed_says_how_to_install(tmp_path, capsys, monkeypatch):
    repo, home = tmp_path / "repo", tmp_path / "home"
    shas = linear(repo, 4, culprit=2)
    monkeypatch.setitem(sys.modules, "ray", None)  # `import ray` fails as if not installed
    code, _out, err = run_cli(_run_args(repo, home, shas[0], "--executor", "ray"), capsys)
    assert code == 2
    assert error_line(err) == (
        "tritonbisect: error: --executor ray needs Ray, which is not installed here: "
        "pip install 'tritonbisect[ray]'"
    )
    from tritonbisect.compat_builder.cli import main as compat_main

    capsys.readouterr()
    code = compat_main(["fix", "--llvm-commit", "x", "--executor", "ray"])
    assert code == 2
    assert "pip install 'tritonbisect[ray]'" in error_line(capsys.readouterr().err)


def test_the_local_executor_never_imports_ray(tmp_path):
    repo, home = tmp_path / "repo", tmp_path / "home"
    shas = linear(repo, 6, culprit=3)
    code = (
        "import sys\n"
        "from tritonbisect.cli import main\n"
        f"rc = main({_run_args(repo, home, shas[0], '--jobs', '2', '--json')!r})\n"
        "assert 'ray' not in sys.modules, 'ray was imported'\n"
        "sys.exit(rc)\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], cwd=repo, env=env_for(home),
                          capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert last_json(proc.stdout)["culprit"] == shas[3]


# --- the artifact store -------------------------------------------------------------------------


def test_cache_locations(tmp_path):
    assert open_cache(None, workdir=tmp_path).root == tmp_path / "cache"
    assert open_cache(f"file://{tmp_path}/shared", workdir=tmp_path).root == tmp_path / "shared"
    assert open_cache(str(tmp_path / "nfs"), workdir=tmp_path).root == tmp_path / "nfs"
    with pytest.raises(InputError, match=r"no artifact store for gs://"):
        open_cache("gs://bucket/cache", workdir=tmp_path)
    with pytest.raises(InputError, match=r"no artifact store for gs://"):
        check_location("gs://bucket/cache")
    assert check_location("s3://bucket/cache") == "s3://bucket/cache"  # built in (--cache-url)
    (tmp_path / "file").write_text("x")
    with pytest.raises(InputError, match="not a directory"):
        check_location(str(tmp_path / "file"))


def test_a_registered_store_serves_the_recipes_unchanged(tmp_path):
    """An object store plugs in by scheme: the command recipe's cached builds go through it."""
    repo, home = tmp_path / "repo", tmp_path / "home"
    shas = linear(repo, 10, culprit=6)
    opened: list[str] = []

    def factory(location: str, workdir: Path) -> ArtifactCache:
        opened.append(location)
        return ArtifactCache(tmp_path / "objects" / location.split("://", 1)[1])

    register_store("teststore", factory)
    from tritonbisect.cli import main

    code = main(_run_args(repo, home, shas[0], "--artifact", "out", "--cache-dir", "teststore://bucket/x"))
    assert code == 0
    assert opened and set(opened) == {"teststore://bucket/x"}
    stored = ArtifactCache(tmp_path / "objects" / "bucket/x").entries()
    assert {e.commit for e in stored} >= {shas[0], shas[-1], shas[6], shas[5]}
    assert not (home / "cache").exists()  # the default store was not used


# --- run --artifact ---------------------------------------------------------------------------


def test_run_artifact_caches_builds_and_restores_them(tmp_path):
    repo, home = tmp_path / "repo", tmp_path / "home"
    shas = linear(repo, 24, culprit=15, broken=[9, 10, 11])
    shared = tmp_path / "shared-cache"
    args = ["run", "--repo", str(repo), "--good", shas[0], "--bad", "main", "--build", BUILD,
            "--artifact", "out/", "--cache-dir", str(shared), "--test", TEST, "--json"]
    first = tb(*args, cwd=repo, home=home)
    assert first.returncode == 0, first.stderr
    out = last_json(first.stdout)
    assert out["culprit"] == shas[15] and out["builds"] > 0
    assert ArtifactCache(shared).entries()  # the --cache-dir, not the workdir's
    second = tb(*args, cwd=repo, home=home)
    again = last_json(second.stdout)
    assert second.returncode == 0 and again["culprit"] == shas[15]
    assert again["builds"] == 0 and again["cached_builds"] > 0  # every build restored
    recs = journal(home, again["session"])
    assert all(r["build"]["cached"] for r in recs)
    assert {r["kind"] for r in recs} <= {"pass", "fail", "build_failed"}


def test_run_artifact_that_the_build_does_not_make_is_a_build_failure(tmp_path):
    repo, home = tmp_path / "repo", tmp_path / "home"
    shas = linear(repo, 4, culprit=2)
    proc = tb("run", "--repo", str(repo), "--good", shas[0], "--bad", "main", "--build", BUILD,
              "--artifact", "nowhere", "--test", TEST, "--json", cwd=repo, home=home)
    assert proc.returncode == 3  # the endpoints do not build
    rec = journal(home, last_json(proc.stdout)["session"])[0]
    assert rec["kind"] == "build_failed" and "did not produce nowhere" in rec["reason"]
    for bad in ("../x", "/abs", "."):
        res = tb("run", "--repo", str(repo), "--good", shas[0], "--bad", "main", "--build", BUILD,
                 "--artifact", bad, "--test", TEST, cwd=repo, home=home)
        assert res.returncode == 2 and "--artifact" in res.stderr


# --- logs and display ---------------------------------------------------------------------------


def test_logs_are_copied_as_they_grow(tmp_path):
    node, driver = tmp_path / "node", tmp_path / "driver"
    (node / "sub").mkdir(parents=True)
    log = node / "build.log"
    log.write_bytes(b"line 1\n")
    (node / "empty.json").write_bytes(b"")
    mirror = LogMirror(driver)
    assert mirror.apply(read_new(node, mirror.offsets)) == 7
    assert (driver / "build.log").read_bytes() == b"line 1\n" and (driver / "empty.json").exists()
    assert read_new(node, mirror.offsets) == {}  # nothing new
    with open(log, "ab") as f:
        f.write(b"line 2\n")
    (node / "sub" / "test-1.log").write_bytes(b"x" * 10)
    chunks = read_new(node, mirror.offsets, limit=4)
    assert chunks["build.log"] == (7, b"line")
    mirror.apply(chunks)
    while mirror.apply(read_new(node, mirror.offsets, limit=4)):
        pass
    assert (driver / "build.log").read_bytes() == b"line 1\nline 2\n"
    assert (driver / "sub" / "test-1.log").read_bytes() == b"x" * 10
    log.write_bytes(b"new\n")  # rewritten from the start: copied again
    mirror.apply(read_new(node, mirror.offsets))
    assert (driver / "build.log").read_bytes() == b"new\n"
    assert mirror.apply({"../escape": (0, b"x"), "/abs": (0, b"x")}) == 0
    assert not (tmp_path / "escape").exists()


def test_relocate_moves_paths_under_the_scratch_folder_only():
    rec = {"dir": "/n/s1", "build": {"log": "/n/s1/build.log", "other": "/n/s10/x"},
           "tests": [{"log": "/n/s1/test-1.log"}], "seconds": 1.0}
    out = relocate(rec, "/n/s1", "/d/step")
    assert out == {"dir": "/d/step", "build": {"log": "/d/step/build.log", "other": "/n/s10/x"},
                   "tests": [{"log": "/d/step/test-1.log"}], "seconds": 1.0}


def test_step_lines_show_the_node():
    assert where_of({"commit": "a"}) == ""
    assert where_of({"node": "gpu-3"}) == " on gpu-3"
    assert where_of({"node": "gpu-3", "build": {"node": "cpu-1"}}) == " built on cpu-1, tested on gpu-3"
    import io

    stream = io.StringIO()
    PlainUI(stream).step_finished("main", {"role": "search", "commit": "c" * 40, "verdict": "bad",
                                           "kind": "fail", "seconds": 2, "node": "gpu-3"}, "subj", None)
    assert " on gpu-3 subj" in stream.getvalue()


def test_live_display_shows_where_each_running_step_is():
    import io

    from rich.console import Console

    from tritonbisect.reports.display import RichUI

    ui = RichUI(Console(file=io.StringIO(), force_terminal=True, width=200))
    try:
        ui.step_running("a" * 40, "build", "cpu-1")  # may come before step_started
        ui.step_started("main", "a" * 40, "search", "")
        ui.step_started("main", "b" * 40, "search", "")
        ui.step_running("b" * 40, "test", "gpu-2")
        text = ui._render().plain
    finally:
        ui.close()
    assert f"{'a' * 12} (build@cpu-1)" in text and f"{'b' * 12} (test@gpu-2)" in text


def test_a_worker_worktree_whose_folder_was_evicted_is_made_again(tmp_path):
    import shutil

    from tritonbisect.core.gitrun import git
    from tritonbisect.executors.worktree import acquire_worktree

    repo, workdir = tmp_path / "repo", tmp_path / "work"
    shas = linear(repo, 3, culprit=2)
    tree = acquire_worktree(repo, workdir, "r")
    tree.checkout(shas[1])
    tree.release()
    # the workdir (a CI cache) is lost while the repository still records the worktree
    shutil.rmtree(workdir)
    tree = acquire_worktree(repo, workdir, "r")
    tree.checkout(shas[0])
    assert git(["rev-parse", "HEAD"], cwd=tree.path).strip() == shas[0]
    assert (tree.path / ".git").is_file()
    tree.release()
