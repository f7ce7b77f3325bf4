"""The Anthropic agent over real HTTP to the local fake server: stages, tools, retries, usage."""

from __future__ import annotations

import subprocess

import pytest

from fake_anthropic import (
    FakeAnthropic,
    error,
    message,
    offered_tools,
    overloaded,
    text,
    tool_block,
    tool_use,
)
from tritonbisect.compat_builder.agent import AgentError, AgentSettings, AnthropicAgent
from tritonbisect.compat_builder.prompts import FixPrompt

FAKE_KEY = "sk-ant-test-NOT-A-REAL-KEY-4242"
PROMPT = FixPrompt(system="sys", analysis="analyse this", execution="now fix")


@pytest.fixture
def worktree(tmp_path):
    root = tmp_path / "wt"
    root.mkdir()
    (root / "a.cpp").write_text("call(oldName);\n")
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    subprocess.run(["git", "-C", str(root), "add", "-A"], check=True)
    return root


def make_agent(monkeypatch, server, **settings):
    monkeypatch.setenv("ANTHROPIC_API_KEY", FAKE_KEY)
    monkeypatch.setenv("ANTHROPIC_BASE_URL", server.url)
    base = {"backoff_base": 0.01, "backoff_max": 0.05, "retry_attempts": 4, "timeout": 10}
    return AnthropicAgent(AgentSettings(model="claude-test", **{**base, **settings}))


def test_two_stages_and_retries(monkeypatch, worktree, tmp_path):
    script = [
        overloaded(times=2),
        tool_use("read_file", path="a.cpp"),
        text("Plan: rename oldName to newName in a.cpp"),
        error(500),
        message(tool_block("edit_file", path="a.cpp", old_string="oldName", new_string="newName")),
        tool_use("finish", summary="rename oldName"),
    ]
    with FakeAnthropic(script) as server:
        agent = make_agent(monkeypatch, server)
        result = agent.run(worktree, PROMPT, transcript=tmp_path / "t.json")
    assert result.summary == "rename oldName"
    assert result.analysis == "Plan: rename oldName to newName in a.cpp"
    assert result.changed == ["a.cpp"]
    assert (worktree / "a.cpp").read_text() == "call(newName);\n"
    assert result.usage == {"input_tokens": 400, "output_tokens": 80, "requests": 4}
    bodies = server.requests
    assert len(bodies) == 7  # 2 overloaded + 1 + 1 + 1 failed + 2
    assert offered_tools(bodies[0]) == ["read_file", "list_dir", "search"]
    assert offered_tools(bodies[3]) == ["read_file", "list_dir", "search"]
    assert "edit_file" in offered_tools(bodies[5]) and "finish" in offered_tools(bodies[5])
    assert bodies[3]["messages"][-1]["content"][0]["content"].endswith("call(oldName);")
    assert bodies[4]["messages"][-1] == {"role": "user", "content": "now fix"}
    assert all(FAKE_KEY in (h.get("x-api-key", "") + h.get("authorization", "")) for h in server.headers)
    assert bodies[0]["model"] == "claude-test" and bodies[0]["system"] == "sys"
    assert FAKE_KEY not in (tmp_path / "t.json").read_text()
    assert not server.unexpected


def test_gives_up_after_bounded_retries(monkeypatch, worktree):
    with FakeAnthropic([overloaded(times=10)]) as server:
        agent = make_agent(monkeypatch, server, retry_attempts=3)
        with pytest.raises(AgentError, match=r"HTTP 529 \(overloaded_error\)") as info:
            agent.run(worktree, PROMPT)
        assert len(server.requests) == 3
    assert not info.value.fatal


def test_auth_error_is_fatal_and_not_retried(monkeypatch, worktree):
    with FakeAnthropic([error(401, times=5)]) as server:
        agent = make_agent(monkeypatch, server)
        with pytest.raises(AgentError) as info:
            agent.run(worktree, PROMPT)
        assert len(server.requests) == 1
    assert info.value.fatal and FAKE_KEY not in str(info.value)


def test_connection_refused_is_retried(monkeypatch, worktree):
    server = FakeAnthropic().start()
    url = server.url
    server.stop()
    monkeypatch.setenv("ANTHROPIC_API_KEY", FAKE_KEY)
    monkeypatch.setenv("ANTHROPIC_BASE_URL", url)
    agent = AnthropicAgent(AgentSettings(backoff_base=0.01, backoff_max=0.02, retry_attempts=2, timeout=5))
    with pytest.raises(AgentError, match="cannot connect.*after 2 tries"):
        agent.run(worktree, PROMPT)


def test_missing_key_is_a_clear_input_error(monkeypatch):
    from tritonbisect.core.errors import InputError

    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    with pytest.raises(InputError, match="ANTHROPIC_API_KEY is not set"):
        AnthropicAgent(AgentSettings())
