"""A tiny offline Qwen3 model and toy-task dataset for trainer tests."""

from __future__ import annotations

from pathlib import Path

import torch
from datasets import Dataset

from poly_epo_trl.tasks.sum_pair import ALPHABET, make_prompt
from poly_epo_trl.tasks.sum_pair.tiny import build_char_tokenizer, build_tiny_model


def save_tiny_model(directory: Path, seed: int = 0) -> Path:
    torch.manual_seed(seed)
    tokenizer = build_char_tokenizer(ALPHABET)
    model = build_tiny_model(tokenizer, hidden_size=32, num_layers=1, num_heads=2)
    model.save_pretrained(directory)
    tokenizer.save_pretrained(directory)
    return directory


def toy_dataset(totals=range(20, 36)) -> Dataset:
    return Dataset.from_dict({"prompt": [make_prompt(s) for s in totals]})


def row_keys(tokenizer, inputs) -> list[tuple[str, str]]:
    """(prompt, completion) texts of a micro-batch, to find its rows in the (shuffled) generation batch."""
    prompts = tokenizer.batch_decode(inputs["prompt_ids"], skip_special_tokens=True)
    completions = tokenizer.batch_decode(inputs["completion_ids"], skip_special_tokens=True)
    return list(zip(prompts, completions, strict=True))
