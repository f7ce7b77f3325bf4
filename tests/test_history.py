"""History (core/history.py) on real temporary git repositories built with git fast-import."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tritonbisect.core.errors import InputError
from tritonbisect.core.history import CommitInfo, History
from tritonbisect.search.classic import Candidates

GIT_ENV = {
    "GIT_CONFIG_NOSYSTEM": "1",
    "HOME": "/nonexistent",
    "GIT_AUTHOR_NAME": "t",
    "GIT_AUTHOR_EMAIL": "t@example.com",
    "GIT_COMMITTER_NAME": "t",
    "GIT_COMMITTER_EMAIL": "t@example.com",
    "PATH": "/usr/bin:/bin:/usr/local/bin",
}


def git(repo: Path, *args: str, input: bytes | None = None) -> str:
    return subprocess.run(
        ["git", "-C", str(repo), *args], input=input, capture_output=True, check=True, env=GIT_ENV
    ).stdout.decode()


def fast_import(repo: Path, commits: list[dict]) -> dict[str, str]:
    """commits: {"name", "parents": [names], "files": {path: text|None}, "msg", "branch"}.

    Returns name -> sha. Names become marks; `branch` (default main) gets the commit.
    """
    repo.mkdir(parents=True, exist_ok=True)
    git(repo, "init", "-q", "-b", "main")
    marks = {c["name"]: i + 1 for i, c in enumerate(commits)}
    out = []
    for i, c in enumerate(commits):
        msg = c.get("msg", c["name"]).encode()
        out.append(
            f"commit refs/heads/{c.get('branch', 'main')}\nmark :{marks[c['name']]}\n".encode()
        )
        who = f"{c.get('author', 'Ann Author')} <{c.get('email', 'ann@example.com')}>"
        out.append(f"author {who} {1700000000 + i * 60} +0100\n".encode())
        out.append(f"committer {who} {1700000000 + i * 60} +0100\n".encode())
        out.append(b"data %d\n%s\n" % (len(msg), msg))
        ps = c.get("parents", [])
        if ps:
            out.append(f"from :{marks[ps[0]]}\n".encode())
        for p in ps[1:]:
            out.append(f"merge :{marks[p]}\n".encode())
        for path, text in c.get("files", {}).items():
            if text is None:
                out.append(f"D {path}\n".encode())
            else:
                data = text.encode()
                out.append(
                    f"M 100644 inline {path}\n".encode() + b"data %d\n" % len(data) + data + b"\n"
                )
        out.append(b"\n")
    out.append(b"done\n")
    git(
        repo,
        "fast-import",
        "--quiet",
        "--done",
        "--export-marks=" + str(repo / ".git" / "marks"),
        input=b"".join(out),
    )
    shas = {}
    for line in (repo / ".git" / "marks").read_text().splitlines():
        mark, sha = line.split()
        shas[mark[1:]] = sha
    names = {c["name"]: shas[str(marks[c["name"]])] for c in commits}
    git(repo, "reset", "-q", "--hard", "main")
    return names


@pytest.fixture(scope="module")
def linear_repo(tmp_path_factory) -> tuple[Path, list[str]]:
    repo = tmp_path_factory.mktemp("linear")
    commits = [
        {
            "name": f"c{i}",
            "parents": [f"c{i - 1}"] if i else [],
            "files": {f"f{i % 3}.txt": f"v{i}\n"},
        }
        for i in range(20)
    ]
    commits[5]["files"] = {"cmake/llvm-hash.txt": "abc123\n", "dir with space/ü.txt": "x\n"}
    commits[6]["files"] = {"f0.txt": None}
    commits[7]["msg"] = "Fix the thing\n\nLonger body.\nSigned-off-by: someone"
    commits[7]["author"] = "Zoë Dev"
    commits[7]["email"] = "zoe@example.com"
    names = fast_import(repo, commits)
    return repo, [names[f"c{i}"] for i in range(20)]


@pytest.fixture(scope="module")
def merge_repo(tmp_path_factory) -> tuple[Path, dict[str, str]]:
    r"""
    root - g - a1 - a2 ----- M - m1 - bad        (main, first parent)
            \               /
              b1 - b2 - b3                       (side branch forked at g)
    plus s1 forked at root (before g) merged at M2 after m1. (fast-import does not merge
    trees: a merge lists the files it takes from its second parent.)
    """
    repo = tmp_path_factory.mktemp("merges")
    spec = [
        {"name": "root", "files": {"a": "0\n"}},
        {"name": "g", "parents": ["root"], "files": {"a": "1\n"}},
        {"name": "a1", "parents": ["g"], "files": {"a": "2\n"}},
        {"name": "b1", "parents": ["g"], "files": {"b": "1\n"}, "branch": "side"},
        {"name": "a2", "parents": ["a1"], "files": {"a": "3\n"}},
        {"name": "b2", "parents": ["b1"], "files": {"b": "2\n"}, "branch": "side"},
        {"name": "b3", "parents": ["b2"], "files": {"b": "3\n"}, "branch": "side"},
        {"name": "M", "parents": ["a2", "b3"], "files": {"b": "3\n", "merged": "y\n"}},
        {"name": "m1", "parents": ["M"], "files": {"a": "4\n"}},
        {"name": "s1", "parents": ["root"], "files": {"s": "1\n"}, "branch": "old"},
        {"name": "M2", "parents": ["m1", "s1"], "files": {}},
        {"name": "bad", "parents": ["M2"], "files": {"a": "5\n"}},
    ]
    return repo, fast_import(repo, spec)


# --- errors ---------------------------------------------------------------------------------


def test_not_a_git_repository(tmp_path):
    with pytest.raises(InputError, match="is not a git repository"):
        History(tmp_path)
    with pytest.raises(InputError, match="is not a git repository"):
        History(tmp_path / "missing")


def test_unknown_revision(linear_repo):
    repo, _ = linear_repo
    h = History(repo)
    for rev in ("nope", "main~100", "-x", "", "0" * 40):
        with pytest.raises(InputError, match=r"unknown revision '.*' in "):
            h.resolve(rev)


def test_good_equals_bad(linear_repo):
    repo, c = linear_repo
    with pytest.raises(InputError, match="same commit"):
        History(repo).candidates(c[3], "main~16")


def test_good_newer_than_bad_suggests_swap_and_regress_fixed(linear_repo):
    repo, c = linear_repo
    with pytest.raises(InputError, match=r"swap them.*--regress fixed"):
        History(repo).candidates(c[10], c[2])


def test_diverged_endpoints(merge_repo):
    repo, n = merge_repo
    with pytest.raises(InputError, match="not an ancestor.*--regress fixed"):
        History(repo).candidates(n["b2"], n["a2"])


def test_errors_are_one_line(linear_repo):
    repo, c = linear_repo
    h = History(repo)
    for call in (lambda: h.resolve("x y"), lambda: h.candidates(c[9], c[1])):
        with pytest.raises(InputError) as err:
            call()
        assert "\n" not in err.value.message


# --- revisions and ranges -------------------------------------------------------------------


def test_resolve_and_root(linear_repo):
    repo, c = linear_repo
    h = History(repo / "dir with space")  # a subdirectory works too
    assert h.root == repo.resolve()
    assert h.resolve("main") == c[-1]
    assert h.resolve(c[-1][:10]) == c[-1]
    assert h.resolve("HEAD~2") == c[-3]
    assert h.resolve(f"{c[5]}^1") == c[4]


def test_is_ancestor(linear_repo):
    repo, c = linear_repo
    h = History(repo)
    assert h.is_ancestor(c[2], c[9]) and h.is_ancestor(c[4], c[4])
    assert not h.is_ancestor(c[9], c[2])


def test_linear_candidates(linear_repo):
    repo, c = linear_repo
    cands = History(repo).candidates(c[3], "main")
    assert cands == Candidates.linear(c[4:])
    assert cands.order[-1] == c[-1]
    assert History(repo).candidates(c[3], c[4]).order == (c[4],)


def test_dag_candidates(merge_repo):
    repo, n = merge_repo
    cands = History(repo).candidates(n["g"], n["bad"])
    names = {v: k for k, v in n.items()}
    order = [names[s] for s in cands.order]
    assert set(order) == {"a1", "a2", "b1", "b2", "b3", "M", "m1", "s1", "M2", "bad"}
    assert order[-1] == "bad"
    pos = {x: i for i, x in enumerate(order)}
    for child, ps in cands.parents.items():
        for p in ps:
            assert pos[names[p]] < pos[names[child]]  # topological, oldest first
    par = {names[k]: tuple(names[p] for p in v) for k, v in cands.parents.items()}
    assert par["M"] == ("a2", "b3")
    assert par["a1"] == () and par["b1"] == ()  # g is outside the set
    assert par["s1"] == ()  # forked before good: its parent (root) is an ancestor of good
    assert par["M2"] == ("m1", "s1")


def test_first_parent_candidates(merge_repo):
    repo, n = merge_repo
    cands = History(repo).candidates(n["g"], n["bad"], first_parent=True)
    names = {v: k for k, v in n.items()}
    assert [names[s] for s in cands.order] == ["a1", "a2", "M", "m1", "M2", "bad"]
    assert cands == Candidates.linear(cands.order)


# --- commits --------------------------------------------------------------------------------


def test_files_touched(linear_repo, merge_repo):
    repo, c = linear_repo
    h = History(repo)
    assert sorted(h.files_touched(c[5])) == ["cmake/llvm-hash.txt", "dir with space/ü.txt"]
    assert h.files_touched(c[6]) == ["f0.txt"]
    assert h.files_touched(c[0]) == ["f0.txt"]  # root commit: everything it adds
    mrepo, n = merge_repo
    # a merge, compared with its first parent: the side branch's files and its own
    assert sorted(History(mrepo).files_touched(n["M"])) == ["b", "merged"]


def test_commit_info(linear_repo):
    repo, c = linear_repo
    info = History(repo).commit_info(c[7])
    assert info == CommitInfo(c[7], "Fix the thing", "Zoë Dev", "zoe@example.com", info.date)
    assert info.date == "2023-11-14T23:20:20+01:00"


def test_subjects_of_many_commits_in_one_call(linear_repo):
    repo, c = linear_repo
    h = History(repo)
    got = h.subjects([c[7], c[2], c[7]])
    assert got == {c[7]: "Fix the thing", c[2]: h.commit_info(c[2]).subject}
    assert h.subjects([]) == {}


def test_file_at(linear_repo):
    repo, c = linear_repo
    h = History(repo)
    assert h.file_at(c[5], "cmake/llvm-hash.txt") == "abc123\n"
    assert h.file_at(c[4], "cmake/llvm-hash.txt") is None
    assert h.file_at(c[5], "dir with space/ü.txt") == "x\n"
    assert h.file_at(c[5], "cmake") is None  # a directory is not a file
    assert h.file_at(c[6], "f0.txt") is None  # deleted


def test_repo_id_is_the_root_commit_and_stable_across_clones(linear_repo, tmp_path):
    repo, c = linear_repo
    assert History(repo).repo_id() == c[0]
    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", str(repo), str(clone))
    assert History(clone).repo_id() == c[0]


def test_repo_id_with_several_roots(merge_repo, tmp_path):
    repo, n = merge_repo
    assert History(repo).repo_id() == n["root"]
    # a second, unrelated history merged in: the id is the smallest root sha
    other = tmp_path / "other"
    names = fast_import(other, [{"name": "r", "files": {"z": "1\n"}}])
    git(repo, "fetch", "-q", str(other), "main:refs/heads/other")
    git(repo, "checkout", "-q", "-b", "two-roots", n["bad"])
    git(repo, "merge", "-q", "--allow-unrelated-histories", "-m", "join", "other")
    try:
        assert History(repo).repo_id() == min(n["root"], names["r"])
    finally:
        git(repo, "checkout", "-q", "main")


def test_repo_id_does_not_move_when_a_younger_root_is_merged(tmp_path):
    """llvm-project has many roots: a cache key must be the same at commits before and after
    another root is merged in, even when that root's sha sorts first."""
    from tritonbisect.core.history import root_identity

    repo = tmp_path / "multi-root"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")

    def commit(msg: str, when: int) -> str:
        stamp = f"{when} +0000"
        subprocess.run(["git", "commit", "-q", "--allow-empty", "-m", msg], cwd=repo, check=True,
                       env={**GIT_ENV, "GIT_AUTHOR_DATE": stamp, "GIT_COMMITTER_DATE": stamp})
        return git(repo, "rev-parse", "HEAD").strip()

    first_root = commit("the project's first commit", 1_000_000_000)
    before_merge = commit("main line", 1_000_000_100)
    for attempt in range(64):  # a younger root whose sha sorts before the first one
        git(repo, "checkout", "-q", "--orphan", f"import{attempt}")
        other_root = commit(f"imported project {attempt}", 1_000_000_200)
        if other_root < first_root:
            break
    else:
        pytest.skip("no younger root with a smaller sha in 64 tries")
    git(repo, "checkout", "-q", "main")
    subprocess.run(["git", "merge", "-q", "--allow-unrelated-histories", "-m", "merge import",
                    other_root], cwd=repo, check=True,
                   env={**GIT_ENV, "GIT_AUTHOR_DATE": "1000000300 +0000",
                        "GIT_COMMITTER_DATE": "1000000300 +0000"})
    after_merge = History(repo).repo_id()
    assert after_merge == first_root
    git(repo, "checkout", "-q", "--detach", before_merge)
    assert History(repo).repo_id() == first_root
    assert root_identity(repo) == first_root
