"""The registry recipes name reward functions from: ``@REWARDS.register("name")`` on a TRL reward function, or on a
``FromSettings`` for a reward the recipe's settings build (the code reward: its sandbox)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..registry import Registry


@dataclass(frozen=True)
class FromSettings:
    """A registered reward made for each recipe by ``build(settings)`` (``settings``: the recipe's arguments, or
    None for the defaults)."""

    build: Callable[[Any], Callable]


REWARDS: Registry[Callable | FromSettings] = Registry("reward", "your own TRL reward function")
