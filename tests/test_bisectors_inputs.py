"""Bisector domain logic and bad inputs, on real toy-world git repos (nothing is built)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from bisectors_world import error_line, run_cli, write_toy_map
from testing.toyworld.world import make_world
from tritonbisect.core.errors import InputError
from tritonbisect.core.history import History
from tritonbisect.domains.llvm.bisector import assign_triton, check_map_commits, llvm_order
from tritonbisect.domains.llvm.compat_map import read_map
from tritonbisect.domains.llvm.pairs import max_pairs_tested, select_pairs
from tritonbisect.domains.torch.bisector import parse_use_flags
from tritonbisect.domains.triton.bisector import HASH_FILE, bumps_between, llvm_bump, pinned_llvm


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    return make_world(tmp_path_factory.mktemp("world"), llvm_commits=20, triton_commits=20)


@pytest.fixture(scope="module")
def other_llvm(tmp_path_factory):
    """An llvm-project that lacks the world's hashes."""
    return make_world(tmp_path_factory.mktemp("other"), llvm_commits=24, triton_commits=20).llvm


def test_bump_facts(world):
    t = world.truth
    hist = History(world.triton)
    bump = llvm_bump(hist, t["bump"])
    assert bump is not None
    assert (bump.parent, bump.old, bump.new) == (t["bump_parent"], t["old_llvm"], t["new_llvm"])
    assert llvm_bump(hist, t["triton_regression"]) is None
    assert bumps_between(hist, t["good_triton"], t["bad_triton_llvm"]) == [t["bump"]]
    assert bumps_between(hist, *t["triton_regression_range"]) == []
    assert pinned_llvm(hist, t["bad_triton_llvm"]) == t["new_llvm"]
    with pytest.raises(InputError, match=r"LLVM pin \(cmake/llvm-info.json or cmake/llvm-hash.txt\) is missing"):
        pinned_llvm(History(world.llvm), t["old_llvm"])


def test_assignment_follows_the_map(world, tmp_path):
    t = world.truth
    llvm = History(world.llvm)
    last_ok = t["llvm_last_compatible"][0]
    path = write_toy_map(world, tmp_path / "commits.csv")
    cmap = read_map(path)
    map_order = check_map_commits(cmap, path, History(world.triton), llvm)
    order = llvm_order(llvm, t["old_llvm"], t["new_llvm"])
    assert order == map_order
    assigned = assign_triton(order, cmap=cmap, map_order=map_order)
    cut = order.index(last_ok)
    assert {assigned[c] for c in order[: cut + 1]} == {t["bump_parent"]}
    assert {assigned[c] for c in order[cut + 1 :]} == {t["bump"]}
    assert assign_triton(order, fixed="x") == dict.fromkeys(order, "x")


def test_pairs_selection_and_bound(world, tmp_path):
    t = world.truth
    llvm = History(world.llvm)
    order = llvm_order(llvm, t["old_llvm"], t["new_llvm"])
    inside = order[1 : order.index(t["llvm_last_compatible"][0]) + 1]
    rows = [(t["bump_parent"], c) for c in inside if c not in t["llvm_broken"]]
    path = write_toy_map(world, tmp_path / "commits.csv", rows)
    cmap = read_map(path)
    map_order = check_map_commits(cmap, path, History(world.triton), llvm)
    good, pairs = select_pairs(cmap, order, map_order)
    assert good.llvm == t["old_llvm"] and good.triton == t["bump_parent"]
    assert [p.llvm for p in pairs] == [ll for _, ll in rows] + [t["new_llvm"]]
    assert pairs[-1].triton == t["bump"] and pairs[0].line == 10
    # a narrower range keeps only the rows inside it; the bad endpoint is always last
    sub = llvm_order(llvm, rows[1][1], rows[3][1])
    _, inner = select_pairs(cmap, sub, map_order)
    assert [p.llvm for p in inner] == [rows[2][1], rows[3][1]]
    assert [max_pairs_tested(p) for p in (1, 2, 3, 4, 5, 8, 9)] == [1, 2, 3, 3, 4, 4, 5]


def test_use_flags():
    assert parse_use_flags(["CUDA=0", "use_distributed=1"]) == {"USE_CUDA": "0", "USE_DISTRIBUTED": "1"}
    with pytest.raises(InputError, match="FLAG=VALUE"):
        parse_use_flags(["CUDA"])


# --- bad inputs: one clear line, exit 2 -----------------------------------------------------


def _triton(world, *extra: str, good: str | None = None, bad: str | None = None) -> list[str]:
    t = world.truth
    return [
        "triton", "--triton-dir", str(world.triton), "--good", good or t["good_triton"],
        "--bad", bad or t["bad_triton_llvm"], "--test", t["triton_test"], *extra,
    ]


def test_descent_needs_llvm_dir(world, tmp_path, capsys):
    code, _, err = run_cli([*_triton(world), "--workdir", str(tmp_path)], capsys)
    assert code == 2
    line = error_line(err)
    assert "--llvm-dir DIR (an llvm-project checkout) is required" in line and "--no-descend-llvm" in line and HASH_FILE in line


def test_llvm_dir_not_a_repo(world, tmp_path, capsys):
    plain = tmp_path / "plain"
    plain.mkdir()
    code, _, err = run_cli([*_triton(world, "--llvm-dir", str(plain)), "--workdir", str(tmp_path)], capsys)
    assert code == 2
    assert "not a git repository" in error_line(err)


def test_hash_not_found_in_llvm_project(world, other_llvm, tmp_path, capsys):
    t = world.truth
    argv = [*_triton(world, "--llvm-dir", str(other_llvm)), "--workdir", str(tmp_path)]
    code, _, err = run_cli(argv, capsys)
    assert code == 2
    line = error_line(err)
    assert t["new_llvm"] in line and "not found in" in line and "fetch" in line


def test_missing_llvm_hash_file(world, tmp_path, capsys):
    repo = tmp_path / "not-triton"
    repo.mkdir()
    git = ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run([*git[:3], "init", "-q"], check=True)
    for i in range(3):
        (repo / "t.sh").write_text(f"# {i}\nexit {int(i == 2)}\n")
        subprocess.run([*git, "add", "-A"], check=True)
        subprocess.run([*git, "commit", "-qm", f"c{i}"], check=True)
    code, _, err = run_cli(
        ["triton", "--triton-dir", str(repo), "--good", "HEAD~2", "--bad", "HEAD",
         "--test", "bash t.sh", "--llvm-dir", str(world.llvm), "--workdir", str(tmp_path)],
        capsys,
    )
    assert code == 2
    assert f"LLVM pin (cmake/llvm-info.json or {HASH_FILE}) is missing" in error_line(err)


@pytest.mark.parametrize(
    "row, expected",
    [
        ("not-a-sha,{llvm}", "triton_commit must be a 40-hex commit sha"),
        ("{missing},{llvm}", "Triton commit"),
    ],
)
def test_bad_csv_row_names_the_line(world, tmp_path, capsys, row, expected):
    t = world.truth
    path = write_toy_map(world, tmp_path / "commits.csv")
    text = path.read_text().splitlines()
    text.append(row.format(llvm=t["llvm_order"][5], missing="ab" * 20))
    path.write_text("\n".join(text) + "\n")
    bad_line = len(text)
    for argv in (
        [*_triton(world, "--llvm-dir", str(world.llvm), "--compat-map", str(path))],
        ["pairs", "--compat-map", str(path), "--triton-dir", str(world.triton),
         "--llvm-dir", str(world.llvm), "--test", t["triton_test"]],
        ["llvm", "--compat-map", str(path), "--triton-dir", str(world.triton),
         "--llvm-dir", str(world.llvm), "--good-llvm", t["old_llvm"], "--bad-llvm", t["new_llvm"],
         "--test", t["triton_test"]],
    ):
        code, _, err = run_cli([*argv, "--workdir", str(tmp_path)], capsys)
        assert code == 2, err
        line = error_line(err)
        assert f"{path}:{bad_line}:" in line and expected in line


def test_llvm_command_unknown_revision(world, tmp_path, capsys):
    code, _, err = run_cli(
        ["llvm", "--triton-dir", str(world.triton), "--llvm-dir", str(world.llvm),
         "--good-llvm", "deadbeef", "--bad-llvm", world.truth["new_llvm"],
         "--test", world.truth["triton_test"], "--workdir", str(tmp_path)],
        capsys,
    )
    assert code == 2
    assert "deadbeef" in error_line(err)


def test_no_session_is_left_behind_by_bad_input(world, tmp_path, capsys):
    run_cli([*_triton(world), "--workdir", str(tmp_path)], capsys)
    assert not (Path(tmp_path) / "sessions").exists() or not any((tmp_path / "sessions").iterdir())
