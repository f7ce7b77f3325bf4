"""The fixer agent on the Anthropic Messages API, with tools confined to the worktree.

Two stages in one conversation: analysis (read-only tools: read_file, list_dir, search) and
then execution (the edit tools and finish are added). The model never commits or builds: the
fixer does that after `run` returns. Requests are retried with tenacity on rate limits (429),
overload (529), other 5xx and connection errors: exponential backoff with full jitter,
bounded attempts, a timeout per request. Token usage is summed per run.

The API key is read from the environment and handed to the SDK only; it is never written to
a transcript, a prompt, the state or a log.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tenacity import (
    RetryCallState,
    Retrying,
    retry_if_exception,
    stop_after_attempt,
    wait_random_exponential,
)

from tritonbisect.compat_builder.prompts import FixPrompt
from tritonbisect.compat_builder.tools import EDIT_TOOLS, READ_ONLY_TOOLS, Workspace, schemas
from tritonbisect.core.errors import InputError

DEFAULT_MODEL = "claude-sonnet-4-6"


class AgentError(Exception):
    """The agent could not run to its end (API failure after retries, refusal, ...).

    `fatal` marks errors that the next attempt would hit again (bad key, unknown model).
    """

    def __init__(self, message: str, *, fatal: bool = False) -> None:
        super().__init__(message)
        self.fatal = fatal


@dataclass
class AgentResult:
    summary: str | None  # finish(summary), or None when the model stopped without calling it
    analysis: str
    usage: dict[str, int]
    changed: list[str]  # files the tools wrote
    transcript: Path | None = None


@dataclass
class AgentSettings:
    model: str = DEFAULT_MODEL
    timeout: float = 300.0  # seconds per request
    retry_attempts: int = 6  # tries per request, the first one included
    backoff_base: float = 2.0  # seconds; waits are random in [0, base * 2**n], capped
    backoff_max: float = 60.0
    max_turns: int = 40  # model replies per stage
    max_tokens: int = 8192
    extra: dict[str, Any] = field(default_factory=dict)


def _retryable(exc: BaseException) -> bool:
    import anthropic

    if isinstance(exc, anthropic.APIConnectionError):  # includes timeouts
        return True
    if isinstance(exc, anthropic.APIStatusError):
        return exc.status_code == 429 or exc.status_code >= 500
    return False


def describe_api_error(exc: BaseException) -> str:
    import anthropic

    if isinstance(exc, anthropic.APITimeoutError):
        return "request timed out"
    if isinstance(exc, anthropic.APIConnectionError):
        return "cannot connect to the Anthropic API"
    if isinstance(exc, anthropic.APIStatusError):
        kind = ""
        try:
            body = exc.body if isinstance(exc.body, dict) else {}
            kind = str((body.get("error") or {}).get("type") or "")
        except AttributeError:
            pass
        return f"HTTP {exc.status_code}" + (f" ({kind})" if kind else "")
    return type(exc).__name__


def require_anthropic() -> None:
    """The Anthropic SDK is an extra (tritonbisect[ai]): without it, one line saying so."""
    import importlib.util

    if importlib.util.find_spec("anthropic") is None:
        raise InputError("--ai anthropic needs the Anthropic SDK, which is not installed: "
                         "pip install 'tritonbisect[ai]' (or use --ai claude-cli or --ai none)")


class AnthropicAgent:
    name = "anthropic"

    def __init__(self, settings: AgentSettings | None = None, *, api_key: str | None = None, log=None) -> None:
        require_anthropic()
        import anthropic

        self.settings = settings or AgentSettings()
        api_key = api_key or os.environ.get("ANTHROPIC_API_KEY")
        if not api_key:
            raise InputError(
                "ANTHROPIC_API_KEY is not set: set it, or use --ai claude-cli or --ai none"
            )
        self._client = anthropic.Anthropic(
            api_key=api_key,
            base_url=os.environ.get("ANTHROPIC_BASE_URL") or None,
            max_retries=0,  # tenacity retries, with our bounds
            timeout=self.settings.timeout,
        )
        self._log = log or (lambda message: None)

    # --- one request, retried ---------------------------------------------------------
    def _create(self, **request: Any) -> Any:
        import anthropic

        s = self.settings

        def before_sleep(rs: RetryCallState) -> None:
            # tenacity calls it after a failed attempt, with the next wait decided
            assert rs.outcome is not None and rs.next_action is not None
            error = rs.outcome.exception()
            assert error is not None
            self._log(f"Anthropic API: {describe_api_error(error)}; "
                      f"retry {rs.attempt_number}/{s.retry_attempts - 1} in {rs.next_action.sleep:.1f}s")

        retrying = Retrying(
            retry=retry_if_exception(_retryable),
            wait=wait_random_exponential(multiplier=s.backoff_base, max=s.backoff_max),
            stop=stop_after_attempt(max(1, s.retry_attempts)),
            reraise=True,
            before_sleep=before_sleep,
        )
        try:
            return retrying(self._client.messages.create, **request)
        except anthropic.APIStatusError as exc:
            fatal = exc.status_code in (400, 401, 403, 404)
            raise AgentError(f"Anthropic API: {describe_api_error(exc)}", fatal=fatal) from None
        except anthropic.APIConnectionError as exc:
            raise AgentError(f"Anthropic API: {describe_api_error(exc)} after {s.retry_attempts} tries") from None

    # --- the two stages ---------------------------------------------------------------
    def run(self, worktree: Path, prompt: FixPrompt, transcript: Path | None = None) -> AgentResult:
        workspace = Workspace(worktree)
        usage = {"input_tokens": 0, "output_tokens": 0, "requests": 0}
        messages: list[dict[str, Any]] = [{"role": "user", "content": prompt.analysis}]
        analysis = ""
        try:
            analysis = self._converse(messages, workspace, READ_ONLY_TOOLS, prompt.system, usage)
            messages.append({"role": "user", "content": prompt.execution})
            self._converse(messages, workspace, READ_ONLY_TOOLS + EDIT_TOOLS, prompt.system, usage)
        finally:
            if transcript is not None:
                transcript.write_text(
                    json.dumps({"system": prompt.system, "messages": messages, "usage": usage}, indent=1),
                    encoding="utf-8",
                )
        return AgentResult(
            summary=workspace.finished,
            analysis=analysis,
            usage=usage,
            changed=sorted(workspace.changed),
            transcript=transcript,
        )

    def _converse(
        self,
        messages: list[dict[str, Any]],
        workspace: Workspace,
        allowed: tuple[str, ...],
        system: str,
        usage: dict[str, int],
    ) -> str:
        """Talk until the model stops calling tools (or calls finish); returns its last text."""
        last_text = ""
        for _turn in range(self.settings.max_turns):
            response = self._create(
                model=self.settings.model,
                max_tokens=self.settings.max_tokens,
                system=system,
                tools=schemas(allowed),
                messages=messages,
                **self.settings.extra,
            )
            usage["requests"] += 1
            if getattr(response, "usage", None) is not None:
                usage["input_tokens"] += int(getattr(response.usage, "input_tokens", 0) or 0)
                usage["output_tokens"] += int(getattr(response.usage, "output_tokens", 0) or 0)
            content = [block.model_dump(exclude_none=True) for block in response.content]
            messages.append({"role": "assistant", "content": content})
            texts = [b.get("text", "") for b in content if b.get("type") == "text"]
            if texts:
                last_text = "\n".join(texts).strip()
            calls = [b for b in content if b.get("type") == "tool_use"]
            if not calls:
                return last_text
            results = []
            for call in calls:
                outcome = workspace.call(call.get("name", ""), call.get("input") or {}, allowed)
                results.append(
                    {
                        "type": "tool_result",
                        "tool_use_id": call.get("id"),
                        "content": outcome.content,
                        **({"is_error": True} if outcome.is_error else {}),
                    }
                )
            messages.append({"role": "user", "content": results})
            if workspace.finished is not None:
                return last_text
        raise AgentError(f"the model did not finish within {self.settings.max_turns} turns")
