"""commits.csv: read, write, validation errors that name file:line."""

from __future__ import annotations

import pytest

from tritonbisect.core.errors import InputError
from tritonbisect.domains.llvm.compat_map import (
    CompatMap,
    CompatRow,
    order_problems,
    read_map,
    render_map,
    write_map,
)

L = [f"{i:040x}" for i in range(1, 11)]  # an LLVM order, oldest first
T = [f"{i:x}" * 40 for i in range(10, 16)]


def sample() -> CompatMap:
    meta = {
        "bump": T[5],
        "old_llvm": L[0],
        "new_llvm": L[9],
        "final_bad_triton_commit": T[5],
        "final_bad_llvm": L[9],
        "generated_at": "2025-01-01T00:00:00+00:00",
        "tool_version": "0.1.0",
    }
    return CompatMap(meta, [CompatRow(T[0], L[2]), CompatRow(T[1], L[5]), CompatRow(T[2], L[9])])


def test_round_trip_and_lines(tmp_path):
    path = tmp_path / "commits.csv"
    write_map(path, sample())
    text = path.read_text()
    assert text.startswith("# schema_version=1\n# bump=")
    assert "triton_commit,llvm_commit_last_compatible\n" in text
    back = read_map(path)
    assert back.metadata == sample().metadata
    assert [(r.triton_commit, r.llvm_commit_last_compatible) for r in back.rows] == [
        (r.triton_commit, r.llvm_commit_last_compatible) for r in sample().rows
    ]
    assert [r.line for r in back.rows] == [10, 11, 12]
    assert render_map(back) == text
    assert not list(tmp_path.glob(".*tmp")), "atomic write left a temp file"


def test_triton_for_llvm_segments():
    cmap = sample()
    assert cmap.triton_for_llvm(L[0], L) == T[0]
    assert cmap.triton_for_llvm(L[2], L) == T[0]
    assert cmap.triton_for_llvm(L[3], L) == T[1]
    assert cmap.triton_for_llvm(L[5], L) == T[1]
    assert cmap.triton_for_llvm(L[9], L) == T[2]
    short = CompatMap(cmap.metadata, cmap.rows[:2])
    assert short.triton_for_llvm(L[8], L) == T[5]  # after the last row: the bump
    with pytest.raises(InputError, match="not in the LLVM range"):
        cmap.triton_for_llvm("f" * 40, L)


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (lambda s: s.replace("schema_version=1", "schema_version=2"), ":1: unsupported schema_version"),
        (lambda s: s.replace("# schema_version=1\n", ""), ":1: expected '# schema_version=1'"),
        (lambda s: s.replace(f"# old_llvm={L[0]}", "# old_llvm=abc"), ":3: old_llvm must be a 40-hex"),
        (lambda s: s.replace("# tool_version=0.1.0\n", ""), ":8: metadata key(s) missing before the header: tool_version"),
        (lambda s: s.replace(f"{T[1]},{L[5]}", f"{T[1]},{L[5][:12]}"), ":11: llvm_commit_last_compatible must be a 40-hex"),
        (lambda s: s.replace(f"{T[1]},{L[5]}", f"{T[1]}"), ":11: expected 2 columns"),
        (lambda s: s.replace(f"{T[1]},{L[5]}", f"{T[1]},{L[2]}"), ":11: LLVM commit 000000000000 already used on line 10"),
        (lambda s: s.replace("triton_commit,llvm", "triton,llvm"), ":9: expected the header"),
        (lambda s: s + "# late comment\n", ":13: comment lines are only allowed before the header"),
    ],
)
def test_errors_name_the_line(tmp_path, mutate, message):
    path = tmp_path / "commits.csv"
    path.write_text(mutate(render_map(sample())))
    with pytest.raises(InputError) as info:
        read_map(path)
    assert str(path) + message in info.value.message


def test_missing_file_and_order_problems(tmp_path):
    with pytest.raises(InputError, match="no such file"):
        read_map(tmp_path / "nope.csv")
    path = tmp_path / "commits.csv"
    cmap = sample()
    cmap.rows[0], cmap.rows[1] = cmap.rows[1], cmap.rows[0]
    write_map(path, cmap)
    problems = order_problems(read_map(path), path, L)
    assert problems == [
        f"{path}:11: rows out of LLVM order: {L[2][:12]} is not after the LLVM commit of line 10"
    ]
    assert order_problems(read_map(path), path, L[:5])[0].startswith(f"{path}: metadata new_llvm=")
