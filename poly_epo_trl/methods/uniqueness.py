"""Uniqueness-aware RL, as described in "Rewarding the Rare: Uniqueness-Aware RL for Creative Problem Solving in
LLMs" (Hu et al. 2026, arXiv 2601.08763): GRPO's advantage reweighted inversely with the size of the rollout's
strategy cluster, so that a correct but rare strategy earns more than a redundant one,

    A_i = (r_i - r_bar) / (std(r) + 1e-4) x |cluster(i)|^-alpha,

the clusters being the judge's (the paper's is an LM judge of high-level strategies).

The paper leaves these choices open; each is a setting:

- ``uniqueness_alpha`` (default 1: "inversely with cluster size"): the exponent of the weight.
- ``uniqueness_reweight_wrong`` (default false): whether wrong rollouts' (negative) advantages are reweighted too;
  by default only correct rollouts (at or above ``correct_reward_threshold``) are, so a rare mistake is not
  punished less. Degenerate rollouts (no strategy) keep GRPO's advantage.

It owns its normalisation (``owns_scaling``).

    trainer: uniqueness
    uniqueness_alpha: 1.0
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch

from ..advantages import STD_EPSILON, std_normalised_advantages
from .base import SetBatch, advantage_method
from .papers import UNIQUENESS_PAPER


@dataclass
class UniquenessSettings:
    """Uniqueness-aware RL's choices the paper leaves open."""

    uniqueness_alpha: float = field(
        default=1.0, metadata={"help": "alpha: advantages are multiplied by |cluster|^-alpha (0 is GRPO)."}
    )
    uniqueness_reweight_wrong: bool = field(
        default=False,
        metadata={"help": "Reweight wrong rollouts' advantages too (by default only correct rollouts' are)."},
    )

    def check(self) -> None:
        if not self.uniqueness_alpha >= 0:
            raise ValueError(f"uniqueness_alpha={self.uniqueness_alpha}: the exponent must be >= 0.")


@advantage_method(
    "uniqueness",
    settings=UniquenessSettings,
    label="Uniqueness-aware RL",
    describe=lambda s: (
        f"- Uniqueness-aware RL: GRPO's advantage times |cluster|^-{s.uniqueness_alpha:g} (as described "
        "in Hu et al. 2026)."
    ),
    tags=("uniqueness",),
    paper=UNIQUENESS_PAPER,
    owns_scaling=True,
)
def uniqueness(batch: SetBatch, settings: UniquenessSettings) -> torch.Tensor:
    reweighted = batch.outcomes(correct_only=not settings.uniqueness_reweight_wrong)
    sizes = batch.cluster_sizes(among=~torch.isnan(batch.rewards)).to(torch.float64).clamp(min=1)
    weights = torch.where(reweighted, sizes**-settings.uniqueness_alpha, torch.ones_like(sizes))
    return std_normalised_advantages(batch.rewards, STD_EPSILON) * weights
