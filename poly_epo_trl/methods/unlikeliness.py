"""Unlikeliness reward (He, Fried and Welleck 2025, arXiv 2506.02355), as their official code does it
(``ray_lean_trainer._compute_advantages``, ``rank_penalty`` 0.25 in their script): each reward is lowered by how
likely its rollout is within the group, then GRPO's std-normalised advantage is taken,

    r'_i = r_i (1 - beta rank_i / N),     A_i = (r'_i - mean r') / (std(r') + 1e-6),

rank_i in 0..N-1 the place of rollout i when the group's rollouts are sorted by their mean token log-probability
under the sampling policy, increasingly: rank 0 is the least likely rollout, which keeps its whole reward. All
rollouts are ranked, wrong ones included, as the code does (with 0/1 rewards a wrong rollout's factor changes
nothing; the ranks of the correct ones are their places among all). Ties keep the group's order.

It reads each completion's sampling log-probability and length (``reads_logprobs``), multiplies rewards (it reads
them from the run's reward floor: a negative reward times a smaller factor would be a bonus, ``reads_floor``) and
owns its normalisation (``owns_scaling``). Unscored rollouts are left out of the ranks and get 0. A group of one gets
0 (the code gives its reward over 1 + 1e-6; a training group always has two or more).

    trainer: unlikeliness
    unlikeliness_beta: 0.25
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch

from ..advantages import std_normalised_advantages
from .base import SetBatch, advantage_method
from .papers import UNLIKELINESS_PAPER

UNLIKELINESS_EPSILON = 1e-6  # the official code's GRPO epsilon


@dataclass
class UnlikelinessSettings:
    """The unlikeliness reward's strength."""

    unlikeliness_beta: float = field(
        default=0.25,
        metadata={
            "help": "beta: the most likely of N rollouts keeps 1 - beta (N - 1) / N of its reward, the least likely "
            "all of it. Paper: 0.25 (the official scripts' rank_penalty)."
        },
    )

    def check(self) -> None:
        if not 0 <= self.unlikeliness_beta <= 1:
            raise ValueError(
                f"unlikeliness_beta={self.unlikeliness_beta}: within [0, 1] (1 takes a likely rollout's reward "
                "towards 0; the paper uses 0.25)."
            )


def likelihood_ranks(mean_logprobs: torch.Tensor, scored: torch.Tensor) -> torch.Tensor:
    """Each scored rollout's place [G, N] among its group's scored ones sorted by ``mean_logprobs`` increasingly
    (0: the least likely; ties keep the group's order); unscored ones get 0."""
    ranks = torch.zeros(mean_logprobs.shape, dtype=torch.float64)
    for g in range(mean_logprobs.shape[0]):
        rows = scored[g].nonzero().squeeze(1)
        order = torch.sort(mean_logprobs[g, rows], stable=True).indices
        ranks[g, rows[order]] = torch.arange(rows.numel(), dtype=torch.float64)
    return ranks


def unlikeliness_advantages(
    rewards: torch.Tensor, logprobs: torch.Tensor, lengths: torch.Tensor, beta: float
) -> torch.Tensor:
    """[G, N] unlikeliness advantages of ``rewards`` (already read from the floor) with each completion's summed
    log-probability and length."""
    scored = ~torch.isnan(rewards)
    mean_logprobs = logprobs.to(torch.float64) / lengths.to(torch.float64).clamp(min=1)
    n = scored.sum(1, keepdim=True).to(torch.float64)
    factor = 1 - beta * likelihood_ranks(mean_logprobs, scored) / n.clamp(min=1)
    return std_normalised_advantages(rewards.to(torch.float64) * factor, UNLIKELINESS_EPSILON)


@advantage_method(
    "unlikeliness",
    needs_judge=False,
    settings=UnlikelinessSettings,
    label="Unlikeliness reward",
    describe=lambda s: (
        f"- Unlikeliness reward: r (1 - {s.unlikeliness_beta:g} rank / N), then GRPO's advantage (He et al. 2025)."
    ),
    tags=("unlikeliness",),
    paper=UNLIKELINESS_PAPER,
    reads_floor=True,
    reads_logprobs=True,
    owns_scaling=True,
)
def unlikeliness(batch: SetBatch, settings: UnlikelinessSettings) -> torch.Tensor:
    logprobs, lengths = batch.logprobs_for("unlikeliness")
    return unlikeliness_advantages(batch.floored_rewards(), logprobs, lengths, settings.unlikeliness_beta)
