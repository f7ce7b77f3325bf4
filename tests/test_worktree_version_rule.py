"""A toy Triton whose setup.py only trusts a .git directory (as some real releases did): in
the engine's git worktrees `.git` is a file, so every wheel comes out as plain 3.6.0 with no
+git<sha>. The install check verifies the wheel we built, so the bisect still works."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bisectors_world import run_json
from testing.toyworld.world import make_world

pytestmark = pytest.mark.slow


def test_plain_version_builds_pass_the_install_check(tmp_path, capsys):
    world = make_world(tmp_path / "world", llvm_commits=20, triton_commits=20,
                       triton_version_rule="git-dir")
    setup = (world.triton / "python" / "setup.py").read_text()
    assert '".git"' in setup and "isdir" in setup
    t = world.truth
    order = t["triton_order"]
    i = order.index(t["triton_regression"])
    code, res, err = run_json(
        ["triton", "--triton-dir", str(world.triton), "--llvm-dir", str(world.llvm),
         "--good", order[i - 1], "--bad", order[i + 1], "--test", t["triton_test"],
         "--workdir", str(tmp_path / "home")], capsys)
    assert code == 0, err[-3000:]
    assert res["culprit"] == t["triton_regression"]
    records = [json.loads(ln) for ln in
               (Path(res["session_dir"]) / "journal.jsonl").read_text().splitlines() if ln.strip()]
    assert records and all(r["kind"] in ("pass", "fail") for r in records), records
    # the wheels really had no suffix: the check passed on the wheel, not the version
    logs = " ".join(str(r["build"].get("reason", "")) for r in records)
    assert "triton 3.6.0" in logs and "+git" not in logs, logs
