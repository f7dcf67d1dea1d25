"""What a built-in task is, and the registry recipes name tasks from (``dataset_name: builtin:<task>``)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from datasets import Dataset

from ..registry import Registry


@dataclass(frozen=True)
class Task:
    """A built-in task in one place: ``rows(split)`` gives its problems (a ``problem`` column, plus what its reward
    reads), ``reward`` names a registered reward, ``judge`` is a judge spec, ``held_out_split`` is the split never
    trained on, and ``model`` names its registered warm start (``builtin:<model>``), if it ships one."""

    rows: Callable[[str], Dataset]
    reward: str
    judge: str
    held_out_split: str = "test"
    model: str | None = None


TASKS: Registry[Task] = Registry("task")
