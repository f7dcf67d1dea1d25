"""F-GRPO (Plyusov et al. 2026, arXiv 2602.06717): GRPO's std-normalised advantage times a focal weight that
down-weights the groups the policy already solves,

    A_i = (r_i - r_bar) / (std(r) + 1e-4) x (1 - c / N)^gamma,

with c the group's rollouts at or above ``correct_reward_threshold`` and N its scorable rollouts; ``focal_gamma``
(the paper's gamma, 0.5). The focal weight is one number per group, which a further division by the group's std
would cancel: the method owns its normalisation (``owns_scaling``), so the run's ``scale_rewards`` is not applied on
top (a plain ``GRPOConfig``'s ``scale_rewards="group"`` included; the start-up line says so).

- **Paper and implementations.** The paper writes g(x) = (1 - mu_pos(x))^gamma with mu_pos the group's success rate
  (its normalised mean reward); a public implementation counts rewards > 0. For binary rewards at the default
  threshold all three agree; for other rewards this counts the rollouts the run calls correct.

    trainer: f_grpo
    focal_gamma: 0.5
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch

from ..advantages import STD_EPSILON, std_normalised_advantages
from .base import SetBatch, advantage_method
from .papers import F_GRPO_PAPER


@dataclass
class FocalSettings:
    """F-GRPO's focal exponent."""

    focal_gamma: float = field(
        default=0.5,
        metadata={
            "help": "gamma of the focal weight (1 - c / N)^gamma on each group's GRPO advantages: 0 is GRPO, larger "
            "down-weights groups the policy already solves more. Paper: 0.5."
        },
    )

    def check(self) -> None:
        if not self.focal_gamma >= 0:
            raise ValueError(f"focal_gamma={self.focal_gamma}: the focal exponent must be >= 0 (the paper's is 0.5).")


def focal_weights(rewards: torch.Tensor, threshold: float, gamma: float) -> torch.Tensor:
    """(1 - c / N)^gamma per row of ``rewards`` [G, N] ([G, 1]); 0 for a row with nothing scored."""
    scored = ~torch.isnan(rewards)
    correct = (rewards >= threshold) & scored
    n = scored.sum(1, keepdim=True).to(torch.float64)
    rate = correct.sum(1, keepdim=True).to(torch.float64) / n.clamp(min=1)
    return torch.where(n > 0, (1 - rate) ** gamma, torch.zeros_like(rate))


@advantage_method(
    "f_grpo",
    needs_judge=False,
    settings=FocalSettings,
    label="F-GRPO",
    describe=lambda s: f"- F-GRPO: GRPO's advantage times (1 - c/N)^{s.focal_gamma:g} (Plyusov et al. 2026).",
    tags=("f-grpo",),
    paper=F_GRPO_PAPER,
    owns_scaling=True,
)
def f_grpo(batch: SetBatch, settings: FocalSettings) -> torch.Tensor:
    """[G, N] focal-weighted GRPO advantages."""
    weights = focal_weights(batch.rewards, batch.correct_reward_threshold, settings.focal_gamma)
    return std_normalised_advantages(batch.rewards, STD_EPSILON) * weights
