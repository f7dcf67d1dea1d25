"""A judge on any OpenAI-compatible chat-completions server: ``vllm serve``, SGLang, llama.cpp's ``llama-server``.

Replies are streamed, so a request given up on (timeout, cancelled batch) closes its connection and the server
aborts it (vLLM and llama.cpp stop generating for a disconnected client) instead of finishing it for nobody.
Every error message names the URL (credentials removed), the cause and the fix.
"""

from __future__ import annotations

import asyncio
import json
import os
import threading
from dataclasses import dataclass
from typing import Any

from .errors import ConnectFailed, FatalJudgeError, RateLimited, RequestRejected, ServerError, ServiceError
from .http import check_url, redact, redact_url, retry_after
from .llm import LMJudge, LMOptions, Reply
from .prompts import answer_schema

MAX_REPLY_CHARS = 200_000


def _server_message(text: str) -> str:
    try:
        body = json.loads(text)
    except ValueError:
        return text.strip()[:300]
    if isinstance(body, dict):
        error = body.get("error", body)
        if isinstance(error, dict):
            return str(error.get("message") or error.get("detail") or error)[:300]
        return str(error)[:300]
    return text.strip()[:300]


@dataclass(frozen=True)
class ServerOptions:
    """Where an OpenAI-compatible judge server is and how to talk to it: ``base_url``, the API root
    (``http://host:8000/v1``); ``model``, the served model id, or None for the only model the server lists at
    ``GET {base_url}/models``; ``api_key_env``, the environment variable holding its API key, if any; ``extra_body``,
    merged last into every request (e.g. ``chat_template_kwargs``, or your own ``response_format``); ``stream=False``
    for servers that cannot stream (a given-up request then runs on in the server)."""

    base_url: str | None = None
    model: str | None = None
    api_key_env: str = "OPENAI_API_KEY"
    extra_body: dict[str, Any] | None = None
    stream: bool = True


class OpenAICompatibleJudge(LMJudge):
    """A chat-completions server over plain HTTP, where ``server`` says (``ServerOptions``), asked as ``options``
    say (``llm.LMOptions``). ``transport``: an httpx transport (tests)."""

    name = "openai"

    def __init__(
        self, server: ServerOptions, options: LMOptions | None = None, transport: Any = None, **kwargs: Any
    ) -> None:
        super().__init__(server.model or "", options, **kwargs)
        if not server.base_url:
            raise ValueError("The judge server has no base_url (e.g. http://127.0.0.1:8000/v1).")
        check_url(server.base_url, "The judge base URL")
        self.base_url = server.base_url.rstrip("/")
        self.api_key_env = server.api_key_env
        self.extra_body = dict(server.extra_body or {})
        self.stream = server.stream
        self._transport = transport
        self._clients: dict[int, Any] = {}
        self._lock = threading.Lock()

    def where(self) -> str:
        return f"the judge at {redact_url(self.base_url)} (model {self.model or '<from /models>'!r})"

    def client(self) -> Any:
        """One client per event loop (each batch may run in a fresh loop)."""
        import httpx2

        loop = id(asyncio.get_running_loop())
        with self._lock:
            if loop not in self._clients:
                timeout = httpx2.Timeout(connect=self.retry.connect_timeout, read=None, write=30.0, pool=None)
                limits = httpx2.Limits(max_connections=None, max_keepalive_connections=self.max_concurrency)
                self._clients = {loop: httpx2.AsyncClient(transport=self._transport, timeout=timeout, limits=limits)}
            return self._clients[loop]

    def _headers(self) -> dict[str, str]:
        key = os.environ.get(self.api_key_env)
        return {"Authorization": f"Bearer {key}"} if key else {}

    def _transport_error(self, error: Exception, url: str) -> ServiceError:
        import httpx2

        cause = str(error).strip() or type(error).__name__
        if isinstance(error, httpx2.ConnectError | httpx2.ConnectTimeout):
            return ConnectFailed(
                f"cannot connect to {redact_url(url)} ({cause}): start the judge server (e.g. `vllm serve <model>`) "
                "or fix judge_base_url"
            )
        return ServerError(
            f"the connection to {redact_url(url)} broke ({type(error).__name__}: {cause}): the server may have "
            "restarted or crashed"
        )

    def _status_error(self, status: int, text: str, headers: Any, url: str) -> Exception:
        message = redact(_server_message(text), [os.environ.get(self.api_key_env)])
        head = f"HTTP {status} from {redact_url(url)}: {message}"
        if status == 429:
            return RateLimited(head, retry_after(headers))
        if status >= 500 or status == 408:
            return ServerError(head, retry_after(headers), overload=status in (408, 503))
        if status in (401, 403):
            fix = (
                f"the key in ${self.api_key_env} was refused"
                if os.environ.get(self.api_key_env)
                else f"the server wants an API key: export it as ${self.api_key_env} (judge_api_key_env names it)"
            )
            return RequestRejected(f"{head}; {fix}", status)
        if status == 404:
            return RequestRejected(
                f"{head}; check judge_base_url (the API root, e.g. http://host:8000/v1) and judge_model "
                f"(GET {redact_url(self.base_url)}/models lists the served models)",
                status,
            )
        return RequestRejected(f"{head}; the server rejected this group's request", status)

    async def _resolve_model(self) -> None:
        """Without a model id, the server's only model (``GET /models``)."""
        import httpx2

        url = f"{self.base_url}/models"
        try:
            response = await self.client().get(url, headers=self._headers())
        except httpx2.TransportError as error:
            raise self._transport_error(error, url) from None
        if response.status_code != 200:
            raise self._status_error(response.status_code, response.text, response.headers, url)
        try:
            served = [entry["id"] for entry in response.json()["data"]]
        except (ValueError, KeyError, TypeError):
            raise ServerError(f"GET {redact_url(url)} did not return a model list") from None
        if len(served) != 1:
            raise FatalJudgeError(
                f"{redact_url(url)} serves {served}: set judge_model to the one to use as the judge."
            )
        self.model = served[0]

    def _body(self, messages: list[dict], num_completions: int, temperature: float, structured: str) -> dict:
        body: dict[str, Any] = {
            "model": self.model,
            "messages": messages,
            "max_tokens": self.max_tokens,
            "temperature": temperature,
        }
        if self.stream:
            body["stream"] = True
            body["stream_options"] = {"include_usage": True}
        schema = answer_schema(num_completions)
        if structured == "json_schema":
            body["response_format"] = {
                "type": "json_schema",
                "json_schema": {"name": "clusters", "strict": True, "schema": schema},
            }
        elif structured == "structured_outputs":  # vLLM's own field (0.12 and later; they ignore guided_json)
            body["structured_outputs"] = {"json": schema}
        elif structured == "guided_json":
            body["guided_json"] = schema
        elif structured == "json_object":
            body["response_format"] = {"type": "json_object"}
        body.update(self.extra_body)
        return body

    async def request(self, messages: list[dict], num_completions: int, temperature: float, structured: str) -> Reply:
        import httpx2

        if not self.model:
            await self._resolve_model()
        url = f"{self.base_url}/chat/completions"
        body = self._body(messages, num_completions, temperature, structured)
        try:
            async with self.client().stream("POST", url, json=body, headers=self._headers()) as response:
                if response.status_code != 200:
                    text = (await response.aread()).decode(errors="replace")
                    raise self._status_error(response.status_code, text, response.headers, url)
                if "text/event-stream" in response.headers.get("content-type", ""):
                    return await self._read_stream(response, url)
                return self._read_body(await response.aread(), url)
        except httpx2.TransportError as error:
            raise self._transport_error(error, url) from None

    async def _read_stream(self, response: Any, url: str) -> Reply:
        parts: list[str] = []
        size = 0
        usage: dict = {}
        async for line in response.aiter_lines():
            if not line.startswith("data:"):
                continue
            data = line[5:].strip()
            if data == "[DONE]":
                break
            try:
                chunk = json.loads(data)
            except ValueError:
                raise ServerError(f"{redact_url(url)} streamed a line that is not JSON: {data[:100]!r}") from None
            if not isinstance(chunk, dict):
                continue
            if "error" in chunk:
                raise ServerError(f"{redact_url(url)} failed mid-reply: {_server_message(data)}")
            for choice in chunk.get("choices") or []:
                content = ((choice or {}).get("delta") or {}).get("content")
                if content:
                    parts.append(content)
                    size += len(content)
            usage = chunk.get("usage") or usage
            if size > MAX_REPLY_CHARS:
                break  # leaving the stream closes the connection, which stops the generation
        return Reply("".join(parts), *_tokens(usage))

    @staticmethod
    def _read_body(raw: bytes, url: str) -> Reply:
        try:
            body = json.loads(raw)
            text = body["choices"][0]["message"]["content"] or ""
        except (ValueError, KeyError, IndexError, TypeError):
            raise ServerError(f"{redact_url(url)} replied with a body that is not a chat completion") from None
        return Reply(text, *_tokens(body.get("usage") or {}))


def _tokens(usage: dict) -> tuple[int, int]:
    def number(key: str) -> int:
        value = usage.get(key) if isinstance(usage, dict) else None
        return value if isinstance(value, int) and not isinstance(value, bool) else 0

    return number("prompt_tokens"), number("completion_tokens")
