"""MaxRL (Tajwar et al. 2026, arXiv 2602.02710, Algorithm 1): each group's advantage divided by its mean reward,

    A_i = (r_i - r_bar) / r_bar,   and A_i = 0 where r_bar = 0,

the gradient of the truncated maximum-likelihood objective of order N for binary rewards (the paper's Eq. for the
estimator, sum_i (r_i / K - 1 / N) S_i with K the successes, is A_i / N). It replaces GRPO's division by the reward
std (``owns_scaling``: the run's ``scale_rewards`` is not applied on top).

- **Other rewards.** The paper derives it for binary rewards. Continuous rewards >= 0 are read the same way
  (the mean-normalised advantage). Rewards are read from the run's reward floor (``reads_floor``): with a negative
  mean, (r - r_bar) / r_bar would flip every sign, so a group reads r - F >= 0.
- **A group of one, or all zero**, gives 0, never r / epsilon.
- **Paper and code.** The official code (``compute_p_normalization_outcome_advantage``) divides by
  ``mean + 1e-6`` without the zero check, and gives a group of one the mean 0, so its advantage is r / 1e-6; an
  earlier version also divides by N. This is Algorithm 1 as the paper writes it: on groups of two or more with a
  mean above 0 it equals the code's to a relative 1e-6 / r_bar.

    trainer: max_rl
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from .base import SetBatch, advantage_method
from .papers import MAX_RL_PAPER


@dataclass
class MaxRLSettings:
    """MaxRL has no setting of its own: the division by the group's mean reward is the whole method."""


def max_rl_advantages(rewards: torch.Tensor) -> torch.Tensor:
    """(r - r_bar) / r_bar per row of ``rewards`` [G, N] (NaN: left out of the mean, 0), 0 where r_bar <= 0."""
    values = rewards.to(torch.float64)
    mean = torch.nanmean(values, dim=1, keepdim=True)
    positive = mean > 0
    out = torch.where(positive, (values - mean) / torch.where(positive, mean, torch.ones_like(mean)), 0.0)
    return torch.nan_to_num(out, nan=0.0)


@advantage_method(
    "max_rl",
    needs_judge=False,
    settings=MaxRLSettings,
    label="MaxRL",
    describe=lambda s: "- MaxRL: each group's advantage (r - mean) / mean (Tajwar et al. 2026, Algorithm 1).",
    tags=("max-rl",),
    paper=MAX_RL_PAPER,
    reads_floor=True,
    owns_scaling=True,
)
def max_rl(batch: SetBatch, settings: MaxRLSettings) -> torch.Tensor:
    """[G, N] advantages of the rewards read from the run's floor."""
    return max_rl_advantages(batch.floored_rewards())
