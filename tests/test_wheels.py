"""`tritonbisect wheels` against a real local PEP 503 index (python -m http.server) holding
small real Triton wheels: over releases, a missing version, an index that goes away
mid-run (abort, then resume), a corrupt download, --find-links and --triton-dir."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest

from bisectors_world import error_line, run_cli, run_json
from tritonbisect.builds.wheel_fetch import download_dir
from wheel_index_world import (
    BAD_FROM,
    TEST_SCRIPT,
    WINDOWS_ONLY,
    LocalIndex,
    write_simple_index,
    write_wheels,
)

pytestmark = pytest.mark.slow


@pytest.fixture(scope="session")
def wheels(tmp_path_factory):
    return write_wheels(tmp_path_factory.mktemp("toy-wheels"))


@pytest.fixture(scope="session")
def index(tmp_path_factory, wheels):
    root = tmp_path_factory.mktemp("index")
    write_simple_index(root, wheels)
    idx = LocalIndex(root).start()
    yield idx
    idx.stop()


@pytest.fixture
def here(tmp_path, monkeypatch):
    """The user's directory, holding the test script."""
    d = tmp_path / "user"
    d.mkdir()
    (d / "t.py").write_text(TEST_SCRIPT)
    monkeypatch.chdir(d)
    return d


@pytest.fixture(scope="session")
def home(tmp_path_factory):
    """One workdir for the module: its venv and downloads are reused, like a user's."""
    return tmp_path_factory.mktemp("home")


def _argv(good, bad, *extra, home):
    return ["wheels", "--good", good, "--bad", bad, "--test", "python t.py",
            "--workdir", str(home), *extra]


def _journal(res):
    path = Path(res["session_dir"]) / "journal.jsonl"
    return [json.loads(ln) for ln in path.read_text().splitlines() if ln.strip()]


def test_wheels_over_releases(index, here, home, capsys):
    code, res, err = run_json(_argv("3.0.0", "3.6.0", "--index-url", index.url, home=home), capsys)
    assert code == 0, err[-3000:]
    assert (res["status"], res["last_good"], res["first_bad"]) == ("found", "3.3.0", BAD_FROM)
    versions = {t["version"] for t in res["tested"]}
    assert "3.5.0rc1" not in versions  # pre-releases only with --pre
    assert {t["version"]: t["verdict"] for t in res["tested"] if t["role"] == "endpoint"} == {
        "3.0.0": "good", "3.6.0": "bad"}
    # 7 releases, 6 candidates: at most ceil(log2(7)) = 3 search steps, each an install
    assert sum(t["role"] == "search" for t in res["tested"]) <= 3
    assert res["installs"] >= len(versions) and res["downloads"] == len(versions)
    assert all(r["build"]["cached"] and not r["build"]["performed"] for r in _journal(res))
    # a second run downloads nothing: the cache is keyed by the index's sha256
    code, res2, _ = run_json(_argv("3.0.0", "3.6.0", "--index-url", index.url, home=home), capsys)
    assert code == 0 and res2["first_bad"] == BAD_FROM and res2["downloads"] == 0
    # plain output: versions, not ladder shas
    code, out, _ = run_cli(_argv("3.2.0", "3.5.0", "--index-url", index.url, home=home), capsys)
    assert code == 0 and "last good: 3.3.0" in out and f"first bad: {BAD_FROM}" in out


def test_pre_releases_and_find_links(wheels, here, home, capsys):
    links = here / "links"
    links.mkdir()
    for w in wheels:
        (links / w.name).write_bytes(w.read_bytes())
    code, res, err = run_json(
        _argv("3.2.0", "3.5.0rc1", "--find-links", str(links), "--pre", home=home), capsys)
    assert code == 0, err[-3000:]
    assert res["first_bad"] == BAD_FROM and res["last_good"] == "3.3.0"
    assert res["tested"][1]["version"] == "3.5.0rc1"


def test_missing_version_and_no_wheel_for_this_platform(index, here, home, capsys):
    code, out, err = run_cli(_argv("3.0.0", "3.8.0", "--index-url", index.url, home=home), capsys)
    line = error_line(err)
    assert code == 2 and "--bad 3.8.0" in line and "no such version" in line
    assert "3.6.0" in line and WINDOWS_ONLY in line  # the nearest versions that exist
    code, out, err = run_cli(_argv("3.0.0", WINDOWS_ONLY, "--index-url", index.url, home=home), capsys)
    line = error_line(err)
    assert code == 2 and "no wheel for" in line and "3.6.0" in line and WINDOWS_ONLY + "," not in line


def test_endpoints_checked_first(index, here, home, capsys):
    code, res, err = run_json(_argv("3.4.0", "3.6.0", "--index-url", index.url, home=home), capsys)
    assert code == 3, err[-2000:]
    assert {t["role"] for t in res["tested"]} == {"endpoint"}  # no search began
    assert ("3.4.0", "bad") in [(t["version"], t["verdict"]) for t in res["tested"]]
    assert res["first_bad"] is None and res["status"] != "found"
    # in versions, as the user gave them; no `resume` for a session that is over
    code, out, err = run_cli(_argv("3.4.0", "3.6.0", "--index-url", index.url, home=home), capsys)
    assert code == 3
    assert "the good version 3.4.0 never passed (2 bad)" in out + err
    assert "bisecting 2 versions (good 3.4.0, bad 3.6.0)" in err and "wheel-ladders" not in err
    assert "tritonbisect resume" not in out and "tritonbisect report" in out
    said = out + "\n".join(line for line in err.splitlines() if "/steps/" not in line)  # not log paths
    said = re.sub(re.escape(str(home)) + r"\S*", "<path>", said)  # nor paths under the workdir (venvs)
    assert not any(r["commit"][:12] in said for r in _journal(res))  # no ladder sha anywhere


def test_index_gone_at_start_is_an_abort(tmp_path, here, home, capsys):
    dead = LocalIndex(tmp_path)  # never started
    code, out, err = run_cli(_argv("3.0.0", "3.6.0", "--index-url", dead.url, home=home), capsys)
    line = error_line(err)
    assert code == 4 and "unreachable" in line and "nothing was tested" in line


def test_index_going_away_mid_run_aborts_then_resume_finishes(tmp_path, wheels, here, capsys):
    root = tmp_path / "index"
    write_simple_index(root, wheels)
    idx = LocalIndex(root).start()
    home = tmp_path / "home"
    # the test stops the server after the first endpoint has installed
    (here / "t.py").write_text(
        "import os, signal, sys\n"
        f"os.kill({idx.proc.pid}, signal.SIGTERM) if os.environ['TRITONBISECT_WHEEL_VERSION'] == '3.0.0' else None\n"
        + TEST_SCRIPT)
    try:
        code, res, err = run_json(_argv("3.0.0", "3.6.0", "--index-url", idx.url, home=home), capsys)
        assert code == 4, err[-3000:]
        assert res["status"] == "aborted" and "3.6.0" in res["reason"]
        infra = [r for r in _journal(res) if r["kind"] == "infra"]
        assert infra and "failed" in infra[-1]["reason"]
        assert [t["version"] for t in res["tested"] if t["outcome"] == "pass"] == ["3.0.0"]
    finally:
        idx.stop()
    assert _port_of(res) == idx.port
    idx.start()  # the index is back, on the same address
    try:
        (here / "t.py").write_text(TEST_SCRIPT)
        code, out, err = run_cli(["resume", res["session"], "--workdir", str(home), "--json"], capsys)
        assert code == 0, err[-3000:]
        out_json = json.loads([ln for ln in out.splitlines() if ln.startswith("{")][-1])
        subject = subprocess.run(["git", "-C", str(_ladder(res)), "log", "-1", "--format=%s",
                                  out_json["culprit"]], capture_output=True, text=True).stdout
        assert subject.strip() == f"triton {BAD_FROM}"
        records = _journal(res)
        passes = [r for r in records if r["role"] == "endpoint" and r["kind"] == "pass"]
        assert len(passes) == 1  # the finished endpoint was not re-run
    finally:
        idx.stop()


def _ladder(res) -> Path:
    data = json.loads((Path(res["session_dir"]) / "session.json").read_text())
    return Path(data["phases"][0]["repo"])


def _port_of(res) -> int:
    ladder = _ladder(res)
    entry = json.loads(subprocess.run(["git", "-C", str(ladder), "show", "HEAD:WHEEL.json"],
                                      capture_output=True, text=True, check=True).stdout)
    return int(entry["url"].split(":")[2].split("/")[0])


def test_corrupt_download_is_detected_by_its_sha256(tmp_path, wheels, here, capsys):
    root = tmp_path / "index"
    bad_name = next(w.name for w in wheels if "-3.3.0-" in w.name)
    write_simple_index(root, wheels, digests={bad_name: "0" * 64})  # the index lies
    idx = LocalIndex(root).start()
    home = tmp_path / "home"
    try:
        code, res, err = run_json(_argv("3.0.0", "3.6.0", "--index-url", idx.url, home=home), capsys)
    finally:
        idx.stop()
    assert code == 4, err[-3000:]
    assert "sha256 mismatch" in res["reason"] and "corrupt download" in res["reason"]
    assert "3.3.0" not in [t["version"] for t in res["tested"] if t["outcome"] in ("pass", "fail")]
    # nothing corrupt was kept in the download cache
    kept = [p for p in download_dir(home / "cache").rglob("*.whl") if "3.3.0" in p.name]
    assert not kept


def test_commit_range_from_a_triton_checkout(index, here, home, tmp_path, capsys):
    repo = tmp_path / "triton"
    repo.mkdir()
    env = ["-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    shas = {}
    for v in ("3.3.0", "3.4.0"):
        (repo / "v.txt").write_text(v)
        subprocess.run(["git", "-C", str(repo), "add", "."], check=True)
        subprocess.run(["git", "-C", str(repo), *env, "commit", "-qm", v], check=True)
        subprocess.run(["git", "-C", str(repo), "tag", f"v{v}"], check=True)
        shas[v] = subprocess.run(["git", "-C", str(repo), "rev-parse", "HEAD"], capture_output=True,
                                 text=True, check=True).stdout.strip()
    code, res, err = run_json(_argv("3.0.0", "3.6.0", "--index-url", index.url, "--triton-dir",
                                    str(repo), home=home), capsys)
    assert code == 0, err[-3000:]
    assert res["commit_range"]["good"] == shas["3.3.0"] and res["commit_range"]["bad"] == shas["3.4.0"]


def _git_repo_with_reversed_labels(root: Path) -> tuple[Path, str, str]:
    """A repository with two consecutive commits whose 8-hex labels sort the wrong way
    round as text (the older one after the newer one)."""
    env = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@t", "PATH": "/usr/bin:/bin"}
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    shas = []
    for i in range(40):
        subprocess.run(["git", "-C", str(root), "commit", "-q", "--allow-empty", "-m", f"c{i}"], check=True, env=env)
        shas.append(subprocess.run(["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True,
                                   text=True).stdout.strip())
    old, new = next((a, b) for a, b in zip(shas, shas[1:], strict=False) if a[:8] > b[:8])
    return root, old, new


def test_git_nightlies_ordered_by_the_checkout(tmp_path, here, capsys):
    """3.7.0+git<old> passes, 3.7.0+git<new> (made after it) fails. PEP 440 orders the two by
    the labels' text, which here is the wrong order: without a checkout the run says it used
    a version order; with --triton-dir it orders them by history and names the right one."""
    from wheel_index_world import write_wheel

    repo, old, new = _git_repo_with_reversed_labels(tmp_path / "triton")
    links = tmp_path / "links"
    for v, bad in (("3.6.0", False), (f"3.7.0+git{old[:8]}", False), (f"3.7.0+git{new[:8]}", True),
                   ("3.8.0", True)):
        write_wheel(links, v, bad=bad)
    argv = _argv("3.6.0", "3.8.0", "--find-links", str(links), home=tmp_path / "home")
    code, res, err = run_json(argv, capsys)
    assert "ordered by version: give --triton-dir" in err
    code, res, err = run_json([*argv, "--triton-dir", str(repo)], capsys)
    assert code == 0, err[-3000:]
    assert "ordered by version" not in err
    assert (res["last_good"], res["first_bad"]) == (f"3.7.0+git{old[:8]}", f"3.7.0+git{new[:8]}")
