"""TRL's own reward functions (``trl.rewards``), registered under the names ``trl grpo`` gives them, so a recipe
written for TRL's GRPO script names them as it does there."""

from __future__ import annotations

from trl.rewards import accuracy_reward, get_soft_overlong_punishment, reasoning_accuracy_reward, think_format_reward

from .base import REWARDS

# As TRL's script builds it (trl/scripts/grpo.py): a 1280-token budget, the last 256 tokens punished
SOFT_OVERLONG = {"max_completion_len": 1280, "soft_punish_cache": 256}

for _name, _reward in {
    "accuracy_reward": accuracy_reward,
    "reasoning_accuracy_reward": reasoning_accuracy_reward,
    "think_format_reward": think_format_reward,
    "get_soft_overlong_punishment": get_soft_overlong_punishment(**SOFT_OVERLONG),
}.items():
    REWARDS.register(_name)(_reward)
