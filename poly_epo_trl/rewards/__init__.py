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

# open-r1's reward names (its REWARD_FUNCS_REGISTRY), the function each is in open_r1.rewards and the dataset columns
# its signature reads (as ``checks.reward_columns`` finds them): a recipe ported from open-r1 names them by path (its
# factories, get_*, take their settings under reward_kwargs). Its 'code' is not here: 'code' names this package's code
# reward (open-r1's reads verification_info)
OPEN_R1_REWARDS = {
    "accuracy": ("accuracy_reward", ("solution",)), "format": ("format_reward", ()),
    "tag_count": ("tag_count_reward", ()), "reasoning_steps": ("reasoning_steps_reward", ()),
    "length": ("len_reward", ("solution",)), "cosine": ("get_cosine_scaled_reward", ("solution",)),
    "repetition_penalty": ("get_repetition_penalty_reward", ()), "code_format": ("get_code_format_reward", ()),
    "soft_overlong_punishment": ("get_soft_overlong_punishment", ()),
    "binary_code": ("binary_code_reward", ()), "ioi_code": ("ioi_code_reward", ()), "cf_code": ("cf_code_reward", ()),
}  # fmt: skip
OPEN_R1_CODE = "open_r1.rewards:code_reward"


def resolve_reward(name: str, settings: Any = None) -> Callable:
    """A registered reward's name (``"math"``, ``"code"``, a task's reward, TRL's ``"accuracy_reward"`` ...), or
    ``"package.module:function"`` (or TRL's dotted ``"package.module.function"``). A reward registered
    ``FromSettings`` is built from ``settings`` (the recipe's arguments: the code reward's sandbox); SandboxUnavailable
    when the sandbox cannot run here."""
    if name in OPEN_R1_REWARDS and name not in REWARDS:
        function, columns = OPEN_R1_REWARDS[name]
        factory = " (a factory: its settings go under reward_kwargs)" if function.startswith("get_") else ""
        reads = f"; it reads the column{'s' * (len(columns) > 1)} {', '.join(columns)}" if columns else ""
        raise ValueError(
            f"Unknown reward {name!r}: open-r1's {name!r} is named here by path, open_r1.rewards:{function}{factory}, "
            f"with open-r1 installed{reads}."
        )
    entry = REWARDS.get(name)
    return entry.build(settings) if isinstance(entry, FromSettings) else entry


def stand_in(name: str) -> Callable:
    """A reward that stands in for the unknown ``name`` while the door looks past it: named ``name`` and reading the
    columns open-r1's reward of that name reads (none for another name), so the column checks still see them; it
    scores nothing and never trains."""

    def reward(completions: list[Any], **kwargs: Any) -> list[None]:
        return [None] * len(completions)

    columns = OPEN_R1_REWARDS.get(name, ("", ()))[1]
    keyword = inspect.Parameter.POSITIONAL_OR_KEYWORD
    reward.__signature__ = inspect.Signature(  # type: ignore[attr-defined]
        [
            inspect.Parameter("completions", keyword),
            *(inspect.Parameter(c, keyword) for c in columns),
            inspect.Parameter("kwargs", inspect.Parameter.VAR_KEYWORD),
        ]
    )
    reward.__name__ = name
    return reward


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
    "OPEN_R1_CODE",
    "OPEN_R1_REWARDS",
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
    "stand_in",
    "with_arguments",
]
