"""UCPO, Uniform-Correct Policy Optimization (Lochab, Li and Zhang 2026, arXiv 2605.00365), as its released scripts
run it (``algorithm.adv_estimator=iq``, ``tau=0.2``, ``alpha=0``): GRPO's advantage, with the correct rollouts' share
of it redistributed towards the ones the policy finds least likely, their total kept.

For a group with at least two correct rollouts (n_c of them):

    l_i = (summed log-prob_i) / (length_i)                  the mean token log-probability under the sampler
    q   = softmax(l) over the correct rollouts               (each q_i clamped at 1e-6)
    w_i = (1 - tau) / n_c + tau q_i^-1 / sum_j q_j^-1
    A_i = A_base n_c w_i                                    for each correct rollout

with A_base GRPO's advantage (r - mean) / (std + 1e-8) of the group's first correct rollout (with binary rewards
every correct rollout has it); wrong rollouts keep GRPO's advantage. tau = 0 is GRPO, tau = 1 makes the advantage
proportional to 1/q. It reads each completion's sampling log-probability and length (``reads_logprobs``) and owns
its normalisation (``owns_scaling``).

- **Paper and code.** The repository holds six estimators; its scripts run ``iq``, implemented here. Its GRPO
  epsilon is 1e-8 (kept). It counts a rollout correct when its reward is > 0; this counts rewards at or above the
  run's ``correct_reward_threshold`` (the same for 0/1 rewards at the default threshold). The paper presents the
  method as a conditional uniformity penalty on the correct set's distribution; the released estimator is the
  inverse-q redistribution above.

    trainer: ucpo
    ucpo_tau: 0.2
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch

from ..advantages import std_normalised_advantages
from .base import SetBatch, advantage_method
from .papers import UCPO_PAPER

UCPO_EPSILON = 1e-8  # the released code's GRPO epsilon
Q_FLOOR = 1e-6  # the released code's clamp of q before 1/q


@dataclass
class UCPOSettings:
    """UCPO's interpolation between GRPO and the full inverse-q correction."""

    ucpo_tau: float = field(
        default=0.2,
        metadata={
            "help": "tau in [0, 1]: 0 is GRPO, 1 gives the correct rollouts advantages proportional to 1/q (q: the "
            "softmax of their mean token log-probabilities). Paper: 0.2 (the released scripts)."
        },
    )

    def check(self) -> None:
        if not 0 <= self.ucpo_tau <= 1:
            raise ValueError(f"ucpo_tau={self.ucpo_tau}: tau interpolates within [0, 1] (the scripts use 0.2).")


def ucpo_advantages(
    rewards: torch.Tensor, logprobs: torch.Tensor, lengths: torch.Tensor, threshold: float, tau: float
) -> torch.Tensor:
    """[G, N] UCPO advantages of ``rewards`` with each completion's summed log-probability and length."""
    advantages = std_normalised_advantages(rewards, UCPO_EPSILON)
    correct = (rewards >= threshold) & ~torch.isnan(rewards)
    for g in range(rewards.shape[0]):
        rows = correct[g].nonzero().squeeze(1)
        n_c = rows.numel()
        if n_c < 2:
            continue
        mean_logp = logprobs[g, rows].to(torch.float64) / lengths[g, rows].to(torch.float64).clamp(min=1)
        q = torch.softmax(mean_logp, dim=0).clamp(min=Q_FLOOR)
        inverse = 1.0 / q
        weights = (1 - tau) / n_c + tau * inverse / inverse.sum()
        advantages[g, rows] = advantages[g, rows[0]] * weights * n_c
    return advantages


@advantage_method(
    "ucpo",
    needs_judge=False,
    settings=UCPOSettings,
    label="UCPO",
    describe=lambda s: (
        f"- UCPO: GRPO's advantage redistributed over the correct rollouts by 1/q, tau = {s.ucpo_tau:g} "
        "(Lochab et al. 2026, the released iq estimator)."
    ),
    tags=("ucpo",),
    paper=UCPO_PAPER,
    reads_logprobs=True,
    owns_scaling=True,
)
def ucpo(batch: SetBatch, settings: UCPOSettings) -> torch.Tensor:
    logprobs, lengths = batch.logprobs_for("ucpo")
    return ucpo_advantages(batch.rewards, logprobs, lengths, batch.correct_reward_threshold, settings.ucpo_tau)
