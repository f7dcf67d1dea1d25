"""The registry recipes name reward functions from: ``@REWARDS.register("name")`` on a TRL reward function."""

from __future__ import annotations

from collections.abc import Callable

from ..registry import Registry

REWARDS: Registry[Callable] = Registry("reward", "your own TRL reward function")
