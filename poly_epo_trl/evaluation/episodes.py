"""Agents' held-out episodes, played as TRL's tool loop plays them in training.

Each episode gets its own environment instance, ``reset(**row)`` (its observation, when it returns one, appended to
the last user message); the model's turn is parsed with TRL's ``parse_response``; its tool calls run against the
episode's tools (the environment's public methods and the standalone tools), errors returned to the model as
``{"error": ...}``; the next turn continues the same token ids with the tool results' template suffix (the
trainer's own ``_get_tool_suffix_ids``), until a turn without tool calls, ``max_tool_calling_iterations`` rounds, or
the completion budget (``max_new_tokens``, tool results included). A problem's episodes depend only on (seed,
problem index), as ``TransformersSampler``'s samples do.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import torch
from trl.chat_template_utils import parse_response

from ..environments import MULTI_ENVIRONMENT_COLUMN, is_tool_method
from .sampling import SamplingSettings

Completion = list[dict[str, Any]]


@dataclass
class Agent:
    """What an episode needs besides the model: TRL's ``environment_factory`` (a callable, or ``{name: callable}``
    chosen by each row's ``environment``), the standalone ``tools``, and ``max_tool_calling_iterations`` (None: no
    limit but the completion budget)."""

    environment_factory: Callable[[], Any] | dict[str, Callable[[], Any]] | None = None
    tools: list[Callable[..., Any]] = field(default_factory=list)
    max_tool_calling_iterations: int | None = None

    def __post_init__(self) -> None:
        if self.environment_factory is None and not self.tools:
            raise ValueError("An agent needs an environment_factory or tools.")

    def start(self, row: dict[str, Any]) -> tuple[Any | None, Any]:
        """A fresh environment for ``row`` and what its ``reset(**row)`` returned, as TRL resets it (with several
        environments, the row's ``environment`` column picks one and is not passed on); (None, None) without."""
        factory = self.environment_factory
        if factory is None:
            return None, None
        if isinstance(factory, dict):
            factory = factory[row[MULTI_ENVIRONMENT_COLUMN]]
            row = {k: v for k, v in row.items() if k != MULTI_ENVIRONMENT_COLUMN}
        environment = factory()
        return environment, environment.reset(**row)

    def episode_tools(self, environment: Any | None) -> list[Callable[..., Any]]:
        """The standalone tools and the environment's public methods (TRL's rule), in TRL's order."""
        if environment is None:
            return list(self.tools)
        members = inspect.getmembers(type(environment), predicate=inspect.isfunction)
        return [*self.tools, *(getattr(environment, name) for name, _ in members if is_tool_method(name))]


def observed_prompt(prompt: list[dict[str, Any]], observation: Any) -> list[dict[str, Any]]:
    """The prompt with ``reset``'s observation (text or content blocks) appended to its last message, as TRL does."""
    if observation is None:
        return prompt
    content = prompt[-1]["content"]
    if isinstance(observation, list) and isinstance(content, str):
        content = [{"type": "text", "text": content}]
    if isinstance(observation, str) and isinstance(content, list):
        observation = [{"type": "text", "text": observation}]
    return [*prompt[:-1], {**prompt[-1], "content": content + observation}]


def run_tool_calls(calls: list[dict[str, Any]], tools: Sequence[Callable[..., Any]]) -> list[dict[str, Any]]:
    """The tool messages for one turn's calls: each result as text (content blocks as they are), a failure as
    ``{"error": ...}`` for the model to read, as TRL's tool loop answers them."""
    by_name = {tool.__name__: tool for tool in tools}
    messages = []
    for call in calls:
        if call.get("type") != "function":
            name, result = call.get("name", "unknown"), {"error": f"Unsupported tool call type: {call.get('type')}"}
        else:
            function = call["function"]
            name = function["name"]
            try:
                if name not in by_name:
                    raise ValueError(f"Tool {name} not found.")
                result = by_name[name](**function["arguments"])
                if inspect.isawaitable(result):
                    result = asyncio.run(result)
            except Exception as error:
                result = {"error": str(error)}
        messages.append({"role": "tool", "name": name, "content": result if isinstance(result, list) else str(result)})
    return messages


@dataclass
class Episode:
    """One episode in flight: its tools, token ids (prompt, then completion: the model's turns and tool results),
    the messages of its completion, and its latest turn (``{}`` when that turn was empty)."""

    environment: Any
    tools: list[Callable[..., Any]]
    prompt_ids: list[int]
    completion_ids: list[int] = field(default_factory=list)
    messages: Completion = field(default_factory=list)
    last_turn: dict[str, Any] = field(default_factory=dict)


class EpisodeSampler:
    """Plays ``settings.num_samples`` episodes per held-out row with ``model.generate``. ``tokenizer`` must parse
    responses (TRL's ``add_response_schema``); ``tool_suffix_ids(tool_messages)`` gives the template's tokens
    between a turn's end and the next turn (a GRPOTrainer's ``_get_tool_suffix_ids``)."""

    def __init__(
        self,
        model: Any,
        tokenizer: Any,
        settings: SamplingSettings,
        agent: Agent,
        tool_suffix_ids: Callable[[list[dict[str, Any]]], list[int]],
        chat_template_kwargs: dict[str, Any] | None = None,
        batch_size: int = 64,
    ) -> None:
        if batch_size < 1:
            raise ValueError("batch_size must be at least 1.")
        self.model, self.tokenizer, self.settings, self.agent = model, tokenizer, settings, agent
        self.tool_suffix_ids, self.batch_size = tool_suffix_ids, batch_size
        self.chat_template_kwargs = chat_template_kwargs or {}
        config = getattr(model.config, "text_config", None) or model.config
        self.max_model_len = getattr(config, "max_position_embeddings", None) or 1 << 62
        eos = model.generation_config.eos_token_id
        self.eos_ids = set(eos if isinstance(eos, list) else [eos]) | {tokenizer.eos_token_id}

    @classmethod
    def for_trainer(cls, trainer: Any, settings: SamplingSettings, agent: Agent, model: Any = None, **kwargs: Any):
        """The sampler a GRPOTrainer's own tool loop would be: its tokenizer, chat template and tool suffixes."""
        kwargs.setdefault(
            "chat_template_kwargs", {"chat_template": trainer.chat_template, **trainer.chat_template_kwargs}
        )
        return cls(model or trainer.model, trainer._tokenizer, settings, agent, trainer._get_tool_suffix_ids, **kwargs)

    @torch.no_grad()
    def play(self, rows: Sequence[dict[str, Any]], indices: Sequence[int]) -> list[tuple[list[Completion], list[Any]]]:
        """For each row, its episodes' completions (messages) and environments (for their rewards)."""
        was_training = self.model.training
        self.model.eval()
        try:
            return [self._play_one(row, index) for row, index in zip(rows, indices, strict=True)]
        finally:
            self.model.train(was_training)

    def _play_one(self, row: dict[str, Any], index: int) -> tuple[list[Completion], list[Any]]:
        episodes = [self._start(row) for _ in range(self.settings.num_samples)]
        device = self.model.device
        with torch.random.fork_rng(devices=[device] if device.type == "cuda" else []):
            torch.manual_seed(self.settings.problem_seed(index))
            active, rounds, most = episodes, 0, self.agent.max_tool_calling_iterations
            while active:
                self._take_turns(active)
                if rounds == most:
                    break
                active = [e for e in active if self._run_tools(e)]
                rounds += 1
        return [e.messages for e in episodes], [e.environment for e in episodes]

    def _start(self, row: dict[str, Any]) -> Episode:
        environment, observation = self.agent.start(row)
        tools = self.agent.episode_tools(environment)
        prompt = observed_prompt(row["prompt"], observation)
        prompt_ids = self.tokenizer.apply_chat_template(
            prompt,
            tools=tools or None,
            add_generation_prompt=True,
            tokenize=True,
            return_dict=False,
            **self.chat_template_kwargs,
        )
        return Episode(environment, tools, list(prompt_ids))

    def _take_turns(self, episodes: list[Episode]) -> None:
        """Each episode's next turn, sampled within what is left of its completion budget, parsed and recorded."""
        s = self.settings
        for at in range(0, len(episodes), self.batch_size):
            chunk = episodes[at : at + self.batch_size]
            inputs = [e.prompt_ids + e.completion_ids for e in chunk]
            budget = max(s.max_new_tokens - min(len(e.completion_ids) for e in chunk), 1)
            width = max(len(i) for i in inputs)
            pad = self.tokenizer.pad_token_id
            input_ids = torch.tensor([[pad] * (width - len(i)) + i for i in inputs], device=self.model.device)
            starts = torch.tensor([width - len(i) for i in inputs], device=input_ids.device)
            attention = torch.arange(width, device=input_ids.device) >= starts[:, None]
            output = self.model.generate(
                input_ids=input_ids,
                attention_mask=attention.long(),
                do_sample=True,
                temperature=s.temperature,
                top_p=s.top_p,
                top_k=s.top_k,
                max_new_tokens=budget,
                pad_token_id=pad,
            )
            for row, episode in enumerate(chunk):
                ids = output[row, width:].tolist()
                end = self._turn_end(ids)
                ids = ids[: min(end, s.max_new_tokens - len(episode.completion_ids))]
                message = (
                    parse_response(
                        self.tokenizer, ids, prefix=episode.prompt_ids + episode.completion_ids, tools=episode.tools
                    )
                    if ids
                    else {}
                )
                episode.completion_ids += ids
                episode.last_turn = message
                if message:
                    episode.messages.append(message)

    def _turn_end(self, ids: list[int]) -> int:
        """Where a sampled turn ends: just after its first end-of-sequence token (generation pads after it)."""
        return next((at + 1 for at, token in enumerate(ids) if token in self.eos_ids), len(ids))

    def _run_tools(self, episode: Episode) -> bool:
        """Runs the last turn's tool calls and appends their results; False when the episode is over (no calls, or
        the results would pass the completion budget or the model's length, when they are taken back)."""
        calls = episode.last_turn.get("tool_calls")
        if not calls:
            return False
        results = run_tool_calls(calls, episode.tools)
        suffix = self.tool_suffix_ids(results)
        total = len(episode.prompt_ids) + len(episode.completion_ids) + len(suffix)
        if len(episode.completion_ids) + len(suffix) > self.settings.max_new_tokens or total >= self.max_model_len:
            return False
        episode.messages += results
        episode.completion_ids += suffix
        return True


__all__ = ["Agent", "EpisodeSampler", "observed_prompt", "run_tool_calls"]
