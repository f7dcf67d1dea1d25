"""What a built-in task is, and the registry recipes name tasks from (``dataset_name: builtin:<task>``)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from datasets import Dataset

from ..constants import BUILTIN_PREFIX
from ..registry import Registry


@dataclass(frozen=True)
class Task:
    """A built-in task in one place: ``rows(split)`` gives its problems (a ``problem`` column, plus what its reward
    reads), ``reward`` names a registered reward (None: the task's environment owns it), ``judge`` is a judge
    spec, ``held_out_split`` is the split never trained on, ``model`` names its registered warm start
    (``builtin:<model>``), if it ships one, and ``settings`` holds other recipe keys the task needs (prompt_column,
    instruction, max_completion_length, environment_factory, ...)."""

    rows: Callable[[str], Dataset]
    reward: str | None
    judge: str
    held_out_split: str = "test"
    model: str | None = None
    settings: Mapping[str, Any] = field(default_factory=dict)

    def recipe(self) -> dict[str, Any]:
        """The recipe keys this task sets when a recipe naming it leaves them out."""
        defaults: dict[str, Any] = {
            "judge": self.judge,
            "dataset_test_split": self.held_out_split,
            **self.settings,
        }
        if self.reward is not None:
            defaults["reward_funcs"] = [self.reward]
        if self.model is not None:
            defaults["model_name_or_path"] = BUILTIN_PREFIX + self.model
        return defaults


TASKS: Registry[Task] = Registry("task")
