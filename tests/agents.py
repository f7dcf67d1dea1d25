"""Offline pieces for agent tests: a tokenizer with the Qwen3 chat template TRL ships (so TRL's tool-calling loop
and response parser accept it), a tiny Qwen3 model, and a scripted policy that plays the model's part.

A randomly initialised tiny model never writes a well-formed tool call, so, as TRL's own agent tests do, generation
is replaced: ``scripted_generate`` reads each row's rendered conversation and continues it from a seeded script
(a tool call, a malformed call, an answer, ...). Everything after generation (parsing, running the tools, the
environments, rewards, the judge, advantages, the loss) is the real code.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable
from pathlib import Path

import torch
from tokenizers import Tokenizer, decoders, models, pre_tokenizers
from transformers import PreTrainedTokenizerFast

from poly_epo_trl.tasks.goldbach_agent.tiny import TEXT_TOKENS, qwen3_chat_tokenizer
from poly_epo_trl.tasks.sum_pair.tiny import build_tiny_model


def byte_symbols() -> list[str]:
    """The 256 byte-level symbols (GPT-2's mapping from bytes to printable characters)."""
    printable = [*range(ord("!"), ord("~") + 1), *range(0xA1, 0xAD), *range(0xAE, 0x100)]
    extra = iter(range(256, 512))
    return [chr(b) if b in printable else chr(next(extra)) for b in range(256)]


def build_tool_tokenizer() -> PreTrainedTokenizerFast:
    """Byte-level tokens (no merges), Qwen3's special and tool tokens, and TRL's Qwen3 chat template."""
    backend = Tokenizer(models.BPE(vocab={s: i for i, s in enumerate(byte_symbols())}, merges=[]))
    backend.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    backend.decoder = decoders.ByteLevel()
    tokenizer = qwen3_chat_tokenizer(backend, model_max_length=4096)
    tokenizer.add_tokens(TEXT_TOKENS)
    return tokenizer


def save_tool_model(directory: Path, seed: int = 0) -> Path:
    torch.manual_seed(seed)
    tokenizer = build_tool_tokenizer()
    model = build_tiny_model(tokenizer, hidden_size=32, num_layers=1, num_heads=2, max_positions=4096)
    model.save_pretrained(directory)
    tokenizer.save_pretrained(directory)
    return directory


def tool_call(name: str, **arguments) -> str:
    """A Qwen3 tool call as the model writes it."""
    return f"<tool_call>\n{json.dumps({'name': name, 'arguments': arguments})}\n</tool_call>"


MALFORMED = '<tool_call>\n{"name": "add", "arguments": {"n": \n</tool_call>'
Script = Callable[[random.Random, str, int], str]  # (rng, the rendered conversation, turn number) -> what to write


def scripted_generate(tokenizer, script: Script, seed: int = 0):
    """A stand-in for ``model.generate``: each left-padded row is decoded, ``script`` says what the model writes on
    that turn (0 the first, 1 after one tool result, ...), and the row comes back with it and an end of turn."""
    rng = random.Random(seed)

    def generate(input_ids: torch.Tensor, **kwargs) -> torch.Tensor:
        rows = []
        for row in input_ids.tolist():
            text = tokenizer.decode([t for t in row if t != tokenizer.pad_token_id])
            turn = text.count("<tool_response>")
            rows.append(tokenizer(script(rng, text, turn) + "<|im_end|>", add_special_tokens=False)["input_ids"])
        width = max(len(r) for r in rows)
        padded = [r + [tokenizer.pad_token_id] * (width - len(r)) for r in rows]
        return torch.cat([input_ids, torch.tensor(padded, device=input_ids.device)], dim=-1)

    return generate


def plan_script(plans: dict[str, list[str]], weights: list[float] | None = None) -> Script:
    """Each rollout follows one plan, drawn on its first turn: a list of what the model writes turn by turn (tool
    calls, then an answer). Later turns find their plan from the first thing the rollout wrote."""
    names = list(plans)

    def script(rng: random.Random, text: str, turn: int) -> str:
        if turn == 0:
            return plans[rng.choices(names, weights)[0]][0]
        first = text.split("<|im_start|>assistant\n")[1]
        steps = next(steps for steps in plans.values() if first.startswith(steps[0]))
        return steps[min(turn, len(steps) - 1)]

    return script


class Counter:
    """An environment: a counter that starts at 0; the task is to make it reach the row's ``target``."""

    def reset(self, target: int = 4, **kwargs) -> None:
        self.value, self.target = 0, target

    def add(self, n: int) -> int:
        """
        Add n to the counter.

        Args:
            n: The number to add.

        Returns:
            The counter's new value.
        """
        self.value += n
        return self.value

    def double(self) -> int:
        """
        Double the counter.

        Returns:
            The counter's new value.
        """
        self.value *= 2
        return self.value

    def get_reward(self) -> float:
        return float(self.value == self.target)


COUNTER_PLANS = {
    "add": [tool_call("add", n=4), "It is 4."],
    "add_double": [tool_call("add", n=2), tool_call("double"), "It is 4."],
    "double_add": [tool_call("double"), tool_call("add", n=4), "It is 4."],
    "wrong": [tool_call("add", n=1), "It is 1."],
    "no_tools": ["It is 4."],
    "malformed": [MALFORMED],
    "unknown_tool": [tool_call("triple", n=3), "It is 9."],
}
