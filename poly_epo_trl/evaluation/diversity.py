"""Strategy-diversity statistics of groups of rollouts."""

from __future__ import annotations

import torch
from torch import Tensor

from ..constants import DEGENERATE_CLUSTER_ID


def distinct_per_group(
    cluster_ids: Tensor, mask: Tensor | None = None, degenerate_cluster_id: int = DEGENERATE_CLUSTER_ID
) -> Tensor:
    """Number of distinct non-degenerate clusters in each row of [G, N] ids, counting only where ``mask`` holds."""
    keep = cluster_ids != degenerate_cluster_id
    if mask is not None:
        keep = keep & mask
    same = cluster_ids.unsqueeze(2) == cluster_ids.unsqueeze(1)  # [G, N, N]
    earlier = torch.ones_like(same[0], dtype=torch.bool).tril(-1)  # j < i
    seen_before = (same & earlier & keep.unsqueeze(1)).any(2)
    return (keep & ~seen_before).sum(1)


def group_diversity_metrics(
    rewards: Tensor,
    cluster_ids: Tensor,
    correct_reward_threshold: float = 1.0,
    degenerate_cluster_id: int = DEGENERATE_CLUSTER_ID,
) -> dict[str, float]:
    """Mean over groups of: distinct clusters, distinct clusters among correct rollouts, degenerate fraction."""
    correct = rewards >= correct_reward_threshold  # NaN compares False
    return {
        "distinct_clusters": distinct_per_group(cluster_ids, None, degenerate_cluster_id).float().mean().item(),
        "distinct_correct_clusters": distinct_per_group(cluster_ids, correct, degenerate_cluster_id)
        .float()
        .mean()
        .item(),
        "degenerate_frac": (cluster_ids == degenerate_cluster_id).float().mean().item(),
    }


def correct_clusters(
    rewards: Tensor,
    cluster_ids: Tensor,
    correct_reward_threshold: float = 1.0,
    degenerate_cluster_id: int = DEGENERATE_CLUSTER_ID,
) -> Tensor:
    """[G, N] bools: whether each rollout's cluster counts as correct (``distinct_correct_clusters`` counts it): not
    degenerate, and holding a rollout of its group whose reward is at least the threshold."""
    correct = rewards >= correct_reward_threshold  # NaN compares False
    same = cluster_ids.unsqueeze(2) == cluster_ids.unsqueeze(1)  # [G, N, N]
    return (same & correct.unsqueeze(1)).any(2) & (cluster_ids != degenerate_cluster_id)
