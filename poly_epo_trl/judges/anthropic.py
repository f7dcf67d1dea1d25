"""A judge on Claude through the ``anthropic`` SDK's async client.

The installed SDK's ``messages.create`` takes no temperature: answers are made reproducible by the judge cache
(``judge_cache_dir``), and the answer shape by ``output_config``'s JSON-schema format (structured output)."""

from __future__ import annotations

import os
from typing import Any

from .errors import ConnectFailed, FatalJudgeError, JudgeTimeout, RateLimited, RequestRejected, ServerError
from .http import redact, retry_after
from .llm import LMJudge, LMOptions, Reply
from .prompts import answer_schema


class AnthropicJudge(LMJudge):
    """Claude. The API key comes from ``ANTHROPIC_API_KEY`` only; ``structured_output`` other than "none" asks for
    the answer schema through ``output_config``."""

    name = "anthropic"

    def __init__(
        self,
        model: str = "claude-sonnet-4-5",
        options: LMOptions | None = None,
        http_client: Any = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(model, options, **kwargs)
        self._http_client = http_client
        self._client: Any = None

    def client(self) -> Any:
        if self._client is None:
            import anthropic

            if not os.environ.get("ANTHROPIC_API_KEY"):
                raise FatalJudgeError("ANTHROPIC_API_KEY is not set: export it in the environment of the run.")
            self._client = anthropic.AsyncAnthropic(max_retries=0, http_client=self._http_client)
        return self._client

    async def request(self, messages: list[dict], num_completions: int, temperature: float, structured: str) -> Reply:
        import anthropic

        client = self.client()
        options: dict[str, Any] = {}
        if structured != "none":
            schema = answer_schema(num_completions, max_strategy_chars=None)
            options["output_config"] = {"format": {"type": "json_schema", "schema": schema}}
        try:
            message = await client.messages.create(
                model=self.model, max_tokens=self.max_tokens, messages=messages, **options
            )
        except anthropic.RateLimitError as error:
            raise RateLimited("Anthropic API: 429 rate limited", retry_after(error.response.headers)) from None
        except anthropic.APITimeoutError:
            raise JudgeTimeout("the Anthropic API timed out") from None
        except anthropic.APIConnectionError as error:
            raise ConnectFailed(
                f"cannot reach the Anthropic API ({type(error).__name__}): check the network of the run"
            ) from None
        except anthropic.APIStatusError as error:
            text = redact(str(error), [os.environ.get("ANTHROPIC_API_KEY")])[:300]
            if error.status_code >= 500 or error.status_code == 408:
                overload = error.status_code in (408, 529)
                raise ServerError(
                    f"Anthropic API: HTTP {error.status_code}: {text}", retry_after(error.response.headers), overload
                ) from None
            fix = "; check ANTHROPIC_API_KEY" if error.status_code in (401, 403) else ""
            raise RequestRejected(f"Anthropic API: HTTP {error.status_code}: {text}{fix}", error.status_code) from None
        text = "".join(block.text for block in message.content if getattr(block, "type", "") == "text")
        usage = getattr(message, "usage", None)
        return Reply(text, getattr(usage, "input_tokens", 0) or 0, getattr(usage, "output_tokens", 0) or 0)
