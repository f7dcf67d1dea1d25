"""Reward functions for TRL, and the registry that recipes name them from."""

from __future__ import annotations

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
]
