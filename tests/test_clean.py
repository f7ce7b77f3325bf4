"""`tritonbisect clean`: the worktrees a run registers in the user's repository go away, and
`git worktree list` is as before the run (real repositories, the real CLI)."""

from __future__ import annotations

import shutil
import time
from pathlib import Path

from engine_repo import BUILD, TEST, git, journal, last_json, linear, popen_tb, tb
from tritonbisect.builds.cache import ArtifactCache


def _run(repo: Path, home: Path, good: str, *extra: str):
    return tb("run", "--repo", str(repo), "--good", good, "--bad", "main", "--build", BUILD,
              "--test", TEST, "--json", *extra, cwd=repo, home=home)


def worktrees(repo: Path) -> str:
    return git(repo, "worktree", "list", "--porcelain")


def test_clean_session_unregisters_its_worktrees_and_status_says_how(tmp_path: Path) -> None:
    repo, home = tmp_path / "repo", tmp_path / "home"
    shas = linear(repo, 20, culprit=7)
    before = worktrees(repo)
    out = last_json(_run(repo, home, shas[0], "--jobs", "2").stdout)
    sid = out["session"]
    during = worktrees(repo)
    # kept for the next build: one per worker, and those that held the confirmation's builds
    # (and one a step stopped early ran in: a stopped step leaves no record, how many there
    # are depends on how fast steps run)
    used = {r["worker"] for r in journal(home, sid)}
    made = [p for p in (home / "worktrees").glob("*/w[0-9]*") if p.is_dir()]
    assert len(used) >= 2 and len(made) >= len(used)
    assert during.count("worktree ") == before.count("worktree ") + len(made)
    status = tb("status", sid, cwd=repo, home=home)
    assert "worktrees kept for incremental builds" in status.stdout
    assert f"remove them with: tritonbisect clean {sid}" in status.stdout
    assert str(home / "worktrees") in status.stdout
    proc = tb("clean", sid, cwd=repo, home=home)
    assert proc.returncode == 0, proc.stderr
    assert f"{len(made)} worktrees removed and unregistered" in proc.stdout
    assert worktrees(repo) == before
    assert not (home / "sessions" / sid).exists()
    assert not list((home / "worktrees").glob("*/w*/"))
    gone = tb("status", sid, cwd=repo, home=home)
    assert gone.returncode == 2 and "no session" in gone.stderr


def test_clean_all_over_two_repositories_keep_cache_then_everything(tmp_path: Path) -> None:
    home = tmp_path / "home"
    repos = [tmp_path / "a", tmp_path / "b"]
    befores = []
    for repo in repos:
        shas = linear(repo, 8, culprit=4)
        befores.append(worktrees(repo))
        assert _run(repo, home, shas[0]).returncode == 0
    # a cached build, as a recipe that caches would leave it
    artifact = tmp_path / "x.whl"
    artifact.write_bytes(b"wheel")
    cache = ArtifactCache(home / "cache")
    cache.put("k1", artifact, {"commit": "c" * 40, "recipe": "triton"})
    (home / "downloads" / "llvm" / "llvm-abcdef01-ubuntu-x64").mkdir(parents=True)  # a shared download
    # a worktree whose folder was deleted by hand: its registration is pruned
    stale = next((home / "worktrees").glob("*/w0"))
    shutil.rmtree(stale)
    proc = tb("clean", "--all", "--keep-cache", cwd=tmp_path, home=home)
    assert proc.returncode == 0, proc.stderr
    assert "kept the build caches" in proc.stdout
    for repo, before in zip(repos, befores, strict=True):
        assert worktrees(repo) == before
    assert not (home / "sessions").exists() and not (home / "worktrees").exists()
    assert ArtifactCache(home / "cache").get("k1") is not None
    assert (home / "downloads" / "llvm").is_dir()
    assert tb("clean", "--all", cwd=tmp_path, home=home).returncode == 0
    assert not (home / "cache").exists() and not (home / "downloads").exists()


def test_clean_refuses_a_running_session_and_bad_arguments(tmp_path: Path) -> None:
    repo, home = tmp_path / "repo", tmp_path / "home"
    shas = linear(repo, 12, culprit=6)
    proc = popen_tb("run", "--repo", str(repo), "--good", shas[0], "--bad", "main", "--build", BUILD,
                    "--test", f"sleep 0.5; {TEST}", "--json", cwd=repo, home=home)
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and not list((home / "sessions").glob("*/journal.jsonl")):
            time.sleep(0.05)
        sid = next((home / "sessions").iterdir()).name
        refused = tb("clean", sid, cwd=repo, home=home)
        assert refused.returncode == 2 and "is running" in refused.stderr
        assert tb("clean", "--all", cwd=repo, home=home).returncode == 2
    finally:
        proc.communicate(timeout=60)
    assert proc.returncode == 0
    assert journal(home, sid)  # the run was not disturbed
    both = tb("clean", sid, "--all", cwd=repo, home=home)
    assert both.returncode == 2 and "not both" in both.stderr
    neither = tb("clean", cwd=repo, home=home)
    assert neither.returncode == 2
