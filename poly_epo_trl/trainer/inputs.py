"""What a trainer is given, checked before the model loads, as a recipe is at the door: keyword arguments it does
not take (with the name meant, or where the setting belongs), the training rows' prompts (``data.rows``), and the
dataset columns the rewards read."""

from __future__ import annotations

import difflib
import inspect
from dataclasses import fields
from typing import Any

from datasets import Dataset
from trl import GRPOConfig, GRPOTrainer

from ..data.rows import checked_prompts
from ..rewards.checks import empty_cell_refusal, empty_cells, missing_columns, text_prompt_refusals

# PolyEPOTrainer's own keywords, beside GRPOTrainer's and the settings
OWN_KEYWORDS = ("judge", "method", "check_judge", "check_inputs")


def check_keywords(
    trainer: str,
    kwargs: dict[str, Any],
    settings: frozenset[str],
    elsewhere: dict[str, list[str]] | None = None,
    method: str = "",
) -> None:
    """TypeError for a keyword argument neither GRPOTrainer nor the ``settings`` take: a GRPO setting is pointed to
    ``args=GRPOConfig(...)``, another method's setting (``elsewhere``: name -> its methods) names that method and
    the run's (``method``), a misspelling gets the name meant."""
    accepted = set(inspect.signature(GRPOTrainer.__init__).parameters) | settings | set(OWN_KEYWORDS)
    for name in kwargs:
        if name in accepted:
            continue
        if name in {f.name for f in fields(GRPOConfig)}:
            raise TypeError(
                f"{trainer} got {name}={kwargs[name]!r}: {name} is a GRPO setting; set it on the config, "
                f"args=GRPOConfig(..., {name}={kwargs[name]!r}) (or PolyEPOConfig)."
            )
        if elsewhere and name in elsewhere:
            owners = " or ".join(repr(owner) for owner in elsewhere[name])
            raise TypeError(
                f"{trainer} got {name}={kwargs[name]!r}: {name} is a setting of method {owners}, and this run trains "
                f"with {method!r}. Drop it, or train with method={elsewhere[name][0]!r}."
            )
        close = difflib.get_close_matches(name, sorted(accepted), n=1)
        hint = f" Did you mean {close[0]!r}?" if close else ""
        raise TypeError(f"{trainer} got an unexpected keyword argument {name!r}.{hint}")


def checked_dataset(dataset: Any, what: str = "train_dataset") -> Any:
    """``dataset`` with its ``prompt`` column checked (``data.rows.checked_prompts``: one format, known roles, a
    content each; ShareGPT rows converted). A dataset without one, or one that streams, is left to TRL."""
    names = getattr(dataset, "column_names", None)
    if not names or "prompt" not in names or not hasattr(dataset, "__len__") or not len(dataset):
        return dataset
    try:
        converted = checked_prompts(dataset["prompt"], "prompt")
    except ValueError as error:
        raise ValueError(f"{what}: {error}") from None
    if converted is None:
        return dataset
    return dataset.remove_columns("prompt").add_column("prompt", converted)


def check_reward_columns(rewards: Any, dataset: Any, what: str = "train_dataset") -> None:
    """ValueError for a reward that reads a column the training rows lack (``rewards.checks.missing_columns``); in
    a table held in full (not a stream, which the door does not read ahead), for a reward that reads conversations
    over text prompts and for a column a reward reads that some rows leave empty."""
    names = getattr(dataset, "column_names", None)
    if not names:
        return
    funcs = rewards if isinstance(rewards, list | tuple) else [rewards]
    funcs = [f for f in funcs if not isinstance(f, str)]
    held = isinstance(dataset, Dataset) and len(dataset) > 0
    refusals = text_prompt_refusals(funcs, dataset[0]["prompt"] if held and "prompt" in names else None)
    refusals += [empty_cell_refusal(*empty) for empty in (empty_cells(funcs, dataset) if held else [])]
    for refusal in refusals:
        raise ValueError(refusal[0].upper() + refusal[1:])
    missing = missing_columns(funcs, names)
    if missing:
        reward, column = missing[0]
        raise ValueError(
            f"Reward {reward!r} reads the column {column!r}, which {what} lacks (its columns: {names}): add it, or "
            "give the reward a default for it."
        )
