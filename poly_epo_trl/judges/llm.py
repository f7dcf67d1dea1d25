"""Language-model judges: a prompt template in, a JSON object of cluster ids out, resilient to a flaky service.

``LMJudge`` renders the template, asks the model (``request``: one call, implemented per backend) through the
retry budget, circuit breaker and adaptive concurrency of ``resilience``, reads the ids from the JSON reply, re-asks
once with the validation error quoted back when the reply is invalid, and caches answers on disk. Backends: any
OpenAI-compatible server (``openai_server``), Claude (``anthropic``), a local transformers model (``transformers``).
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import random
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from typing import Any

from .base import ClusteringJudge, Clusters
from .cache import JudgeCache, cache_key
from .errors import InvalidAnswer, RequestRejected
from .prompts import JudgeTemplate, correction, keep_end, known_strategies, merge_part, read_judgement, split_evenly
from .resilience import AdaptiveConcurrency, CircuitBreaker, RetryPolicy, call_with_retries

logger = logging.getLogger(__name__)
STRUCTURED_OUTPUTS = ("json_schema", "structured_outputs", "guided_json", "json_object", "none")
MAX_QUOTED_REPLY = 4000


@dataclass
class Reply:
    """One answer of the model, with the token usage the server reported (0 when it reported none)."""

    text: str
    prompt_tokens: int = 0
    completion_tokens: int = 0


@dataclass(frozen=True)
class LMOptions:
    """How a language-model judge asks its model, whatever the backend: the prompt ``template`` (a built-in name,
    a file or a ``JudgeTemplate``), the answer's ``max_tokens``, ``temperature`` on the first ask (the corrective
    re-ask after an invalid answer uses at least ``corrective_temperature``), how to ask for the answer schema
    (``structured_output``, one of STRUCTURED_OUTPUTS), the ``retry`` policy, the requests in flight at first
    (``initial_concurrency``; the limit then adapts up to the judge's ``max_concurrency``), an on-disk ``cache_dir``,
    how much of each response to send (``max_response_chars``: its end) and in how large parts
    (``max_responses_per_request``), the ``seed`` of retry jitter, and ``tools``: what an agent could call
    (``prompts.describe_tools``), for templates that show it."""

    template: str | JudgeTemplate = "math"
    max_tokens: int = 1024
    temperature: float = 0.0
    structured_output: str = "json_schema"
    corrective_temperature: float = 0.7
    retry: RetryPolicy = field(default_factory=RetryPolicy)
    initial_concurrency: int = 8
    cache_dir: str | os.PathLike | None = None
    max_response_chars: int | None = None
    max_responses_per_request: int | None = None
    seed: int = 0
    tools: str | None = None

    def __post_init__(self) -> None:
        if self.max_response_chars is not None and self.max_response_chars < 1:
            raise ValueError(f"max_response_chars must be positive or None, got {self.max_response_chars}.")
        per_request = self.max_responses_per_request
        if per_request is not None and per_request < 2:
            raise ValueError(f"max_responses_per_request must be at least 2 or None, got {per_request}.")
        if self.structured_output not in STRUCTURED_OUTPUTS:
            raise ValueError(f"structured_output must be one of {STRUCTURED_OUTPUTS}, got {self.structured_output!r}.")
        if self.max_tokens < 1 or self.temperature < 0:
            raise ValueError(
                f"max_tokens must be positive and temperature >= 0, got {self.max_tokens}, {self.temperature}."
            )


class LMJudge(ClusteringJudge):
    """Base of the language-model judges: ``model`` asked as ``options`` say (``LMOptions``). ``request(messages,
    num_completions, temperature, structured)`` is one call to the model; ``structured`` is one of
    STRUCTURED_OUTPUTS, the way to ask for the answer schema. ``breaker``: the service's circuit breaker (a fresh
    one by default; none for a judge without a service, ``uses_service = False``)."""

    uses_service = True

    def __init__(
        self, model: str, options: LMOptions | None = None, breaker: CircuitBreaker | None = None, **kwargs: Any
    ) -> None:
        super().__init__(**kwargs)
        options = options or LMOptions()
        self.model = model
        self.template = (
            options.template if isinstance(options.template, JudgeTemplate) else JudgeTemplate.load(options.template)
        )
        self.max_tokens = options.max_tokens
        self.temperature = options.temperature
        self.structured_output = options.structured_output  # turned "none" for a server that rejects it
        self.corrective_temperature = options.corrective_temperature
        self.retry = options.retry
        self.max_response_chars = options.max_response_chars
        self.max_responses_per_request = options.max_responses_per_request
        self.tools = options.tools
        self.breaker = breaker if breaker is not None or not self.uses_service else CircuitBreaker()
        self.limiter = AdaptiveConcurrency(self.max_concurrency, options.initial_concurrency)
        self.cache = JudgeCache(options.cache_dir) if options.cache_dir is not None else None
        self.rng = random.Random(options.seed)

    async def request(self, messages: list[dict], num_completions: int, temperature: float, structured: str) -> Reply:
        raise NotImplementedError

    def where(self) -> str:
        return f"the {self.name} judge (model {self.model!r})"

    @contextlib.contextmanager
    def retries_within(self, budget: float) -> Iterator[None]:
        saved = self.retry
        self.retry = replace(saved, budget=min(saved.budget, budget))
        try:
            yield
        finally:
            self.retry = saved

    def group_concurrency(self) -> int:
        return 1 << 30  # the adaptive limiter bounds the requests in flight

    async def _request(self, messages: list[dict], num_completions: int, temperature: float) -> Reply:
        """One call; a server that rejects the structured-output request (a 400/422) is asked again without it,
        and when that works structured output is turned off for the rest of the run, with a warning."""
        structured = self.structured_output
        try:
            return await self.request(messages, num_completions, temperature, structured)
        except RequestRejected as error:
            if structured == "none" or error.status not in (400, 422):
                raise
            rejection = str(error)
            reply = await self.request(messages, num_completions, temperature, "none")
        if self.structured_output != "none":
            self.structured_output = "none"
            self.stats["structured_output_off"] += 1
            logger.warning(
                "%s rejected structured output (%s: %s); asking without it from now on. Set judge_structured_output "
                "to 'none' (or to the form your server supports) to silence this.",
                self.where(),
                structured,
                rejection,
            )
        return reply

    async def _ask(self, messages: list[dict], num_completions: int, temperature: float) -> Reply:
        async def call() -> Reply:
            return await self._request(messages, num_completions, temperature)

        try:
            reply = await call_with_retries(
                call, self.retry, self.breaker, self.limiter, self.stats, self.rng, self.latencies
            )
        finally:
            self.stats["concurrency_limit"] = self.limiter.limit
        self.stats["prompt_tokens"] += reply.prompt_tokens
        self.stats["completion_tokens"] += reply.completion_tokens
        return reply

    async def acluster(self, prompt: str, completions: list[str]) -> Clusters:
        """One group's ids and the judge's strategy descriptions: one request, or with ``max_responses_per_request``
        set and a larger group, one request per part in turn, each later part told the strategies found so far
        (``prompts.known_strategies``) and merged into the group's numbering (``prompts.merge_part``)."""
        cap = self.max_responses_per_request
        split = cap is not None and len(completions) > cap
        cut = () if self.max_response_chars is None else (self.max_response_chars,)  # uncut: the keys stay as before
        parts = (cap,) if split else ()
        told = () if self.tools is None else (self.tools,)  # untold: the keys stay as before
        key = cache_key(
            self.template.digest, type(self).__name__, self.model, prompt, completions, *cut, *parts, *told
        )
        if self.cache is not None and (cached := self.cache.get(key)) is not None:
            self.stats["cache_hits"] += 1
            ids, strategies = cached
            return Clusters(ids, strategies or [None] * len(ids))
        if not split:
            content = self.template.render(prompt, completions, self.max_response_chars, self.tools)
            ids, strategies, ignored = await self._judge(content, completions)
        else:
            known: dict[int, str] = {}
            ids, strategies, ignored = [], [], {}
            for part in split_evenly(len(completions), cap):
                answers = completions[part.start : part.stop]
                content = self.template.render(prompt, answers, self.max_response_chars, self.tools)
                if known:
                    content += known_strategies(known, self.degenerate_cluster_id)
                part_ids, part_strategies, part_ignored = await self._judge(content, answers)
                ignored.update(part_ignored)
                described = [  # a response's words outside its block: one JSON string, its quotes escaped
                    s or f"like this answer: {json.dumps(_gist(a))}"
                    for s, a in zip(part_strategies, answers, strict=True)
                ]
                ids += merge_part(known, part_ids, described, self.degenerate_cluster_id)
                strategies += part_strategies
                self.stats["split_requests"] += 1
        if self.cache is not None:
            self.cache.put(key, ids, strategies)
        return Clusters(ids, strategies, ignored or None)

    async def _judge(self, content: str, answers: list[str]) -> tuple[list[int], list[str | None], dict[str, Any]]:
        """Ids and strategies of the answers in one prompt, and what the valid reply held beyond them (read past,
        for the audit trail: ``prompts.read_judgement``); an invalid reply is re-asked once with the error."""
        n = len(answers)
        messages = [{"role": "user", "content": content}]
        reply = await self._ask(messages, n, self.temperature)
        try:
            return self._read(reply.text, n)
        except InvalidAnswer as error:
            self.stats["invalid_answers"] += 1
            self.stats["corrective_turns"] += 1
            messages += [
                {"role": "assistant", "content": reply.text[:MAX_QUOTED_REPLY]},
                {"role": "user", "content": correction(error, n)},
            ]
        reply = await self._ask(messages, n, max(self.temperature, self.corrective_temperature))
        try:
            return self._read(reply.text, n)
        except InvalidAnswer:
            self.stats["invalid_answers"] += 1
            raise

    def _read(self, text: str, n: int) -> tuple[list[int], list[str | None], dict[str, Any]]:
        ids, strategies, ignored = read_judgement(text, n)
        if ignored:
            self.stats["replies_with_ignored_keys"] += 1
        return ids, strategies, ignored

    def __repr__(self) -> str:
        return f"{type(self).__name__}(model={self.model!r}, template={self.template.name!r})"


def _gist(answer: str, chars: int = 300) -> str:
    """An answer on one line, its end kept: how a strategy without a description is shown to later parts."""
    return keep_end(" ".join(answer.split()), chars)
