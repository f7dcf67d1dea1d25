"""Supervised warm start for the toy task: a diverse, imperfect base policy, regenerated deterministically.

Training pairs are ``S=<S>:a+b`` with a uniform in 1..S-1 and b = S - a, except that a fraction ``noise`` of the
answers have b off by 1 to 3, so the base policy is right most of the time with many different answers.

    python -m poly_epo_trl.tasks.sum_pair.warm_start --out poly_epo_trl/tasks/sum_pair/assets/warm_start
"""

from __future__ import annotations

import argparse
import random
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

from . import ALL_TOTALS, ALPHABET, DEFAULT_ASSET, make_prompt
from .tiny import build_char_tokenizer, build_tiny_model


def sample_answer(total: int, rng: random.Random, noise: float) -> str:
    a = rng.randint(1, total - 1)
    b = total - a
    if rng.random() < noise:
        b = max(1, b + rng.choice([-3, -2, -1, 1, 2, 3]))
    return f"{a}+{b}"


def supervised_step(model, optimizer, schedule, rows: list[tuple[list[int], list[int]]], pad_id: int) -> float:
    """One step of causal-LM training on ``rows`` of (token ids, labels; -100 where no loss), right-padded with
    ``pad_id``; gradients clipped to norm 1. Returns the batch's loss."""
    length = max(len(ids) for ids, _ in rows)
    input_ids = torch.full((len(rows), length), pad_id)
    labels = torch.full((len(rows), length), -100)
    attention = torch.zeros((len(rows), length), dtype=torch.long)
    for i, (ids, targets) in enumerate(rows):
        input_ids[i, : len(ids)] = torch.tensor(ids)
        labels[i, : len(ids)] = torch.tensor(targets)
        attention[i, : len(ids)] = 1
    loss = model(input_ids=input_ids, attention_mask=attention, labels=labels).loss
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    optimizer.step()
    schedule.step()
    optimizer.zero_grad(set_to_none=True)
    return loss.item()


def train_supervised(
    model: Any,
    tokenizer: Any,
    batch: Callable[[], list[tuple[list[int], list[int]]]],
    out: Path,
    steps: int,
    lr: float,
    log_every: int,
) -> Path:
    """``steps`` supervised steps on ``batch()`` rows (``supervised_step``), AdamW with a one-cycle schedule peaking
    at ``lr``, a line every ``log_every`` steps; the model and its tokenizer saved to ``out``."""
    optimizer = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.0)
    schedule = torch.optim.lr_scheduler.OneCycleLR(optimizer, max_lr=lr, total_steps=steps, pct_start=0.1)
    model.train()
    start = time.perf_counter()
    for step in range(1, steps + 1):
        loss = supervised_step(model, optimizer, schedule, batch(), tokenizer.pad_token_id)
        if step % log_every == 0 or step == steps:
            print(f"warm start step {step}/{steps}  loss {loss:.3f}  {time.perf_counter() - start:.0f}s")
    out.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(out)
    tokenizer.save_pretrained(out)
    return out


def warm_start_command(warm_start: Callable[..., Path], default_out: Path, description: str) -> None:
    """``python -m <task>.warm_start [--out DIR] [--seed S] [--steps N]``: regenerate a task's warm start."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--out", type=Path, default=default_out)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--steps", type=int, default=1500)
    args = parser.parse_args()
    torch.set_num_threads(1)
    warm_start(args.out, args.seed, args.steps)


def warm_start(
    out: Path = DEFAULT_ASSET,
    seed: int = 0,
    steps: int = 1500,
    batch_size: int = 128,
    lr: float = 3e-3,
    noise: float = 0.25,
    log_every: int = 250,
    num_heads: int = 4,
) -> Path:
    """Train the tiny model on noisy valid answers for every S in 10..99 and save it with its tokenizer. The shipped
    one has 4 heads of 24; 3 heads of 32 suit vLLM's CPU attention (head size at least 32)."""
    torch.manual_seed(seed)
    rng = random.Random(seed)
    tokenizer = build_char_tokenizer(ALPHABET)
    model = build_tiny_model(tokenizer, hidden_size=96, num_layers=3, num_heads=num_heads, max_positions=32)

    def batch() -> list[tuple[list[int], list[int]]]:
        totals = [rng.choice(ALL_TOTALS) for _ in range(batch_size)]
        prompts = [tokenizer(make_prompt(s))["input_ids"] for s in totals]
        answers = [tokenizer(sample_answer(s, rng, noise))["input_ids"] + [tokenizer.eos_token_id] for s in totals]
        return [(p + a, [-100] * len(p) + a) for p, a in zip(prompts, answers, strict=True)]

    return train_supervised(model, tokenizer, batch, out, steps, lr, log_every)


def main() -> None:
    warm_start_command(warm_start, DEFAULT_ASSET, __doc__.splitlines()[0])


if __name__ == "__main__":
    main()
