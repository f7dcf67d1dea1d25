"""A tiny offline Qwen3 model and toy-task dataset for trainer tests."""

from __future__ import annotations

from pathlib import Path

import torch
from datasets import Dataset

from poly_epo_trl.tasks.sum_pair import ALPHABET, make_prompt
from poly_epo_trl.tasks.sum_pair.tiny import build_char_tokenizer, build_tiny_model
from poly_epo_trl.trainer import PolyEPOConfig


def save_tiny_model(directory: Path, seed: int = 0) -> Path:
    torch.manual_seed(seed)
    tokenizer = build_char_tokenizer(ALPHABET)
    model = build_tiny_model(tokenizer, hidden_size=32, num_layers=1, num_heads=2)
    model.save_pretrained(directory)
    tokenizer.save_pretrained(directory)
    return directory


SMALL = dict(
    per_device_train_batch_size=8,
    num_generations=8,
    set_size=4,
    max_steps=2,
    logging_steps=1,
    report_to="none",
    save_strategy="no",
    use_cpu=True,
    seed=0,
    dataloader_num_workers=0,
)


def small_settings(output_dir: Path | str, **overrides) -> dict:
    """A short CPU run's PolyEPOConfig settings: one step is one batch of 8 rollouts (groups of 8, sets of 4), two
    steps, every step logged, nothing saved; ``overrides`` win."""
    return {"output_dir": str(output_dir), **SMALL, **overrides}


def small_config(output_dir: Path | str, **overrides) -> PolyEPOConfig:
    return PolyEPOConfig(**small_settings(output_dir, **overrides))


def toy_dataset(totals=range(20, 36)) -> Dataset:
    return Dataset.from_dict({"prompt": [make_prompt(s) for s in totals]})


def row_keys(tokenizer, inputs) -> list[tuple[str, str]]:
    """(prompt, completion) texts of a micro-batch, to find its rows in the (shuffled) generation batch."""
    prompts = tokenizer.batch_decode(inputs["prompt_ids"], skip_special_tokens=True)
    completions = tokenizer.batch_decode(inputs["completion_ids"], skip_special_tokens=True)
    return list(zip(prompts, completions, strict=True))
