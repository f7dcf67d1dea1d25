"""Reward functions held to TRL's contract where it would fail later or silently: the dataset columns a reward reads
are there before training starts (``missing_columns``), and what a reward returns is one number (or None) per
completion, every step (``checked_reward``)."""

from __future__ import annotations

import functools
import inspect
import math
from collections.abc import Callable, Iterable
from numbers import Real
from typing import Any

# What TRL passes every reward function besides the dataset's columns (GRPOTrainer._calculate_rewards)
TRL_ARGUMENTS = frozenset(
    {"prompts", "completions", "completion_ids", "trainer_state", "log_extra", "log_metric", "environments"}
)


def reward_name(reward: Any) -> str:
    return getattr(reward, "__name__", type(reward).__name__)


def reward_columns(reward: Any) -> list[str]:
    """The dataset columns a reward function reads: its parameters without a default that TRL does not fill in
    itself (a reward model reads none)."""
    from torch import nn

    if isinstance(reward, nn.Module) or not callable(reward):
        return []
    try:
        parameters = inspect.signature(reward).parameters.values()
    except (TypeError, ValueError):
        return []
    plain = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
    return [
        p.name
        for p in parameters
        if p.kind in plain and p.default is inspect.Parameter.empty and p.name not in TRL_ARGUMENTS
    ]


def reads_conversations(reward: Any) -> bool:
    """Whether a reward reads each completion as a conversation (``completion[0]["content"]``), as its
    ``completions`` annotation says (``list[list[dict[str, str]]]``: TRL's accuracy_reward, think_format_reward,
    open-r1's accuracy_reward). With text prompts TRL hands it text, and it fails inside (``string indices must be
    integers``)."""
    try:
        parameter = inspect.signature(reward).parameters.get("completions")
    except (TypeError, ValueError):
        return False
    annotation = getattr(parameter, "annotation", inspect.Parameter.empty)
    return annotation is not inspect.Parameter.empty and str(annotation).replace(" ", "").startswith(
        ("list[list[dict", "List[List[Dict")
    )


def text_prompt_refusals(rewards: Iterable[Any], prompt: Any) -> list[str]:
    """A refusal for each reward that reads conversations (``reads_conversations``) when the prompts are text
    (``prompt``: the first row's), naming it and the two ways out."""
    if not isinstance(prompt, str):
        return []
    return [
        f"reward {reward_name(reward)!r} reads each completion as a conversation (completion[0]['content']), and the "
        "prompts are text, so its completions would be text: make the prompts conversations (chat_format: true, or "
        "a conversational prompt column), or use a reward that reads text (math)."
        for reward in rewards
        if reads_conversations(reward)
    ]


def missing_columns(rewards: Iterable[Any], columns: Iterable[str]) -> list[tuple[str, str]]:
    """(reward, column) for each column a reward reads that ``columns`` lacks."""
    have = set(columns)
    return [(reward_name(r), c) for r in rewards for c in reward_columns(r) if c not in have]


def empty_cells(rewards: Iterable[Any], dataset: Any) -> list[tuple[str, str, int, int]]:
    """(reward, column, first empty row, empty rows) for each column a reward reads that some rows of ``dataset`` (a
    ``datasets.Dataset``) leave empty while others fill: those rows would reach the reward as None, silently. Read
    from the table's null counts, so a large table costs no scan unless a column has an empty cell."""
    table = getattr(dataset, "data", None)
    if table is None:
        return []
    found = []
    for reward in rewards:
        for column in reward_columns(reward):
            if column not in dataset.column_names:
                continue
            nulls = table.column(column).null_count
            if 0 < nulls < len(dataset):
                first = next(i for i, value in enumerate(dataset[column]) if value is None)
                found.append((reward_name(reward), column, first, nulls))
    return found


def empty_cell_refusal(reward: str, column: str, row: int, count: int) -> str:
    rows = f"{count} rows leave it empty (the first: row {row}, " if count > 1 else f"row {row} leaves it empty ("
    them = "them" if count > 1 else "it"
    return (
        f"reward {reward!r} reads the column {column!r}, and {rows}counting from 0) while others fill it: "
        f"{'they' if count > 1 else 'it'} would reach the reward as None. Fill {them} or drop {them}."
    )


def check_output(name: str, output: Any, count: int | None) -> int:
    """ValueError naming the reward and what it returned, unless ``output`` holds a number or None for each of the
    ``count`` completions (any length when None) and is not NaN for every one of them; returns how many are NaN."""
    if not isinstance(output, list | tuple):
        raise ValueError(
            f"Reward {name!r} returned {type(output).__name__} {repr(output)[:80]}: a reward function returns a list, "
            "one number (or None, not scored) per completion."
        )
    wrong = [v for v in output if v is not None and not isinstance(v, Real)]
    if wrong:
        raise ValueError(
            f"Reward {name!r} returned {wrong[0]!r} ({type(wrong[0]).__name__}) for a completion: a reward is a "
            "number, or None for a completion it does not score."
        )
    if count is not None and len(output) != count:
        raise ValueError(
            f"Reward {name!r} returned {len(output)} rewards for {count} completions: one per completion, in order."
        )
    nans = sum(1 for v in output if v is not None and math.isnan(v))
    if output and nans == len(output):
        raise ValueError(
            f"Reward {name!r} returned NaN for every completion of the step: return a number, or None for a "
            "completion it does not score (NaN is read as not scored; every completion unscored is a bug)."
        )
    return nans


# What TRL hands a reward one entry per completion of, in the order the count is read: its reward functions get
# ``prompts`` and ``completions``; an environment-owned reward (TRL's ``get_reward`` wrapper, sync or async) may be
# called with ``environments`` alone.
PER_COMPLETION = ("completions", "prompts", "completion_ids", "environments")


def completion_count(kwargs: dict[str, Any]) -> int | None:
    """How many rewards a call must return: the length of the first per-completion argument TRL passed
    (``PER_COMPLETION``); None when it passed none of them (nothing to hold the output to)."""
    for key in PER_COMPLETION:
        value = kwargs.get(key)
        if value is not None:
            return len(value)
    return None


def checked_reward(reward: Callable[..., Any], name: str, count_nans: Callable[[int], None]) -> Callable[..., Any]:
    """``reward`` with its output checked on every call (``check_output``, against ``completion_count``); the NaNs it
    returns are counted through ``count_nans``. An async reward stays async, as TRL's dispatch tells
    (``is_async_callable``)."""

    def check(output: Any, kwargs: dict[str, Any]) -> Any:
        count_nans(check_output(name, output, completion_count(kwargs)))
        return output

    from trl.trainer.utils import is_async_callable

    if is_async_callable(reward):  # as TRL tells them apart

        @functools.wraps(reward)
        async def checked_async(*args: Any, **kwargs: Any) -> Any:
            return check(await reward(*args, **kwargs), kwargs)

        return checked_async

    @functools.wraps(reward)
    def checked(*args: Any, **kwargs: Any) -> Any:
        return check(reward(*args, **kwargs), kwargs)

    return checked
