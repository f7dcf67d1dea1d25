"""What the judge tests share: a scripted fake service at the HTTP boundary (``Script``), its replies, and the
judges built on it."""

import asyncio
import json

import httpx2

from poly_epo_trl.judges import (
    AnthropicJudge,
    JudgePipeline,
    JudgeSpec,
    LMOptions,
    OpenAICompatibleJudge,
    RetryPolicy,
    ServerOptions,
)

# Quick retries of scripted failures; a timeout no request meets however loaded the machine (a client's first
# request sets itself up inside it): a test that wants a timeout scripts a hang and gives its own
FAST = RetryPolicy(timeout=60.0, budget=0.3, base_delay=0.001, max_delay=0.01)
PROBLEM = "Solve x^2 - 5x + 6 = 0."
COMPLETIONS = ["factor: (x-2)(x-3), so x=2 or 3", "quadratic formula gives 2 and 3", "(x-2)(x-3)=0", "asdf"]
GOOD = json.dumps(
    {
        "1": {"strategy": "factoring", "cluster_id": 1},
        "2": {"strategy": "quadratic formula", "cluster_id": 2},
        "3": {"strategy": "factoring", "cluster_id": 1},
        "4": {"strategy": "gibberish", "cluster_id": 100},
    }
)


def anthropic_reply(text: str) -> httpx2.Response:
    return httpx2.Response(
        200,
        json={
            "id": "msg_1",
            "type": "message",
            "role": "assistant",
            "model": "claude-test",
            "content": [{"type": "text", "text": text}],
            "stop_reason": "end_turn",
            "stop_sequence": None,
            "usage": {"input_tokens": 10, "output_tokens": 10},
        },
    )


def openai_reply(text: str) -> httpx2.Response:
    return httpx2.Response(200, json={"choices": [{"message": {"role": "assistant", "content": text}}]})


class Script:
    """A fake service: each call takes the next scripted action (a reply text, an int status, or 'hang')."""

    def __init__(self, actions, reply=anthropic_reply, latency: float = 0.0):
        self.actions = list(actions)
        self.reply = reply
        self.latency = latency
        self.calls = 0
        self.requests = []
        self.in_flight = self.max_in_flight = 0

    async def __call__(self, request: httpx2.Request) -> httpx2.Response:
        self.calls += 1
        self.requests.append(request)
        action = self.actions.pop(0) if self.actions else GOOD
        if self.latency:
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)
            await asyncio.sleep(self.latency)
            self.in_flight -= 1
        if action == "hang":
            await asyncio.sleep(30)
        if action == 429:
            return httpx2.Response(429, headers={"retry-after": "0.05"}, json={"error": {"type": "rate_limit_error"}})
        if isinstance(action, int):
            return httpx2.Response(action, json={"error": {"type": "api_error", "message": "boom"}})
        return self.reply(action)


def claude(script: Script, fallback: str = "distinct", **options) -> JudgePipeline:
    """Claude on the scripted service, in a pipeline with ``fallback``; ``options``: ``LMOptions`` (retry FAST)."""
    client = httpx2.AsyncClient(transport=httpx2.MockTransport(script))
    options.setdefault("retry", FAST)
    return JudgePipeline(AnthropicJudge("claude-test", LMOptions(**options), http_client=client), fallback=fallback)


def openai(
    script, fallback: str = "distinct", breaker=None, max_concurrency: int = 32, server=None, **options
) -> JudgePipeline:
    """The OpenAI-compatible judge on ``script`` (a fake service), in a pipeline with ``fallback``."""
    server = server or ServerOptions("http://x/v1", "m")
    transport = httpx2.MockTransport(script)
    judge = OpenAICompatibleJudge(
        server, LMOptions(**options), transport=transport, breaker=breaker, max_concurrency=max_concurrency
    )
    return JudgePipeline(judge, fallback=fallback)


def spec(text: str, fallback: str = "raise", server=None, **options) -> JudgePipeline:
    """The pipeline a recipe's judge spec builds (``options``: ``LMOptions``)."""
    return JudgeSpec.parse(text, fallback=fallback, lm=LMOptions(**options), server=server or ServerOptions()).build()


# Reading the answer
