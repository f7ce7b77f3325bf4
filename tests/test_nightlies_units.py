"""Nightlies inside `tritonbisect triton`: which published wheels are prebuilt commits of the
range, in what order (ancestry in a real git repository, never the version string), and how
a journaled step is told apart as an install, a build or a cached build."""

from __future__ import annotations

import subprocess
from pathlib import Path

from tritonbisect.builds.wheel_index import WheelFile
from tritonbisect.core.history import History
from tritonbisect.domains.wheels.nightlies import (
    PHASE,
    ancestry_chain,
    commit_label,
    nightly_commits,
    nightly_phase,
)
from tritonbisect.reports.published_steps import step_source
from tritonbisect.session.phase_run import candidates_of

ENV = {"GIT_AUTHOR_NAME": "T", "GIT_AUTHOR_EMAIL": "t@example.com", "GIT_COMMITTER_NAME": "T",
       "GIT_COMMITTER_EMAIL": "t@example.com", "GIT_CONFIG_NOSYSTEM": "1", "HOME": "/nonexistent",
       "PATH": "/usr/bin:/bin:/usr/local/bin"}


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=repo, env=ENV, check=True, capture_output=True,
                          text=True).stdout.strip()


def _commit(repo: Path, name: str) -> str:
    (repo / name).write_text(name)
    _git(repo, "add", name)
    _git(repo, "commit", "-qm", name)
    return _git(repo, "rev-parse", "HEAD")


def _repo(tmp: Path) -> dict[str, str]:
    """main: good - a - b - merge(side) - c - bad; side (from a): s."""
    repo = tmp / "repo"
    repo.mkdir()
    _git(repo, "init", "-q", "-b", "main")
    c = {"good": _commit(repo, "good"), "a": _commit(repo, "a")}
    _git(repo, "checkout", "-qb", "side")
    c["s"] = _commit(repo, "s")
    _git(repo, "checkout", "-q", "main")
    c["b"] = _commit(repo, "b")
    _git(repo, "merge", "-q", "--no-ff", "-m", "merge side", "side")
    c["m"] = _git(repo, "rev-parse", "HEAD")
    c["c"] = _commit(repo, "c")
    c["bad"] = _commit(repo, "bad")
    return c


def _wheel(version: str) -> WheelFile:
    return WheelFile(filename=f"triton-{version}-py3-none-any.whl", url=f"http://x/{version}",
                     sha256="0" * 64, version=version, tags=(("py3", "none", "any"),))


def test_nightlies_are_ordered_by_ancestry_not_by_version(tmp_path):
    c = _repo(tmp_path)
    history = History(tmp_path / "repo")
    order = list(candidates_of(history, c["good"], c["bad"]).order)
    files = [_wheel(f"3.6.0+git{c[k][:8]}") for k in ("c", "s", "a", "b", "good", "bad")]
    files += [_wheel("3.6.0+gitdeadbeef"), _wheel("3.5.0")]  # not in the range; a release
    files.sort(key=lambda f: f.version)  # the order of the version strings: meaningless here
    wheels = nightly_commits(files, order, c["good"])
    assert set(wheels) == {c[k] for k in ("good", "a", "s", "b", "c", "bad")}
    assert wheels[c["b"]]["version"] == f"3.6.0+git{c['b'][:8]}"
    assert ancestry_chain(history, [c["s"], c["c"], c["a"], c["b"]], c["good"], c["bad"]) == [
        c["a"], c["b"], c["c"]]
    spec = nightly_phase(tmp_path / "repo", c["good"], c["bad"], order, wheels, {"wheels": wheels},
                         history=history)
    assert spec is not None and spec.name == PHASE and spec.recipe_name == "triton"
    # the side branch's nightly is left out: a linear search could not place it
    assert spec.candidates == [c["a"], c["b"], c["c"], c["bad"]]


def test_no_nightly_inside_the_range_means_no_nightlies_phase(tmp_path):
    c = _repo(tmp_path)
    history = History(tmp_path / "repo")
    order = list(candidates_of(history, c["good"], c["bad"]).order)
    wheels = nightly_commits([_wheel(f"3.6.0+git{c['bad'][:8]}")], order, c["good"])
    assert nightly_phase(tmp_path / "repo", c["good"], c["bad"], order, wheels, {},
                         history=history) is None


def test_step_source():
    assert step_source({"build": {"cached": True, "performed": False, "published": True}}) == "install"
    assert step_source({"build": {"cached": True, "performed": False}}) == "cached"
    assert step_source({"build": {"cached": False, "performed": True}}) == "build"
    assert step_source({"build": {}}) == "none"


def test_commit_label():
    assert commit_label("3.6.0+git0d4682f0") == "0d4682f0"
    assert commit_label("3.2.0+abc.git4b3bb1f8") == "4b3bb1f8"
    assert commit_label("3.0.0+45fff310c8") == "45fff310c8"  # older pytorch-triton
    assert commit_label("2.6.0.dev20241112+cpu") is None
    assert commit_label("3.5.0") is None
