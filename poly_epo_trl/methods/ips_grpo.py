"""IPS-GRPO, as described in "Expected Return Causes Outcome-Level Mode Collapse in Reinforcement Learning and How
to Fix It with Inverse Probability Scaling" (arXiv 2601.21669): each rollout's reward divided by how often the
group reached its outcome, then GRPO's std-normalised advantage,

    r'_i = r_i / p_i^alpha,   p_i = |cluster(i)| / N,   A_i = (r'_i - mean r') / (std(r') + 1e-4),

the outcomes being the judge's clusters. An outcome the policy reaches 1 time in 8 earns 8 times the reward of one
it always reaches, so the expected return no longer favours collapsing onto one outcome.

The paper leaves these choices open; each is a setting:

- ``ips_power`` (alpha, default 1): the inverse probability itself; between 0 (GRPO) and 1 it tempers the scaling.
- ``ips_scope`` (default ``correct``): which rollouts are scaled: ``correct`` (at or above
  ``correct_reward_threshold``; with 0/1 rewards a wrong one's 0 is 0 whatever it is divided by) or ``all``
  (every rollout with an outcome; for rewards that are not 0/1). Degenerate rollouts (no outcome) are never scaled.

It multiplies rewards, so it reads them from the run's reward floor (``reads_floor``), and owns its normalisation
(``owns_scaling``).

    trainer: ips_grpo
    ips_power: 1.0
    ips_scope: correct
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch

from ..advantages import STD_EPSILON, std_normalised_advantages
from .base import SetBatch, advantage_method
from .papers import IPS_PAPER

IPS_SCOPES = ("correct", "all")


@dataclass
class IPSSettings:
    """IPS-GRPO's choices the paper leaves open."""

    ips_power: float = field(
        default=1.0,
        metadata={"help": "alpha: rewards are divided by p^alpha, p the share of the group in the rollout's cluster."},
    )
    ips_scope: str = field(
        default="correct",
        metadata={
            "help": f"One of {IPS_SCOPES}: the rollouts whose reward is scaled, 'correct' (at or above "
            "correct_reward_threshold) or 'all' (every rollout with an outcome). Degenerate ones never are."
        },
    )

    def check(self) -> None:
        if not self.ips_power >= 0:
            raise ValueError(f"ips_power={self.ips_power}: the exponent of the inverse probability must be >= 0.")
        if self.ips_scope not in IPS_SCOPES:
            raise ValueError(f"ips_scope={self.ips_scope!r}: use one of {IPS_SCOPES}.")


def ips_rewards(
    rewards: torch.Tensor,
    cluster_sizes: torch.Tensor,
    scaled: torch.Tensor,
    power: float,
) -> torch.Tensor:
    """``rewards`` [G, N] divided by (|cluster| / N)^power where ``scaled``, as they are elsewhere."""
    n = (~torch.isnan(rewards)).sum(1, keepdim=True).clamp(min=1).to(torch.float64)
    share = cluster_sizes.to(torch.float64) / n
    return torch.where(scaled, rewards.to(torch.float64) / share**power, rewards.to(torch.float64))


@advantage_method(
    "ips_grpo",
    settings=IPSSettings,
    label="IPS-GRPO",
    describe=lambda s: (
        f"- IPS-GRPO: rewards over (cluster share)^{s.ips_power:g} ({s.ips_scope} rollouts), then "
        "GRPO's advantage (as described in arXiv 2601.21669)."
    ),
    tags=("ips-grpo",),
    paper=IPS_PAPER,
    reads_floor=True,
    owns_scaling=True,
)
def ips_grpo(batch: SetBatch, settings: IPSSettings) -> torch.Tensor:
    sizes = batch.cluster_sizes(among=~torch.isnan(batch.rewards))
    scaled = ips_rewards(
        batch.floored_rewards(), sizes, batch.outcomes(settings.ips_scope == "correct"), settings.ips_power
    )
    return std_normalised_advantages(scaled, STD_EPSILON)
