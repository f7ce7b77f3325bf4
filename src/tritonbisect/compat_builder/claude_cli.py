"""`--ai claude-cli`: the fix attempt is made by the `claude` CLI, run in the compat worktree.

The CLI gets the same material as the API agent (both stages in one prompt), may use its
file tools only (no shell: Bash is not allowed), and runs in its own process group, killed
whole on timeout. Whatever it leaves in the worktree (edits, or commits of its own) is
squashed by the builder into the one `compat fix:` commit.

Given a sandbox, the CLI runs in it like the builds: it writes only the worktree (and a
private $HOME for its own settings), its environment is the allow-list plus what it needs
to reach its API (the key, ANTHROPIC_BASE_URL), and its only network is the API's host and
port, through api_gate.ApiGate.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

from tritonbisect.builds.build_process import SandboxedRunner, run_logged
from tritonbisect.builds.sandbox import Sandbox
from tritonbisect.compat_builder.agent import AgentError, AgentResult
from tritonbisect.compat_builder.api_gate import ApiGate
from tritonbisect.compat_builder.prompts import FixPrompt
from tritonbisect.core.errors import InputError

ALLOWED_TOOLS = "Read,Edit,Write,Grep,Glob,LS"
# what the CLI needs from our environment to reach its API (beside the sandbox's allow-list);
# no proxy variables: inside, the API's host is reached directly through the gate
API_ENV = ("ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL", "ANTHROPIC_MODEL", "NODE_EXTRA_CA_CERTS", "SSL_CERT_FILE")


class ClaudeCliAgent:
    name = "claude-cli"

    def __init__(self, *, model: str | None = None, timeout: float = 1800.0, executable: str = "claude",
                 api_key: str | None = None, sandbox: Sandbox | None = None) -> None:
        found = shutil.which(executable)
        if found is None:
            raise InputError(f"--ai claude-cli: the `{executable}` CLI is not installed (not on PATH)")
        self.executable = found
        self.model = model
        self.timeout = timeout
        self._api_key = api_key
        self.sandbox = sandbox

    def run(self, worktree: Path, prompt: FixPrompt, transcript: Path | None = None) -> AgentResult:
        text = f"{prompt.analysis}\n\n{prompt.execution}\n\nWhen you are done, reply with a one-line summary only."
        cmd = [self.executable, "-p", text, "--output-format", "json",
               "--permission-mode", "acceptEdits", "--allowedTools", ALLOWED_TOOLS,
               "--disallowedTools", "Bash"]
        if self.model:
            cmd += ["--model", self.model]
        env = dict(os.environ)
        if self._api_key:
            env["ANTHROPIC_API_KEY"] = self._api_key
        log = transcript.with_suffix(".log") if transcript else worktree.parent / "claude-cli.log"
        if self.sandbox is None:
            res = run_logged(cmd, cwd=worktree, env=env, log=log, timeout=self.timeout, header=False)
        else:
            with ApiGate(env.get("ANTHROPIC_BASE_URL")) as gate:
                run = SandboxedRunner(run_logged, self.sandbox, writable=[worktree, gate.folder],
                                      keep_env=API_ENV, files=[(gate.hosts_file, Path("/etc/hosts"))])
                res = run(gate.command(cmd), cwd=worktree, env=env, log=log, timeout=self.timeout,
                          header=False)
        output = log.read_text(encoding="utf-8", errors="replace")
        if res.timed_out:
            raise AgentError(f"the claude CLI did not finish within {self.timeout:g} s (killed)")
        data = _last_json(output)
        if res.returncode != 0 or data is None or data.get("is_error"):
            detail = (data or {}).get("result") or (output.strip().splitlines() or [""])[-1]
            raise AgentError(f"the claude CLI failed (exit {res.returncode}): {str(detail)[:300]}")
        usage = data.get("usage") or {}
        summary = str(data.get("result") or "").strip().splitlines()
        if transcript is not None:
            transcript.write_text(json.dumps({"prompt": text, "result": data}, indent=1), encoding="utf-8")
        return AgentResult(
            summary=summary[-1][:200] if summary else None,
            analysis="",
            usage={"input_tokens": int(usage.get("input_tokens", 0) or 0),
                   "output_tokens": int(usage.get("output_tokens", 0) or 0), "requests": 1},
            changed=[],
            transcript=transcript,
        )


def _last_json(output: str) -> dict | None:
    for line in reversed(output.strip().splitlines()):
        line = line.strip()
        if line.startswith("{"):
            try:
                data = json.loads(line)
            except ValueError:
                continue
            if isinstance(data, dict):
                return data
    return None
