"""Supervised warm start for the agent task: a tiny model that calls ``submit`` in TRL's Qwen3 tool-call format with
a pair summing to S (a uniform, b = S - a, a fraction ``noise`` of them off by 1 to 3, as the toy task's warm start),
then ends with ``Done.``; regenerated deterministically, tokenizer included.

    python -m poly_epo_trl.tasks.goldbach_agent.warm_start --out poly_epo_trl/tasks/goldbach_agent/assets/warm_start
"""

from __future__ import annotations

import random
from pathlib import Path

import torch

from ..sum_pair.tiny import build_tiny_model
from ..sum_pair.warm_start import sample_answer, train_supervised, warm_start_command
from . import DEFAULT_ASSET, GoldbachEnvironment, make_prompt
from .tiny import train_tokenizer

ALL_EVEN_TOTALS = tuple(range(10, 100, 2))


def conversation(total: int, rng: random.Random, noise: float) -> list[dict]:
    """One episode as chat messages: the prompt, the agent's ``submit`` call, the environment's answer, ``Done.``"""
    a, b = (int(x) for x in sample_answer(total, rng, noise).split("+"))
    call = {"type": "function", "function": {"name": "submit", "arguments": {"p": a, "q": b}}}
    return [
        *make_prompt(total),
        {"role": "assistant", "content": "", "tool_calls": [call]},
        {"role": "tool", "name": "submit", "content": GoldbachEnvironment().submit(a, b)},
        {"role": "assistant", "content": "Done."},
    ]


def assistant_labels(ids: list[int], opener: list[int], end_id: int) -> list[int]:
    """Labels for causal-LM training: the tokens of each assistant turn (after ``opener``, through its end token),
    -100 elsewhere."""
    labels = [-100] * len(ids)
    i = 0
    while i < len(ids):
        if ids[i : i + len(opener)] == opener:
            j = i + len(opener)
            while j < len(ids) and ids[j] != end_id:
                labels[j] = ids[j]
                j += 1
            if j < len(ids):
                labels[j] = ids[j]
            i = j
        i += 1
    return labels


def warm_start(
    out: Path = DEFAULT_ASSET,
    seed: int = 0,
    steps: int = 1500,
    batch_size: int = 64,
    lr: float = 3e-3,
    noise: float = 0.25,
    log_every: int = 100,
) -> Path:
    """Train the tokenizer on rendered episodes, then the tiny model on the agent's turns; save both to ``out``."""
    torch.manual_seed(seed)
    rng = random.Random(seed)
    tools = [GoldbachEnvironment().submit]
    renderer = train_tokenizer(["x"], vocab_size=300)
    corpus = [
        renderer.apply_chat_template(
            conversation(rng.choice(ALL_EVEN_TOTALS), rng, noise), tools=tools, tokenize=False
        )
        for _ in range(2000)
    ]
    tokenizer = train_tokenizer(corpus, vocab_size=1000)
    opener = tokenizer("<|im_start|>assistant\n", add_special_tokens=False)["input_ids"]
    model = build_tiny_model(tokenizer, hidden_size=96, num_layers=3, num_heads=3, max_positions=256)

    def batch() -> list[tuple[list[int], list[int]]]:
        rows = [
            tokenizer.apply_chat_template(
                conversation(rng.choice(ALL_EVEN_TOTALS), rng, noise), tools=tools, tokenize=True, return_dict=False
            )
            for _ in range(batch_size)
        ]
        return [(row, assistant_labels(row, opener, tokenizer.eos_token_id)) for row in rows]

    return train_supervised(model, tokenizer, batch, out, steps, lr, log_every)


def main() -> None:
    warm_start_command(warm_start, DEFAULT_ASSET, __doc__.splitlines()[0])


if __name__ == "__main__":
    main()
