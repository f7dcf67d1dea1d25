"""The paper's baselines: Dr.GRPO advantages and the GRPO+DIV reward bonus."""

from __future__ import annotations

import torch
from torch import Tensor

from ..constants import DEGENERATE_CLUSTER_ID


def group_relative_advantages(rewards: Tensor) -> Tensor:
    """Dr.GRPO: A_i = r_i - mean_j r_j over the group's scorable rollouts, no std scaling; NaN rewards get 0."""
    return torch.nan_to_num(rewards - torch.nanmean(rewards, dim=1, keepdim=True), nan=0.0)


def std_normalised_advantages(rewards: Tensor, epsilon: float) -> Tensor:
    """GRPO's advantage as the literature's methods take it: (r_i - mean r) / (std r + epsilon) over each group's
    scorable rollouts (std unbiased, as torch's and TRL's), 0 for NaN rewards and for a group with fewer than two
    scorable rollouts (which has no spread to divide by). ``epsilon``: the method's own (TRL's is 1e-4)."""
    scored = ~torch.isnan(rewards)
    count = scored.sum(1, keepdim=True)
    values = rewards.to(torch.float64)
    centred = group_relative_advantages(values)
    std = torch.sqrt((centred**2).sum(1, keepdim=True) / (count - 1).clamp(min=1))
    out = centred / (std + epsilon)
    return out.masked_fill(~scored | (count < 2), 0.0)


def diversity_bonus(
    cluster_ids: Tensor, coefficient: float, degenerate_cluster_id: int = DEGENERATE_CLUSTER_ID
) -> Tensor:
    """GRPO+DIV: lambda * (N / |cluster(y)| - 1) / (N - 1) for [G, N] labels; degenerate rollouts get no bonus.

    A rollout alone in its cluster earns lambda, one in a cluster holding the whole group earns 0.
    """
    n = cluster_ids.shape[1]
    same = cluster_ids.unsqueeze(2) == cluster_ids.unsqueeze(1)
    cluster_size = same.sum(2).to(torch.float64)
    bonus = coefficient * (n / cluster_size - 1) / max(n - 1, 1)
    return bonus.masked_fill(cluster_ids == degenerate_cluster_id, 0.0)
