"""Reward functions for TRL, and the registry that recipes name them from."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from . import trl_rewards  # noqa: F401  (registers TRL's reward names)
from .base import REWARDS
from .code import OUTCOMES, TRUST_MODES, CodeReward, CodeVerdict, code_reward, extract_code
from .math import MathVerifier, math_reward
from .sandbox import ISOLATION_MODES, Sandbox, SandboxLimits, SandboxResult, SandboxUnavailable
from .unit_tests import BadTests, plan_tests


def resolve_reward(name: str, options: Any = None) -> Callable:
    """A registered reward's name (``"math"``, ``"code"``, a task's reward, TRL's ``"accuracy_reward"`` ...), or
    ``"package.module:function"`` (or TRL's dotted ``"package.module.function"``).

    ``options`` (DatasetArguments) sets up ``"code"``: sandbox mode, trust mode, limits. SandboxUnavailable when
    the sandbox cannot run here."""
    if name == "code" and options is not None:
        limits = SandboxLimits(timeout_seconds=options.code_timeout_seconds, memory_mb=options.code_memory_mb)
        return CodeReward(limits, isolation=options.code_sandbox, trust_mode=options.code_trust_mode)
    return REWARDS.get(name)


__all__ = [
    "ISOLATION_MODES",
    "OUTCOMES",
    "REWARDS",
    "TRUST_MODES",
    "BadTests",
    "CodeReward",
    "CodeVerdict",
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
