"""The agent's tools stay inside the worktree: every escape is a tool error, never an exception."""

from __future__ import annotations

import os
import subprocess

import pytest

from tritonbisect.compat_builder.tools import EDIT_TOOLS, READ_ONLY_TOOLS, Workspace

ALL = READ_ONLY_TOOLS + EDIT_TOOLS


@pytest.fixture
def ws(tmp_path):
    root = tmp_path / "wt"
    (root / "lib").mkdir(parents=True)
    (root / "lib" / "a.cpp").write_text("int f() { return oldName(1); }\nint g() { return 2; }\n")
    (root / "README").write_text("hello\nhello\n")
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    subprocess.run(["git", "-C", str(root), "add", "-A"], check=True)
    outside = tmp_path / "secret.txt"
    outside.write_text("do not read")
    (root / "escape").symlink_to(tmp_path)
    (root / "escape_file").symlink_to(outside)
    return Workspace(root), outside


def test_read_list_search_edit_write(ws):
    w, _ = ws
    read = w.call("read_file", {"path": "lib/a.cpp", "start_line": 2}, ALL)
    assert not read.is_error and read.content == "     2\tint g() { return 2; }"
    assert w.call("list_dir", {"path": "."}, ALL).content.splitlines() == [
        "README", "escape/", "escape_file", "lib/"
    ]
    hits = w.call("search", {"pattern": "oldName"}, ALL)
    assert hits.content == "lib/a.cpp:1:int f() { return oldName(1); }"
    assert w.call("search", {"pattern": "nothing_here"}, ALL).content == "(no matches)"
    assert w.call("edit_file", {"path": "lib/a.cpp", "old_string": "oldName", "new_string": "newName"}, ALL).content == "edited lib/a.cpp"
    assert "newName(1)" in (w.root / "lib/a.cpp").read_text()
    dup = w.call("edit_file", {"path": "README", "old_string": "hello", "new_string": "bye"}, ALL)
    assert dup.is_error and "occurs 2 times" in dup.content
    missing = w.call("edit_file", {"path": "README", "old_string": "zzz", "new_string": "bye"}, ALL)
    assert missing.is_error and "not found" in missing.content
    assert not w.call("write_file", {"path": "new/dir/b.h", "content": "x"}, ALL).is_error
    assert (w.root / "new/dir/b.h").read_text() == "x"
    assert w.changed == {"lib/a.cpp", "new/dir/b.h"}
    assert w.call("finish", {"summary": "rename\n oldName"}, ALL).content.startswith("finished")
    assert w.finished == "rename oldName"


@pytest.mark.parametrize(
    ("tool", "args", "message"),
    [
        ("read_file", {"path": "../../etc/passwd"}, "'..' is refused"),
        ("read_file", {"path": "/etc/passwd"}, "absolute paths are refused"),
        ("read_file", {"path": "~/.bashrc"}, "absolute paths are refused"),
        ("read_file", {"path": "escape/secret.txt"}, "resolves outside the worktree"),
        ("read_file", {"path": "escape_file"}, "resolves outside the worktree"),
        ("read_file", {"path": ".git/config"}, "off limits"),
        ("read_file", {"path": 3}, "path must be a non-empty string"),
        ("list_dir", {"path": "escape"}, "resolves outside the worktree"),
        ("search", {"pattern": "x", "path": "/etc"}, "absolute paths are refused"),
        ("write_file", {"path": "../../etc/passwd", "content": "x"}, "'..' is refused"),
        ("write_file", {"path": "/tmp/pwned", "content": "x"}, "absolute paths are refused"),
        ("write_file", {"path": "escape/new.txt", "content": "x"}, "resolves outside the worktree"),
        ("write_file", {"path": "escape_file", "content": "x"}, "resolves outside the worktree"),
        ("edit_file", {"path": "escape_file", "old_string": "do", "new_string": "x"}, "resolves outside"),
        ("edit_file", {"path": "lib/../../secret.txt", "old_string": "do", "new_string": "x"}, "'..' is refused"),
        ("run_shell", {"command": "cat /etc/passwd"}, "not available"),
    ],
)
def test_escapes_are_tool_errors(ws, tool, args, message):
    w, outside = ws
    result = w.call(tool, args, ALL)
    assert result.is_error and message in result.content
    assert outside.read_text() == "do not read"
    assert not os.path.exists("/tmp/pwned") or tool != "write_file"
    assert "do not read" not in result.content


def test_edit_tools_not_offered_in_analysis(ws):
    w, _ = ws
    result = w.call("edit_file", {"path": "lib/a.cpp", "old_string": "f", "new_string": "h"}, READ_ONLY_TOOLS)
    assert result.is_error and "not available now" in result.content
    assert w.changed == set()
