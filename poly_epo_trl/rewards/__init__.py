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

# open-r1's reward names (its REWARD_FUNCS_REGISTRY) and the function each is in open_r1.rewards: a recipe ported from
# open-r1 names them by path (its factories, get_*, take their settings under reward_kwargs)
OPEN_R1_REWARDS = {
    "accuracy": "accuracy_reward", "format": "format_reward", "tag_count": "tag_count_reward",
    "reasoning_steps": "reasoning_steps_reward", "length": "len_reward", "cosine": "get_cosine_scaled_reward",
    "repetition_penalty": "get_repetition_penalty_reward", "code_format": "get_code_format_reward",
    "soft_overlong_punishment": "get_soft_overlong_punishment", "binary_code": "binary_code_reward",
    "ioi_code": "ioi_code_reward", "cf_code": "cf_code_reward",
}  # fmt: skip


def resolve_reward(name: str, settings: Any = None) -> Callable:
    """A registered reward's name (``"math"``, ``"code"``, a task's reward, TRL's ``"accuracy_reward"`` ...), or
    ``"package.module:function"`` (or TRL's dotted ``"package.module.function"``). A reward registered
    ``FromSettings`` is built from ``settings`` (the recipe's arguments: the code reward's sandbox); SandboxUnavailable
    when the sandbox cannot run here."""
    if name in OPEN_R1_REWARDS and name not in REWARDS:
        function = OPEN_R1_REWARDS[name]
        factory = " (a factory: its settings go under reward_kwargs)" if function.startswith("get_") else ""
        raise ValueError(
            f"Unknown reward {name!r}: open-r1's {name!r} is named here by path, open_r1.rewards:{function}{factory}, "
            "with open-r1 installed."
        )
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
