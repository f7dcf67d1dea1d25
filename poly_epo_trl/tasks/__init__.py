"""Built-in tasks: each declares its rows, reward, judge, held-out split and warm start in one place, registered by
name; recipes name one as ``dataset_name: builtin:<task>``."""

from __future__ import annotations

from typing import Any

from datasets import Dataset

from ..constants import BUILTIN_PREFIX
from ..data import DatasetArguments, load_table
from ..recipe import RecipeError
from . import goldbach_agent, names_by_letter, prime_pair, sum_pair, tradeoff
from .base import TASKS, Task


def builtin_task(dataset_name: str) -> Task | None:
    """The built-in task ``dataset_name`` names (``builtin:<task>``), None for any other dataset; RecipeError for an
    unknown task."""
    if not dataset_name.startswith(BUILTIN_PREFIX):
        return None
    name = dataset_name.removeprefix(BUILTIN_PREFIX)
    if name not in TASKS:
        raise RecipeError(f"dataset_name={dataset_name!r}: no such built-in task; {TASKS.hint()}")
    return TASKS.get(name)


def load_rows(args: DatasetArguments, split: str) -> Dataset:
    """The raw rows of ``split``: a built-in task's (``builtin:<task>``), else the table ``data.load_table`` reads
    (a ``datasets`` mixture comes before ``dataset_name``)."""
    task = None if args.datasets else builtin_task(args.dataset_name)
    return load_table(args, split) if task is None else task.rows(split)


def task_defaults(dataset_name: str) -> dict[str, Any]:
    """The recipe keys a built-in task sets (``Task.recipe``); none for other datasets."""
    task = builtin_task(dataset_name)
    return {} if task is None else task.recipe()


__all__ = [
    "TASKS",
    "Task",
    "builtin_task",
    "goldbach_agent",
    "load_rows",
    "names_by_letter",
    "prime_pair",
    "sum_pair",
    "task_defaults",
    "tradeoff",
]
