"""Reward functions for TRL, and the registry that recipes name them from."""

from __future__ import annotations

from collections.abc import Callable

from ..importing import import_callable
from .code import code_reward, extract_code, parse_tests
from .math import MathVerifier, math_reward
from .sandbox import SandboxLimits, SandboxResult, run_python

REWARDS: dict[str, str] = {
    "math": "poly_epo_trl.rewards.math:math_reward",
    "code": "poly_epo_trl.rewards.code:code_reward",
    "sum_pair": "poly_epo_trl.demo.task:sum_pair_reward",
}


def resolve_reward(name: str) -> Callable:
    """A registered reward's name (``"math"``, ``"code"``, ``"sum_pair"``) or ``"package.module:function"``."""
    hint = f"use one of {sorted(REWARDS)} or 'package.module:function' for your own TRL reward function."
    return import_callable(REWARDS.get(name, name), "reward", hint)


__all__ = [
    "REWARDS",
    "MathVerifier",
    "SandboxLimits",
    "SandboxResult",
    "code_reward",
    "extract_code",
    "math_reward",
    "parse_tests",
    "resolve_reward",
    "run_python",
]
