"""DARLING (Li et al. 2025, arXiv 2509.02534, "Jointly Reinforcing Diversity and Quality in Language Model
Generations"): each rollout's reward times its group diversity, then GRPO's advantage without the std,

    div_i = max((N - |C(i)|) / (N - 1), 0.1),    A_i = r_i div_i - mean_j r_j div_j,

with C(i) the equivalence class of rollout i in a partition of its group. As the official code
(``facebookresearch/darling``: ``partition_reward_vllm_serve.partition``, ``reward_model.multiplicative``, the math
recipe's ``norm_adv_by_std_in_grpo=False``) computes it.

- **The partition.** The official code asks a trained classifier whether each pair of rollouts is "the same" and
  closes the classes by union-find. Here the classes are the run's judge's clusters: a judge that labels groups is a
  partition already (the same rollouts, the same ids), so union-find has nothing to add. Degenerate rollouts share
  the degenerate id and so form one class, as a classifier that calls two empty answers "the same" would.
- **The floor of 0.1** (``darling_min_diversity``) is the code's: a rollout whose class is the whole group still
  earns a tenth of its reward. The paper writes the diversity without it.
- **Signed rewards** are read from the run's floor (``reads_floor``): DARLING multiplies them.
- **Scaling** is the method's own (``owns_scaling``): the official recipe trains without the std.
- A group of one has no other rollout to differ from: its advantage is 0.

    trainer: darling
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch

from .base import SetBatch, advantage_method
from .papers import DARLING_PAPER


@dataclass
class DarlingSettings:
    """DARLING's one number: the floor of a rollout's diversity."""

    darling_min_diversity: float = field(
        default=0.1,
        metadata={"help": "The floor of div_i = (N - |C(i)|) / (N - 1). The official code: 0.1; the paper: none (0)."},
    )

    def check(self) -> None:
        if not 0 <= self.darling_min_diversity <= 1:
            raise ValueError(f"darling_min_diversity must be in [0, 1], got {self.darling_min_diversity}.")


def darling_diversity(cluster_sizes: torch.Tensor, min_diversity: float = 0.1) -> torch.Tensor:
    """max((N - |C(i)|) / (N - 1), min_diversity) of each rollout, from the class sizes |C(i)| [G, N]
    (``SetBatch.cluster_sizes``); 0 in a group of one."""
    size = cluster_sizes.shape[1]
    if size < 2:
        return torch.zeros(cluster_sizes.shape, dtype=torch.float64)
    return ((size - cluster_sizes.to(torch.float64)) / (size - 1)).clamp(min=min_diversity)


def darling_advantages(rewards: torch.Tensor, diversity: torch.Tensor) -> torch.Tensor:
    """r_i div_i minus its group's mean [G, N] (NaN rewards: left out of the mean, advantage 0)."""
    shaped = rewards.to(torch.float64) * diversity
    return torch.nan_to_num(shaped - torch.nanmean(shaped, dim=1, keepdim=True), nan=0.0)


@advantage_method(
    "darling",
    settings=DarlingSettings,
    label="DARLING",
    describe=lambda s: (
        f"- DARLING: reward x max((N - |C(i)|) / (N - 1), {s.darling_min_diversity:g}), minus the group's mean "
        "(Li et al. 2025), the classes the judge's clusters."
    ),
    tags=("darling",),
    paper=DARLING_PAPER,
    reads_floor=True,
    owns_scaling=True,
)
def darling(batch: SetBatch, settings: DarlingSettings) -> tuple[torch.Tensor, dict[str, float]]:
    """[G, N] advantages of the floored rewards times the judge's partition's diversity."""
    diversity = darling_diversity(batch.cluster_sizes(), settings.darling_min_diversity)
    return darling_advantages(batch.floored_rewards(), diversity), {"diversity_mean": float(diversity.mean())}
