"""Reward functions for TRL, and the registry that recipes name them from."""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from typing import Any

from . import trl_rewards  # noqa: F401  (registers TRL's reward names)
from .assertions import BadTests, plan_tests
from .base import REWARDS, FromSettings
from .code import OUTCOMES, TRUST_MODES, CodeReward, CodeVerdict, code_reward, extract_code
from .math import MathVerifier, math_reward
from .sandbox import ISOLATION_MODES, Sandbox, SandboxLimits, SandboxResult, SandboxUnavailable
from .settings import CodeRewardSettings


def resolve_reward(name: str, settings: Any = None) -> Callable:
    """A registered reward's name (``"math"``, ``"code"``, a task's reward, TRL's ``"accuracy_reward"`` ...), or
    ``"package.module:function"`` (or TRL's dotted ``"package.module.function"``). A reward registered
    ``FromSettings`` is built from ``settings`` (the recipe's arguments: the code reward's sandbox); SandboxUnavailable
    when the sandbox cannot run here."""
    entry = REWARDS.get(name)
    return entry.build(settings) if isinstance(entry, FromSettings) else entry


def with_arguments(name: str, reward: Callable, arguments: dict[str, Any]) -> Callable:
    """``reward`` given a recipe's ``arguments`` for it (``reward_kwargs``): a reward function (it takes
    ``completions``) with them bound, under its own name (TRL names each reward's metrics by ``__name__``); a factory
    (it does not, as open-r1's ``get_cosine_scaled_reward``) called with them, for the reward it returns. ValueError
    naming the arguments it takes, for one it does not."""
    if not isinstance(arguments, dict):
        raise ValueError(f"reward_kwargs[{name!r}] is {type(arguments).__name__}: give a mapping of argument: value.")
    try:
        parameters = inspect.signature(reward).parameters
    except (TypeError, ValueError):
        parameters = {}
    if not any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters.values()):
        unknown = sorted(set(arguments) - set(parameters))
        if unknown:
            raise ValueError(
                f"reward_kwargs[{name!r}] gives {unknown}, which {name} does not take: it takes {sorted(parameters)}."
            )
    if "completions" in parameters:
        bound = functools.partial(reward, **arguments)
        return functools.update_wrapper(bound, reward)
    built = reward(**arguments)
    if not callable(built):
        raise ValueError(
            f"reward_kwargs[{name!r}]: {name} takes no completions, so it was called as a factory, and it returned "
            f"{type(built).__name__}, not a reward function."
        )
    return built


__all__ = [
    "ISOLATION_MODES",
    "OUTCOMES",
    "REWARDS",
    "TRUST_MODES",
    "BadTests",
    "CodeReward",
    "CodeRewardSettings",
    "CodeVerdict",
    "FromSettings",
    "MathVerifier",
    "Sandbox",
    "SandboxLimits",
    "SandboxResult",
    "SandboxUnavailable",
    "code_reward",
    "extract_code",
    "math_reward",
    "plan_tests",
    "resolve_reward",
    "with_arguments",
]
