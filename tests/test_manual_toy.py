"""Judging Triton by hand on the toy world (real LLVM and Triton builds): the person activates
the venv the tool names, runs the kernel test in the checkout it names, and answers."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from engine_repo import env_for
from testing.toyworld.world import make_world

pexpect = pytest.importorskip("pexpect")
pytestmark = pytest.mark.slow


def test_triton_judged_by_hand_in_the_venv_the_tool_names(tmp_path: Path) -> None:
    world = make_world(tmp_path / "world", llvm_commits=20, triton_commits=20)
    t = world.truth
    order = t["triton_order"]
    i = order.index(t["triton_regression"])
    good, bad = order[i - 2], order[min(i + 2, len(order) - 1)]
    home = tmp_path / "home"
    child = pexpect.spawn(
        sys.executable,
        ["-m", "tritonbisect.cli", "triton", "--triton-dir", str(world.triton), "--llvm-dir",
         str(world.llvm), "--good", good, "--bad", bad, "--json"],
        cwd=str(world.triton), env=env_for(home, TERM="dumb"), encoding="utf-8", timeout=600,
        dimensions=(50, 200),
    )
    judged = []
    while child.expect([r"commit ([0-9a-f]{40}) is ready to judge", pexpect.EOF]) == 0:
        commit = child.match.group(1)
        child.expect(r"checkout: (\S+)")
        checkout = child.match.group(1)
        child.expect(r"venv:\s+\. (\S+)/bin/activate")
        venv = child.match.group(1)
        child.expect_exact("Your verdict?")
        # what a person does: activate the venv, run the kernel's test in the checkout
        run = subprocess.run(
            ["bash", "-c", f". {venv}/bin/activate && {t['triton_test']}"],
            cwd=checkout, capture_output=True, text=True, timeout=300,
            env={k: v for k, v in env_for(home).items() if k not in ("VIRTUAL_ENV", "PYTHONPATH")},
        )
        judged.append((commit, run.returncode))
        child.sendline("good" if run.returncode == 0 else "bad")
    child.close()
    assert child.exitstatus == 0, child.before[-3000:]
    text = child.before.replace("\r", "")
    import json

    result = json.loads(text[text.rindex('{"culprit"'):].splitlines()[0])
    assert result["culprit"] == t["triton_regression"]
    assert judged and {code for _, code in judged} == {0, 1}
