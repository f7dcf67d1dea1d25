"""Recipes and data as `trl grpo` users bring them: a conversational math table in TRL's standard format, a recipe
with TRL's keys and reward names."""

import json
from pathlib import Path

import yaml


def conversational_math(folder: Path, pairs: list[tuple[int, int]]) -> Path:
    """A local dataset in TRL's standard conversational format: a `prompt` conversation and a `solution`, as
    `trl grpo`'s accuracy_reward reads it."""
    folder.mkdir(parents=True, exist_ok=True)
    with (folder / "train.jsonl").open("w") as file:
        for x, y in pairs:
            question = f"What is {x} + {y}? Think inside <think></think>, then answer in \\boxed{{}}."
            file.write(
                json.dumps({"prompt": [{"role": "user", "content": question}], "solution": f"${x + y}$"}) + "\n"
            )
    return folder


def trl_recipe(model: Path, out: Path, **keys) -> dict:
    """A recipe as `trl grpo` takes it (TRL's keys and reward names), sized for two CPU steps."""
    return {
        "model_name_or_path": str(model),
        "reward_funcs": ["accuracy_reward", "think_format_reward"],
        "num_generations": 8,
        "per_device_train_batch_size": 8,
        "max_steps": 2,
        "max_completion_length": 12,
        "logging_steps": 1,
        "report_to": "none",
        "save_strategy": "no",
        "use_cpu": True,
        "bf16": False,
        "output_dir": str(out),
        **keys,
    }


def write_yaml(path: Path, recipe: dict) -> Path:
    path.write_text(yaml.safe_dump(recipe))
    return path
