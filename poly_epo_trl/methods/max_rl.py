"""MaxRL (Tajwar et al. 2026, arXiv 2602.02710, Algorithm 1): A_i = (r_i - r_bar) / r_bar, 0 where r_bar = 0, the
gradient of the truncated maximum-likelihood objective (the paper's estimator sum_i (r_i / K - 1 / N) S_i is A_i / N).
Its own scaling replaces GRPO's std; rewards are read from the run's floor (a negative mean would flip every sign);
a group of one or of zeros gives 0, never r / 1e-6 as the official code's ``mean + 1e-6`` does (the methods page says
where paper and code differ). ``trainer: max_rl``."""

from __future__ import annotations

from dataclasses import dataclass

import torch

from .base import SetBatch, advantage_method
from .papers import MAX_RL_PAPER


@dataclass
class MaxRLSettings:
    """None: the division by the group's mean reward is the whole method."""


def max_rl_advantages(rewards: torch.Tensor) -> torch.Tensor:
    """(r - r_bar) / r_bar per row of ``rewards`` [G, N] (NaN: left out of the mean, 0), 0 where r_bar <= 0."""
    values = rewards.to(torch.float64)
    mean = torch.nanmean(values, dim=1, keepdim=True)
    positive = mean > 0
    out = torch.where(positive, (values - mean) / torch.where(positive, mean, torch.ones_like(mean)), 0.0)
    return torch.nan_to_num(out, nan=0.0)


@advantage_method(
    "max_rl", needs_judge=False, settings=MaxRLSettings, label="MaxRL", tags=("max-rl",), paper=MAX_RL_PAPER,
    describe=lambda s: "- MaxRL: each group's advantage (r - mean) / mean (Tajwar et al. 2026, Algorithm 1).",
    reads_floor=True, owns_scaling=True,
)  # fmt: skip
def max_rl(batch: SetBatch, settings: MaxRLSettings) -> torch.Tensor:
    """[G, N] advantages of the rewards read from the run's floor."""
    return max_rl_advantages(batch.floored_rewards())
