"""compat-builder pieces that need no build: prompts, state and lock, git commits, claude CLI."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from tritonbisect.compat_builder import gitops, prompts
from tritonbisect.compat_builder.agent import AgentError, AgentResult
from tritonbisect.compat_builder.claude_cli import ClaudeCliAgent
from tritonbisect.compat_builder.fixer import Fixer, ManualFixNeeded
from tritonbisect.compat_builder.session_state import (
    FIXING,
    MANUAL,
    MapState,
    SessionLock,
    session_dir,
)
from tritonbisect.core.errors import SessionLockedError
from tritonbisect.core.history import History

GCC_LOG = textwrap.dedent("""\
    building 'triton._C.libtriton' extension
    In file included from /probe/tree/lib/Dialect.cpp:3:
    /probe/tree/include/triton/Ops.h:10:5: error: no matching function for call to 'create(int)'
       10 |     create(1);
          |     ^~~~~~
    /probe/tree/include/mlir/Builders.h:4:6: note: candidate: 'void create(int, int)'
        4 | void create(int a, int b);
          |      ^~~~~~
    /probe/tree/include/mlir/Builders.h:4:6: note:   candidate expects 2 arguments, 1 provided
    /probe/tree/lib/Other.cpp:7:1: warning: unused variable 'x'
    cc1plus: some warnings being treated as errors
    error: command '/usr/bin/g++' failed with exit code 1
    """)


def test_extract_errors_keeps_notes_and_candidates_and_relativises():
    errors = prompts.extract_errors(GCC_LOG, ["/probe/tree"])
    assert errors.splitlines() == [
        "In file included from lib/Dialect.cpp:3:",
        "include/triton/Ops.h:10:5: error: no matching function for call to 'create(int)'",
        "   10 |     create(1);",
        "      |     ^~~~~~",
        "include/mlir/Builders.h:4:6: note: candidate: 'void create(int, int)'",
        "    4 | void create(int a, int b);",
        "      |      ^~~~~~",
        "include/mlir/Builders.h:4:6: note:   candidate expects 2 arguments, 1 provided",
    ]
    assert prompts.failing_files(errors) == ["include/triton/Ops.h"]
    # no compiler diagnostic: any error line; none at all: the end of the log
    assert "ImportError: undefined symbol: foo" in prompts.extract_errors("x\nImportError: undefined symbol: foo\n")
    assert prompts.extract_errors("a\nb\n") == "a\nb"


def _repo(path: Path, files: dict[str, str]) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    if not (path / ".git").exists():
        subprocess.run(["git", "init", "-q", "-b", "main", str(path)], check=True)
    for name, text in files.items():
        (path / name).parent.mkdir(parents=True, exist_ok=True)
        (path / name).write_text(text)
    env = {**os.environ, "GIT_AUTHOR_NAME": "a", "GIT_AUTHOR_EMAIL": "a@x", "GIT_COMMITTER_NAME": "a",
           "GIT_COMMITTER_EMAIL": "a@x", "GIT_AUTHOR_DATE": "2025-01-01T00:00:00Z",
           "GIT_COMMITTER_DATE": "2025-01-01T00:00:00Z"}
    subprocess.run(["git", "-C", str(path), "add", "-A"], check=True)
    subprocess.run(["git", "-C", str(path), "commit", "-qm", f"change {sorted(files)}"], check=True, env=env)
    return path


def test_llvm_diff_is_restricted_to_headers_triton_includes(tmp_path):
    llvm = _repo(tmp_path / "llvm", {"mlir/include/mlir/IR/Builders.h": "int a();\n",
                                     "llvm/include/llvm/Other.h": "int o();\n", "llvm/lib/x.cpp": "1\n"})
    _repo(llvm, {"mlir/include/mlir/IR/Builders.h": "int b();\n", "llvm/include/llvm/Other.h": "int p();\n",
                 "llvm/lib/x.cpp": "2\n"})
    triton = _repo(tmp_path / "triton", {"lib/a.cpp": '#include "mlir/IR/Builders.h"\n#include <vector>\n'})
    assert prompts.triton_includes(triton) == {"mlir/IR/Builders.h", "vector"}
    head = gitops.head(llvm)
    diff, note = prompts.llvm_header_diff(History(llvm), head, prompts.triton_includes(triton))
    assert "+int b();" in diff and "Other.h" not in diff and "x.cpp" not in diff
    assert "1 header(s)" in note
    diff, note = prompts.llvm_header_diff(History(llvm), head, set())  # none included: every changed header
    assert "Other.h" in diff and "Builders.h" in diff and "x.cpp" not in diff


def test_commit_all_squashes_and_is_deterministic(tmp_path):
    repo = _repo(tmp_path / "r", {"a.c": "old\n"})
    base = gitops.head(repo)
    assert gitops.commit_all(repo, base, "compat fix: x") is None  # nothing changed
    (repo / "a.c").write_text("new\n")
    first = gitops.commit_all(repo, base, "compat fix: x")
    (repo / "b.c").write_text("more\n")
    second = gitops.commit_all(repo, base, "compat fix: x")  # squashed onto base, not on first
    assert gitops.git(repo, "rev-parse", f"{second}^").strip() == base
    gitops.reset_hard(repo, base)
    (repo / "a.c").write_text("new\n")
    assert gitops.commit_all(repo, base, "compat fix: x") == first  # same fix, same commit


def test_state_saved_atomically_and_locked(tmp_path):
    workdir = tmp_path / "wd"
    sdir = workdir / "compat" / "20250101-000000-abc-0001"
    state = MapState.create(sdir, id=sdir.name, kind="map", triton_repo="t", llvm_repo="l", worktree="w",
                            branch="b", ai="none", ai_model="", max_attempts=5, smoke="true")
    state.save("found-incompatible", llvm="x")
    again = MapState.load(session_dir(workdir, None))
    assert [e["event"] for e in again.events] == ["created", "found-incompatible"]
    assert not list(sdir.glob(".state.json.*"))
    with SessionLock(sdir):
        code = "from tritonbisect.compat_builder.session_state import SessionLock; import sys; SessionLock(__import__('pathlib').Path(sys.argv[1])).__enter__()"
        proc = subprocess.run([sys.executable, "-c", code, str(sdir)], capture_output=True, text=True)
        assert proc.returncode != 0 and "SessionLockedError" in proc.stderr
        with pytest.raises(SessionLockedError):
            SessionLock(sdir).__enter__()



class _ScriptedAgent:
    """The AI side only: each run raises or returns the next scripted outcome."""

    def __init__(self, *outcomes) -> None:
        self.outcomes = list(outcomes)
        self.runs = 0

    def run(self, worktree, prompt, transcript=None):
        self.runs += 1
        outcome = self.outcomes.pop(0)
        if isinstance(outcome, Exception):
            raise outcome
        return outcome


def test_fatal_agent_error_goes_manual_but_a_resume_tries_again(tmp_path):
    llvm = _repo(tmp_path / "llvm", {"mlir/include/A.h": "int a();\n"})
    _repo(llvm, {"mlir/include/A.h": "int b();\n"})
    triton = _repo(tmp_path / "triton", {"lib/a.cpp": '#include "A.h"\n'})
    sdir = tmp_path / "wd" / "compat" / "s"
    state = MapState.create(sdir, id="s", kind="fix", triton_repo=str(triton), llvm_repo=str(llvm),
                            worktree=str(triton), branch="main", ai="anthropic", ai_model="", max_attempts=2,
                            smoke="true", current_triton=gitops.head(triton), phase=FIXING,
                            incompatible=gitops.head(llvm))
    # stale answers never reach the prober
    agent = _ScriptedAgent(AgentError("Anthropic API: HTTP 401", fatal=True),
                           AgentResult(summary=None, analysis="", usage={}, changed=[]))
    with pytest.raises(ManualFixNeeded, match="HTTP 401"):
        Fixer(state, prober=None, agent=agent).fix()
    assert agent.runs == 1 and state.phase == MANUAL
    state.phase = FIXING  # what `resume --ai anthropic` does
    with pytest.raises(ManualFixNeeded, match="2 AI attempt"):
        Fixer(state, prober=None, agent=agent).fix()
    assert agent.runs == 2
    assert [a["status"] for a in state.attempts] == ["agent-error", "stale"]


FAKE_CLAUDE = """#!{python}
import json, os, sys, time
mode = os.environ["FAKE_CLAUDE_MODE"]
if mode == "hang":
    import subprocess
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)"])
    open(os.environ["FAKE_CLAUDE_PIDFILE"], "w").write(str(child.pid))
    time.sleep(300)
path, old, new = os.environ["FAKE_CLAUDE_EDIT"].split("|")
text = open(path).read()
open(path, "w").write(text.replace(old, new))
assert "--disallowedTools" in sys.argv and "Bash" in sys.argv
print(json.dumps({{"type": "result", "is_error": False, "result": "Analysis...\\nrenamed old to new",
                  "usage": {{"input_tokens": 11, "output_tokens": 7}}}}))
"""


@pytest.fixture
def fake_claude(tmp_path, monkeypatch):
    bindir = tmp_path / "bin"
    bindir.mkdir()
    exe = bindir / "claude"
    exe.write_text(FAKE_CLAUDE.format(python=sys.executable))
    exe.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bindir}{os.pathsep}{os.environ['PATH']}")
    return exe


def test_claude_cli_edits_in_the_worktree(tmp_path, fake_claude, monkeypatch):
    wt = _repo(tmp_path / "wt", {"a.c": "call(old);\n"})
    monkeypatch.setenv("FAKE_CLAUDE_MODE", "edit")
    monkeypatch.setenv("FAKE_CLAUDE_EDIT", "a.c|old|new")
    agent = ClaudeCliAgent(timeout=60)
    result = agent.run(wt, prompts.FixPrompt("s", "analysis", "execute"), transcript=tmp_path / "t.json")
    assert (wt / "a.c").read_text() == "call(new);\n"
    assert result.summary == "renamed old to new"
    assert result.usage == {"input_tokens": 11, "output_tokens": 7, "requests": 1}


def test_claude_cli_timeout_kills_the_process_group(tmp_path, fake_claude, monkeypatch):
    wt = _repo(tmp_path / "wt", {"a.c": "x\n"})
    pidfile = tmp_path / "child.pid"
    monkeypatch.setenv("FAKE_CLAUDE_MODE", "hang")
    monkeypatch.setenv("FAKE_CLAUDE_PIDFILE", str(pidfile))
    agent = ClaudeCliAgent(timeout=2)
    start = time.monotonic()
    with pytest.raises(AgentError, match="did not finish within 2 s"):
        agent.run(wt, prompts.FixPrompt("s", "a", "e"), transcript=tmp_path / "t.json")
    assert time.monotonic() - start < 30
    child = int(pidfile.read_text())
    for _ in range(50):  # the grandchild is gone too (reaped by init)
        try:
            os.kill(child, 0)
        except ProcessLookupError:
            break
        time.sleep(0.1)
    else:
        os.kill(child, signal.SIGKILL)
        pytest.fail("the claude CLI's child survived the timeout")


def test_claude_cli_missing_is_a_clear_error(monkeypatch, tmp_path):
    from tritonbisect.core.errors import InputError

    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(InputError, match="`claude` CLI is not installed"):
        ClaudeCliAgent()
